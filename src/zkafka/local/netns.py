"""A private network for a local cluster: every broker in its own Linux network namespace, joined
to the root namespace by a veth pair on one bridge, so a chaos run can cut a broker's link for
real (`zkafka cluster up --netns`, the `partition` fault of `zkafka chaos`).

    root namespace                     namespace zkafka-<tag>-b<N>
    bridge zk<tag>br  10.213.S.1/24 ── veth zk<tag>h<N> ══ eth0  10.213.S.<10+N>/24

ZooKeeper (and the clients) stay in the root namespace and reach the brokers over the bridge;
ZooKeeper listens on the bridge address. Addresses are taken from 10.213.0.0/16, a /24 no address
or route on this machine uses yet: nothing leaves the machine (no default route in the
namespaces, no forwarding). `cut` takes a broker's end of the link down (every packet to and from
it is dropped: ZooKeeper, the other brokers, the clients), `heal` brings it up again.

Needs Linux, root and iproute2's `ip` (`available()` says why not). Everything made here is
named after one random tag and recorded (`to_json`), so `remove` (also from another process,
`LocalCluster.down`) deletes it all.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

PREFIX = "10.213"
"""The /16 the networks' /24s are taken from (private, RFC 1918)."""
MAX_BROKER_ID = 240
"""A broker's host number is 10 + its id: ids above this have no address in the /24."""


class NetnsError(RuntimeError):
    """The namespaces could not be made (not Linux, not root, no `ip`, an `ip` command failed)."""


def available() -> str | None:
    """None when namespaces can be made here, else why not (for a clear refusal or a skip)."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (run as root)"
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's `ip` command"
    return None


def _ip(*args: str, netns: str = "") -> str:
    cmd = ["ip", "netns", "exec", netns, "ip", *args] if netns else ["ip", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _used_subnets() -> set[str]:
    """The 10.213.S prefixes any address or route of the root namespace is in."""
    used = set()
    for line in (_ip("-o", "-4", "addr") + _ip("-4", "route")).splitlines():
        for word in line.replace("/", " ").split():
            if word.startswith(PREFIX + "."):
                used.add(".".join(word.split(".")[:3]))
    return used


@dataclass
class BrokerNetwork:
    tag: str
    subnet: str
    """The first three octets, e.g. `10.213.7`."""
    brokers: list[int] = field(default_factory=list)

    # -- names and addresses ---------------------------------------------------------------------
    @property
    def bridge(self) -> str:
        return f"zk{self.tag}br"

    @property
    def gateway(self) -> str:
        """The bridge's address in the root namespace: where ZooKeeper listens."""
        return f"{self.subnet}.1"

    def namespace(self, broker_id: int) -> str:
        return f"zkafka-{self.tag}-b{broker_id}"

    def host_veth(self, broker_id: int) -> str:
        return f"zk{self.tag}h{broker_id}"

    def address(self, broker_id: int) -> str:
        if not 0 <= broker_id <= MAX_BROKER_ID:
            raise NetnsError(f"broker id {broker_id}: namespaced brokers need ids 0..{MAX_BROKER_ID}")
        return f"{self.subnet}.{10 + broker_id}"

    def exec_prefix(self, broker_id: int) -> list[str]:
        """What runs a command inside the broker's namespace (`ip netns exec` execs it: same pid)."""
        return ["ip", "netns", "exec", self.namespace(broker_id)]

    # -- lifecycle ---------------------------------------------------------------------------------
    @classmethod
    def create(cls) -> BrokerNetwork:
        """A bridge on a free 10.213.S.0/24 in the root namespace (no brokers yet)."""
        reason = available()
        if reason:
            raise NetnsError(reason)
        used = _used_subnets()
        free = [s for s in (f"{PREFIX}.{i}" for i in range(1, 255)) if s not in used]
        if not free:
            raise NetnsError(f"no free /24 left in {PREFIX}.0.0/16")
        net = cls(tag=secrets.token_hex(2), subnet=free[secrets.randbelow(len(free))])
        ipaddress.ip_address(net.gateway)  # a bad prefix would fail here, before any `ip` call
        try:
            _ip("link", "add", net.bridge, "type", "bridge")
            _ip("addr", "add", f"{net.gateway}/24", "dev", net.bridge)
            _ip("link", "set", net.bridge, "up")
        except BaseException:
            net.remove()
            raise
        return net

    def add_broker(self, broker_id: int) -> None:
        """The broker's namespace, with loopback up and `eth0` on the bridge at `address`."""
        ns, host, inner = self.namespace(broker_id), self.host_veth(broker_id), f"zk{self.tag}n{broker_id}"
        address = self.address(broker_id)
        self.brokers.append(broker_id)
        _ip("netns", "add", ns)
        _ip("link", "add", host, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("link", "set", host, "master", self.bridge)
        _ip("link", "set", host, "up")
        _ip("link", "set", "lo", "up", netns=ns)
        _ip("link", "set", inner, "name", "eth0", netns=ns)
        _ip("addr", "add", f"{address}/24", "dev", "eth0", netns=ns)
        _ip("link", "set", "eth0", "up", netns=ns)

    def cut(self, broker_id: int) -> None:
        """Drop every packet to and from the broker: its end of the link goes down."""
        _ip("link", "set", "eth0", "down", netns=self.namespace(broker_id))

    def heal(self, broker_id: int) -> None:
        _ip("link", "set", "eth0", "up", netns=self.namespace(broker_id))

    def is_cut(self, broker_id: int) -> bool:
        return "state DOWN" in _ip("-o", "link", "show", "eth0", netns=self.namespace(broker_id))

    def remove(self) -> None:
        """Delete the namespaces (their veths go with them) and the bridge; what is already gone
        is skipped. The brokers must have exited (a process keeps its namespace alive)."""
        errors = []
        for broker_id in self.brokers:
            for args in (
                ("link", "del", self.host_veth(broker_id)),
                ("netns", "del", self.namespace(broker_id)),
            ):
                try:
                    if _exists(args):
                        _ip(*args)
                except NetnsError as e:
                    errors.append(str(e))
        try:
            if _exists(("link", "del", self.bridge)):
                _ip("link", "del", self.bridge)
        except NetnsError as e:
            errors.append(str(e))
        if errors:
            raise NetnsError("; ".join(errors))

    # -- persistence ---------------------------------------------------------------------------------
    def to_json(self) -> dict[str, object]:
        return {"tag": self.tag, "subnet": self.subnet, "brokers": list(self.brokers)}

    @classmethod
    def from_json(cls, state: dict[str, object]) -> BrokerNetwork:
        brokers = state.get("brokers", [])
        assert isinstance(brokers, list)
        return cls(str(state["tag"]), str(state["subnet"]), [int(b) for b in brokers])


def _exists(args: tuple[str, ...]) -> bool:
    """Whether the link or namespace `args` would delete is there."""
    kind, _, name = args
    if kind == "netns":
        return name in _ip("netns", "list").split()
    done = subprocess.run(["ip", "link", "show", name], capture_output=True, timeout=30, check=False)
    return done.returncode == 0
