"""One znode of the raw ZooKeeper tree, read-only: its data (as text when it is UTF-8, else hex),
its stat and its children, for `/zookeeper?path=...`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from zkafka.console.errors import ConsoleError
from zkafka.console.source import ClusterSource

MAX_PATH = 1024
SHOWN_BYTES = 64 * 1024
"""ZooKeeper's jute.maxbuffer is 1 MiB by default; a page shows the first 64 KiB."""
MAX_CHILDREN = 5000


@dataclass(frozen=True, slots=True)
class ZnodePage:
    path: str
    data: str
    binary: bool
    size: int
    stat: dict[str, str]
    children: list[str]
    more_children: int
    crumbs: list[tuple[str, str]]
    """(name, path) of each ancestor and the node itself, for the breadcrumb links."""


def check_path(path: str) -> str:
    """A znode path as ZooKeeper accepts it, or a 400 page saying what is wrong."""
    if len(path) > MAX_PATH:
        raise ConsoleError(400, f"a znode path is at most {MAX_PATH} characters")
    if not path.startswith("/"):
        raise ConsoleError(400, f"a znode path starts with '/': {path!r}")
    if path != "/" and (path.endswith("/") or "//" in path):
        raise ConsoleError(400, f"a znode path has no empty parts: {path!r}")
    if any(part in (".", "..") for part in path.split("/")) or "\x00" in path:
        raise ConsoleError(400, f"a znode path has no '.', '..' or NUL parts: {path!r}")
    return path


async def read_znode(source: ClusterSource, path: str) -> ZnodePage:
    zk = source.require_zk()
    path = check_path(path)
    found = await source.in_thread(lambda: zk.get_data(path))
    if found is None:
        raise ConsoleError(404, f"no znode {path}")
    data, stat = found
    children = sorted(await source.in_thread(lambda: zk.get_children(path)) or [])
    try:
        text, binary = data[:SHOWN_BYTES].decode("utf-8"), False
    except UnicodeDecodeError:
        text, binary = data[:SHOWN_BYTES].hex(" "), True
    return ZnodePage(
        path,
        text,
        binary,
        len(data),
        {
            "version": str(stat.version),
            "children": str(stat.numChildren),
            "created": _when(stat.ctime),
            "modified": _when(stat.mtime),
            "czxid": hex(stat.czxid),
            "mzxid": hex(stat.mzxid),
            "ephemeral owner": hex(stat.ephemeralOwner) if stat.ephemeralOwner else "(persistent)",
        },
        children[:MAX_CHILDREN],
        max(len(children) - MAX_CHILDREN, 0),
        _crumbs(path),
    )


def child_path(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


def _crumbs(path: str) -> list[tuple[str, str]]:
    out = [("/", "/")]
    current = ""
    for part in filter(None, path.split("/")):
        current += "/" + part
        out.append((part, current))
    return out


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
