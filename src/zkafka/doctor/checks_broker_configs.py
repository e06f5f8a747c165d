"""Brokers whose configs disagree on what must be the same across a ZooKeeper-mode Kafka cluster,
checked from each live broker's DescribeConfigs (resource type BROKER) when the doctor is given
`--bootstrap-server`.

Which settings, and why each matters, is `CLUSTER_WIDE` below. Most are warnings: the cluster
works, but what a client gets depends on which broker answers (a topic auto-created or not, with
one replication factor or another; a record accepted or refused for its size) or on which broker
is the controller. Critical are the disagreements under which the cluster misbehaves: ACLs
enforced by some brokers only (`authorizer.class.name`, `allow.everyone.if.no.acl.found`),
znodes created with ACLs some brokers cannot use (`zookeeper.set.acl`), and a broker whose
inter-broker SASL mechanism another broker does not enable (it cannot connect there: no
replication, no controller requests). `inter.broker.protocol.version` and
`log.message.format.version` differ for a while during a rolling upgrade, so they are warnings.

Deliberately not checked:
- `replica.fetch.max.bytes` below another broker's `message.max.bytes`: since KIP-74 a fetch
  returns the first batch even when it is larger than the limit, so followers never stall on it
  and Kafka does not warn either;
- `broker.rack` on some brokers only: already found from the registrations (`checks_configs`);
- the `zookeeper.connect` chroot: a broker under another chroot is not in this cluster's
  `/brokers/ids` at all, so it is never asked;
- per-listener overrides (`listener.name.<l>.sasl.enabled.mechanisms`): the brokers describe the
  top-level keys only.

Sensitive values are never printed: a setting a broker describes as sensitive is not compared.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from zkafka.config.listeners import parse_protocol_map
from zkafka.doctor.findings import Finding, Severity


@dataclass(frozen=True, slots=True)
class BrokerSetting:
    """One key of one broker's DescribeConfigs."""

    value: str | None
    dynamic: bool = False
    """Changeable at run time (DescribeConfigs: not read-only)."""
    override: bool = False
    """Set for this broker alone in `/config/brokers/<id>` (source DYNAMIC_BROKER_CONFIG)."""
    sensitive: bool = False


BrokerConfigs = Mapping[int, Mapping[str, BrokerSetting]]
"""broker id -> key -> its setting there."""


@dataclass(frozen=True, slots=True)
class ClusterWide:
    key: str
    severity: Severity
    why: str
    """What goes wrong while the brokers disagree."""
    kind: str = "text"
    """How values compare: `text`, `bool` (case-insensitive) or `list` (order-insensitive)."""
    with_authorizer: bool = False
    """Only matters when some broker has an authorizer."""


_W, _C = Severity.WARNING, Severity.CRITICAL

CLUSTER_WIDE: tuple[ClusterWide, ...] = (
    ClusterWide(
        "inter.broker.protocol.version",
        _W,
        "the brokers speak different inter-broker protocol versions; fine only for the length of a "
        "rolling upgrade (finish it: every broker on the new version, then one more rolling restart)",
    ),
    ClusterWide(
        "log.message.format.version",
        _W,
        "replicas of one partition may write different record formats, and consumers may get "
        "records down-converted by some leaders only; fine only during a rolling upgrade",
    ),
    ClusterWide(
        "zookeeper.set.acl",
        _C,
        "brokers with it create znodes only authenticated brokers may change; the others cannot "
        "update partition state, configs or admin requests there",
        kind="bool",
    ),
    ClusterWide(
        "authorizer.class.name",
        _C,
        "ACLs are enforced by some brokers only: a client refused by one is served by another",
    ),
    ClusterWide(
        "allow.everyone.if.no.acl.found",
        _C,
        "resources without ACLs are open on some brokers and closed on others",
        kind="bool",
        with_authorizer=True,
    ),
    ClusterWide(
        "super.users",
        _W,
        "a principal is a super user on some brokers only",
        with_authorizer=True,
    ),
    ClusterWide(
        "delete.topic.enable",
        _W,
        "whether a topic deletion proceeds depends on which broker is the controller",
        kind="bool",
    ),
    ClusterWide(
        "auto.create.topics.enable",
        _W,
        "whether a produce or metadata request for an unknown topic creates it depends on the broker asked",
        kind="bool",
    ),
    ClusterWide(
        "unclean.leader.election.enable",
        _W,
        "whether an out-of-sync replica may become leader (losing records) depends on which "
        "broker is the controller",
        kind="bool",
    ),
    ClusterWide(
        "default.replication.factor",
        _W,
        "auto-created topics get a replication factor that depends on the broker asked",
    ),
    ClusterWide(
        "num.partitions",
        _W,
        "auto-created topics get a partition count that depends on the broker asked",
    ),
    ClusterWide(
        "min.insync.replicas",
        _W,
        "acks=all producers need a number of in-sync replicas that depends on the partition's "
        "leader (topics without their own min.insync.replicas)",
    ),
    ClusterWide(
        "message.max.bytes",
        _W,
        "a batch accepted by one leader is refused by another (MESSAGE_TOO_LARGE): what a producer "
        "may send depends on where the partition's leader is",
    ),
    ClusterWide(
        "log.cleanup.policy",
        _W,
        "replicas of one topic without its own cleanup.policy are compacted on some brokers and "
        "deleted by retention on others",
        kind="list",
    ),
    ClusterWide(
        "offsets.topic.replication.factor",
        _W,
        "__consumer_offsets is created with the replication factor of whichever broker creates it",
    ),
    ClusterWide(
        "offsets.topic.num.partitions",
        _W,
        "__consumer_offsets is created with the partition count of whichever broker creates it",
    ),
    ClusterWide(
        "transaction.state.log.replication.factor",
        _W,
        "__transaction_state is created with the replication factor of whichever broker creates it",
    ),
    ClusterWide(
        "transaction.state.log.num.partitions",
        _W,
        "__transaction_state is created with the partition count of whichever broker creates it",
    ),
    ClusterWide(
        "transaction.state.log.min.isr",
        _W,
        "transaction markers and state need a number of in-sync replicas that depends on the "
        "broker that creates __transaction_state",
    ),
)

INTER_BROKER_LISTENER = "inter.broker.listener.name"
_INTER_BROKER_KEYS = (
    INTER_BROKER_LISTENER,
    "security.inter.broker.protocol",
    "listener.security.protocol.map",
    "sasl.enabled.mechanisms",
    "sasl.mechanism.inter.broker.protocol",
)

CONFIG_KEYS: tuple[str, ...] = tuple(r.key for r in CLUSTER_WIDE) + _INTER_BROKER_KEYS
"""Every key this check reads: what the doctor asks each broker for."""

UNSET = "(unset)"


def check_broker_configs(configs: BrokerConfigs) -> Iterator[Finding]:
    """Pure: the findings for what the brokers described (only the brokers that answered)."""
    if len(configs) < 2:
        return
    authorizer = any(_text(c, "authorizer.class.name") for c in configs.values())
    for rule in CLUSTER_WIDE:
        if rule.with_authorizer and not authorizer:
            continue
        yield from _disagreement(configs, rule)
    yield from _inter_broker_listener(configs)
    yield from _inter_broker_sasl(configs)


def _disagreement(configs: BrokerConfigs, rule: ClusterWide) -> Iterator[Finding]:
    shown: dict[int, str] = {}
    compared: dict[int, object] = {}
    for broker, settings in sorted(configs.items()):
        setting = settings.get(rule.key)
        if setting is None or setting.sensitive:
            continue  # not described (an older broker), or a secret: never compared, never printed
        shown[broker] = setting.value or UNSET
        compared[broker] = _normal(setting.value, rule.kind)
    if len(set(compared.values())) < 2:
        return
    values = ", ".join(f"broker {b}={v}" for b, v in shown.items())
    yield Finding(
        rule.severity,
        "broker-config-disagrees",
        rule.key,
        f"the brokers disagree on {rule.key} ({values}): {rule.why}",
        _fix(configs, rule.key, shown, compared),
    )


def _normal(value: str | None, kind: str) -> object:
    text = (value or "").strip()
    if kind == "bool":
        return text.lower()
    if kind == "list":
        return frozenset(v.strip() for v in text.split(",") if v.strip())
    return text


def _fix(configs: BrokerConfigs, key: str, shown: dict[int, str], compared: dict[int, object]) -> str:
    counts = Counter(compared.values()).most_common()
    if counts[0][1] == counts[1][1]:  # no majority: the operator chooses
        return f"choose one {key} and set it on every broker"
    majority = counts[0][0]
    odd = sorted(b for b, v in compared.items() if v != majority)
    want = next(shown[b] for b, v in compared.items() if v == majority)
    names = ", ".join(str(b) for b in odd)
    if not all(configs[b][key].dynamic for b in compared):
        return (
            f"set {key}={want} in the server.properties of broker(s) {names} and restart them one at a time"
        )
    fixes = []
    for b in odd:
        if configs[b][key].override:  # its own /config/brokers/<id> makes it differ
            fixes.append(
                f"zkafka configs --bootstrap-server B --entity-type brokers --entity-name {b} --alter "
                f"--delete-config {key}"
            )
        else:
            fixes.append(
                f"zkafka configs --bootstrap-server B --entity-type brokers --entity-name {b} --alter "
                f"--add-config {key}={want}"
            )
    if all(configs[b][key].override for b in odd):  # removing the odd overrides is the whole fix
        return "; ".join(fixes)
    return "; ".join(fixes) + f" (or for all at once: --entity-default --add-config {key}={want})"


def _text(settings: Mapping[str, BrokerSetting], key: str) -> str:
    setting = settings.get(key)
    return "" if setting is None or setting.sensitive else (setting.value or "").strip()


def _listener(settings: Mapping[str, BrokerSetting]) -> str:
    """The listener the broker connects to the others on: inter.broker.listener.name, else the
    listener named like security.inter.broker.protocol (Kafka's rule)."""
    named = _text(settings, INTER_BROKER_LISTENER)
    return (named or _text(settings, "security.inter.broker.protocol")).upper()


def _protocol(settings: Mapping[str, BrokerSetting]) -> str:
    listener = _listener(settings)
    try:
        mapping = parse_protocol_map(_text(settings, "listener.security.protocol.map"))
    except ValueError:
        mapping = {}
    return mapping.get(listener, listener)


def _inter_broker_listener(configs: BrokerConfigs) -> Iterator[Finding]:
    listeners = {b: _listener(s) for b, s in sorted(configs.items())}
    if len(set(listeners.values())) < 2:
        return
    values = ", ".join(f"broker {b}={v or UNSET}" for b, v in listeners.items())
    majority = Counter(listeners.values()).most_common(1)[0][0]
    yield Finding(
        Severity.WARNING,
        "broker-config-disagrees",
        INTER_BROKER_LISTENER,
        f"the brokers replicate over different listeners ({values}); a broker that lacks another's "
        "inter-broker listener cannot be reached by it, and the controller uses its own",
        f"set inter.broker.listener.name={majority} (or the matching security.inter.broker.protocol) "
        "in every broker's server.properties and restart them one at a time",
    )


def _inter_broker_sasl(configs: BrokerConfigs) -> Iterator[Finding]:
    """A broker connects to every other with its own inter-broker SASL mechanism, which each of
    them must enable; otherwise it cannot reach them at all."""
    enabled = {
        b: {m.strip().upper() for m in _text(s, "sasl.enabled.mechanisms").split(",") if m.strip()}
        for b, s in configs.items()
    }
    for broker, settings in sorted(configs.items()):
        if not _protocol(settings).startswith("SASL_"):
            continue
        mechanism = _text(settings, "sasl.mechanism.inter.broker.protocol").upper()
        refusing = sorted(b for b in configs if b != broker and mechanism and mechanism not in enabled[b])
        if not refusing:
            continue
        names = ", ".join(str(b) for b in refusing)
        yield Finding(
            Severity.CRITICAL,
            "broker-sasl-mechanism-not-enabled",
            f"broker {broker}",
            f"broker {broker} authenticates to the other brokers with {mechanism} "
            f"(sasl.mechanism.inter.broker.protocol), which broker(s) {names} do not enable "
            "(sasl.enabled.mechanisms): it cannot replicate from them or send them controller requests",
            f"add {mechanism} to sasl.enabled.mechanisms on broker(s) {names} (with its JAAS login), or "
            f"set broker {broker}'s sasl.mechanism.inter.broker.protocol to one they enable; restart "
            "one broker at a time",
        )
