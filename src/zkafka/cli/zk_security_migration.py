"""`zkafka zookeeper-security-migration`: set the ACLs of every znode of an existing cluster, as Kafka's
zookeeper-security-migration does when a cluster turns `zookeeper.set.acl` on (or off):

    KAFKA_OPTS=-Djava.security.auth.login.config=/etc/kafka/jaas.conf \\
        zkafka zookeeper-security-migration --zookeeper.connect zk1:2181/kafka --zookeeper.acl secure

`secure` gives each znode below the connect string's chroot (and the chroot itself) the ACLs a broker
with `zookeeper.set.acl=true` creates it with (`zkafka.zk.znode_acls`: creator-all, world-read except
below `/config/users`, `/config/brokers` and `/delegation_token`; `/consumers` stays open); `unsecure`
opens them all to the world again. The creator is the digest user of the JAAS `Client` section
`KAFKA_OPTS` names (required for `secure`, as in Kafka); use the brokers' user, since they must keep
writing. ZooKeeper's own `/zookeeper` tree is left alone.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import TYPE_CHECKING

from kazoo.exceptions import NoAuthError, NoNodeError

from zkafka.cli.errors import CliError
from zkafka.cli.output import quiet_libraries

if TYPE_CHECKING:
    from zkafka.zk.session import ZkSession

SECURE, UNSECURE = "secure", "unsecure"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "zookeeper-security-migration",
        help="set or remove the ACLs of a cluster's znodes (like zookeeper-security-migration)",
        description="Set (secure) or remove (unsecure) the ACLs of every znode of the cluster.",
    )
    p.add_argument("--zookeeper.connect", dest="connect", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--zookeeper.acl", dest="acl", required=True, choices=(SECURE, UNSECURE))
    p.add_argument(
        "--zookeeper.session.timeout", dest="session_timeout", type=int, default=30000, metavar="MS"
    )
    p.add_argument(
        "--zookeeper.connection.timeout", dest="connection_timeout", type=int, default=30000, metavar="MS"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from zkafka.security.zookeeper_auth import ZooKeeperAuthError, zookeeper_credentials
    from zkafka.zk.errors import ZkConnectionError
    from zkafka.zk.session import ZkSession
    from zkafka.zk.znode_acls import default_acls

    secure = args.acl == SECURE
    try:
        auth = zookeeper_credentials()
    except ZooKeeperAuthError as e:
        raise CliError(str(e)) from None
    if secure and auth is None:
        raise CliError(
            "--zookeeper.acl secure needs ZooKeeper credentials: name a JAAS file with a Client section "
            "(org.apache.zookeeper.server.auth.DigestLoginModule username/password) in "
            "KAFKA_OPTS=-Djava.security.auth.login.config=<file>"
        )
    quiet_libraries()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No chroot path exists")
            zk = ZkSession(
                args.connect,
                session_timeout_ms=args.session_timeout,
                connection_timeout_ms=args.connection_timeout,
                create_chroot=False,
                auth=auth,
                secure_acls=secure,
            )
    except (ZkConnectionError, ValueError) as e:
        raise CliError(str(e)) from None
    changed, refused = 0, []
    try:
        if zk.exists("/") is None:
            raise CliError(f"no such ZooKeeper chroot in --zookeeper.connect={args.connect}")
        for path in _tree(zk, "/"):
            try:
                zk.call(zk.kazoo.set_acls, path, default_acls(path, secure))
                changed += 1
            except NoNodeError:
                continue  # gone meanwhile (a notification consumed, a broker stopped)
            except NoAuthError:
                refused.append(path)
    finally:
        zk.close()
    print(f"Set {args.acl} ACLs on {changed} znodes of {args.connect}.", file=sys.stderr)
    if refused:
        shown = ", ".join(refused[:5]) + (" ..." if len(refused) > 5 else "")
        raise CliError(
            f"not allowed to change the ACLs of {len(refused)} znodes ({shown}): wrong credentials?"
        )
    return 0


def _tree(zk: ZkSession, path: str) -> list[str]:
    """`path` and its descendants, parents first, without ZooKeeper's own `/zookeeper`."""
    if path == "/zookeeper" and not zk.connect_string.chroot:
        return []
    out = [path]
    try:
        children = zk.call(zk.kazoo.get_children, path)
    except (NoNodeError, NoAuthError):
        return out
    for child in sorted(children):
        out.extend(_tree(zk, f"{path.rstrip('/')}/{child}"))
    return out
