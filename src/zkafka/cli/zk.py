"""`zkafka zk ls|get|tree|rm PATH --zookeeper HOST:PORT[/chroot]`: browse Kafka's znodes, like
ZooKeeper's zookeeper-shell.

* `ls PATH`: child names, one per line, sorted;
* `get PATH [--stat]`: the data, pretty-printed when it is JSON, as text otherwise, `--stat` adds the
  znode's stat in zookeeper-shell's format;
* `tree [PATH] [--max-depth N] [--max-children N]`: the subtree with a one-line summary of every
  znode's data; a znode with more than --max-children children (`__consumer_offsets`' 50
  partitions, a long `/config/changes` queue) shows them as one line with their count;
* `rm PATH [--recursive]`: delete a znode (with `--recursive` also a non-empty one).

The connect string's chroot is never created here: browsing must not change anything.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from kazoo.exceptions import NoAuthError, NoNodeError, NotEmptyError, ZookeeperError
from kazoo.protocol.states import ZnodeStat

from zkafka.cli.errors import CliError
from zkafka.cli.output import quiet_libraries
from zkafka.cli.target import add_target_args
from zkafka.security.zookeeper_auth import zookeeper_credentials
from zkafka.zk.connect import parse_connect_string, validate_znode_path
from zkafka.zk.errors import ZkConnectionError
from zkafka.zk.json_codec import parse_json
from zkafka.zk.session import ZkSession

SUMMARY_WIDTH = 100


def _fail(message: str) -> NoReturn:
    raise CliError(message)


def register(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    add_target_args(
        common, bootstrap=None, zookeeper="ZooKeeper connect string, with the cluster's chroot if it has one"
    )
    common.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the connection (default 10)"
    )

    p = sub.add_parser("zk", help="browse Kafka's metadata in ZooKeeper (ls, get, tree, rm)")
    zk_sub = p.add_subparsers(dest="zk_command", metavar="COMMAND", required=True)

    ls = zk_sub.add_parser("ls", parents=[common], help="list the children of a znode")
    ls.add_argument("path")
    ls.set_defaults(func=_command(run_ls))

    get = zk_sub.add_parser("get", parents=[common], help="print a znode's data")
    get.add_argument("path")
    get.add_argument("--stat", action="store_true", help="also print the znode's stat")
    get.set_defaults(func=_command(run_get))

    tree = zk_sub.add_parser("tree", parents=[common], help="print a subtree with data summaries")
    tree.add_argument("path", nargs="?", default="/")
    tree.add_argument("--max-depth", type=int, default=None, help="stop descending below this depth")
    tree.add_argument(
        "--max-children",
        type=int,
        default=None,
        metavar="N",
        help="summarise the children of a znode that has more than N as one line with their count",
    )
    tree.set_defaults(func=_command(run_tree))

    rm = zk_sub.add_parser("rm", parents=[common], help="delete a znode")
    rm.add_argument("path")
    rm.add_argument("--recursive", "-r", action="store_true", help="also delete its children")
    rm.set_defaults(func=_command(run_rm))


def _command(fn: Callable[[ZkSession, argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            validate_znode_path(args.path)
        except ValueError as e:
            _fail(str(e))
        with _session(args) as zk:
            try:
                return fn(zk, args)
            except NoNodeError:
                _fail(f"node {args.path} does not exist{_under(zk)}")
            except NoAuthError:
                _fail(f"not authorized to access {args.path}{_under(zk)}")
            except ZookeeperError as e:
                _fail(f"ZooKeeper error on {args.path}: {type(e).__name__} {e}".rstrip())

    return run


@contextmanager
def _session(args: argparse.Namespace) -> Iterator[ZkSession]:
    try:
        parse_connect_string(args.zookeeper)
    except ValueError as e:
        _fail(f"bad --zookeeper: {e}")
    if args.timeout <= 0:
        _fail("--timeout must be positive")
    quiet_libraries()  # kazoo logs every failed connection attempt; our one-line error says the same
    try:
        with warnings.catch_warnings():
            # A missing chroot is reported per command ("node / does not exist (under chroot ...)").
            warnings.filterwarnings("ignore", message="No chroot path exists")
            timeout_ms = int(args.timeout * 1000)
            auth = zookeeper_credentials()
            zk = ZkSession(
                args.zookeeper,
                connection_timeout_ms=timeout_ms,
                create_chroot=False,
                auth=auth,
                secure_acls=auth is not None,
            )
    except (ZkConnectionError, ValueError) as e:
        _fail(str(e))
    try:
        yield zk
    finally:
        zk.close()


def _under(zk: ZkSession) -> str:
    chroot = zk.connect_string.chroot
    return f" (under chroot {chroot})" if chroot else ""


def _join(parent: str, child: str) -> str:
    return f"{parent.rstrip('/')}/{child}"


# -- commands --------------------------------------------------------------------------------------------


def run_ls(zk: ZkSession, args: argparse.Namespace) -> int:
    children = zk.get_children(args.path)
    if children is None:
        raise NoNodeError
    for name in sorted(children):
        print(name)
    return 0


def run_get(zk: ZkSession, args: argparse.Namespace) -> int:
    found = zk.get_data(args.path)
    if found is None:
        raise NoNodeError
    data, stat = found
    text = render_data(data, args.path)
    if text:
        print(text)
    if args.stat:
        print(format_stat(stat))
    return 0


def run_tree(zk: ZkSession, args: argparse.Namespace) -> int:
    found = zk.get_data(args.path)
    if found is None:
        raise NoNodeError
    if args.max_children is not None and args.max_children < 0:
        _fail("--max-children must be >= 0")
    print(f"{args.path}{_node_suffix(*found)}")
    for line in _tree_lines(zk, args.path, "", 1, args.max_depth, args.max_children):
        print(line)
    return 0


def run_rm(zk: ZkSession, args: argparse.Namespace) -> int:
    if args.path == "/":
        _fail(f"refusing to delete the root{_under(zk)}")
    try:
        if not zk.delete(args.path, recursive=args.recursive):
            raise NoNodeError
    except NotEmptyError:
        _fail(f"node {args.path} has children; use --recursive to delete them too")
    return 0


# -- rendering -------------------------------------------------------------------------------------------


def render_data(data: bytes, path: str) -> str:
    """Pretty JSON when the data is a JSON object or array, text otherwise, a byte count if binary."""
    if not data:
        return ""
    try:
        value = parse_json(data, path)
    except ValueError:
        value = None
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes of binary data: {data[:32].hex()}{'...' if len(data) > 32 else ''}>"


def summarize(data: bytes, width: int = SUMMARY_WIDTH) -> str:
    """One line for `tree`: the data as compact text, cut to `width` characters."""
    if not data:
        return ""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes>"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _node_suffix(data: bytes, stat: ZnodeStat) -> str:
    summary = summarize(data)
    marker = "  (ephemeral)" if stat.ephemeralOwner else ""
    return (f"  = {summary}" if summary else "") + marker


def _tree_lines(
    zk: ZkSession, path: str, prefix: str, depth: int, max_depth: int | None, max_children: int | None = None
) -> Iterator[str]:
    if max_depth is not None and depth > max_depth:
        return
    children = sorted(zk.get_children(path) or [], key=_natural)
    if max_children is not None and len(children) > max_children:
        yield f"{prefix}└── … {len(children)} children ({_span(children)}), not shown"
        return
    found = zk.get_data_many([_join(path, c) for c in children])
    for i, child in enumerate(children):
        child_path = _join(path, child)
        node = found[child_path]
        if node is None:
            continue  # deleted while we were looking
        last = i == len(children) - 1
        yield f"{prefix}{'└── ' if last else '├── '}{child}{_node_suffix(*node)}"
        yield from _tree_lines(
            zk, child_path, prefix + ("    " if last else "│   "), depth + 1, max_depth, max_children
        )


def _natural(name: str) -> tuple[int, int | str]:
    """Partition numbers in numeric order (0, 1, 2, ..., 10), names in text order after them."""
    return (0, int(name)) if name.isdigit() else (1, name)


def _span(names: list[str]) -> str:
    return f"{names[0]} … {names[-1]}" if len(names) > 2 else ", ".join(names)


def format_stat(stat: ZnodeStat) -> str:
    """The stat in zookeeper-shell's layout."""

    def when(ms: int) -> str:
        return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))

    return "\n".join(
        [
            f"cZxid = 0x{stat.czxid:x}",
            f"ctime = {when(stat.ctime)}",
            f"mZxid = 0x{stat.mzxid:x}",
            f"mtime = {when(stat.mtime)}",
            f"pZxid = 0x{stat.pzxid:x}",
            f"cversion = {stat.cversion}",
            f"dataVersion = {stat.version}",
            f"aclVersion = {stat.aversion}",
            f"ephemeralOwner = 0x{stat.ephemeralOwner:x}",
            f"dataLength = {stat.dataLength}",
            f"numChildren = {stat.numChildren}",
        ]
    )
