"""The console's connections to the cluster, opened once and shared by every page.

The admin and group clients live on the server's event loop (they are created in the app's
lifespan); ZooKeeper reads are blocking kazoo calls and run in a worker thread. Brokers are
remembered once seen, so one that dies stays on the pages, marked dead, instead of vanishing
from them; the groups' lag samples (`lag_history`) are kept here too, for the lag charts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio.to_thread
from kazoo.protocol.states import ZnodeStat

from zkafka.client.admin import AdminClient
from zkafka.client.group_admin import GroupAdmin
from zkafka.console.errors import ConsoleError
from zkafka.console.lag_history import LagHistory
from zkafka.console.settings import ConsoleSettings
from zkafka.doctor import DoctorSettings, Finding, diagnose
from zkafka.doctor.view import ClusterView

T = TypeVar("T")


class ZkBrowser(Protocol):
    """What the console reads of ZooKeeper (`zkafka.zk.client.KafkaZkClient` has it)."""

    def get_children(self, path: str) -> list[str] | None: ...

    def get_data(self, path: str) -> tuple[bytes, ZnodeStat] | None: ...

    def get_data_many(self, paths: Sequence[str]) -> dict[str, tuple[bytes, ZnodeStat] | None]: ...


@dataclass(frozen=True, slots=True)
class SeenBroker:
    broker_id: int
    host: str
    port: int
    rack: str | None


class ClusterSource:
    def __init__(self, settings: ConsoleSettings, zk: ZkBrowser | None) -> None:
        self.settings = settings
        self.zk = zk
        self.seen: dict[int, SeenBroker] = {}
        self.lag_history = LagHistory()
        self._admin: AdminClient | None = None
        self._groups: GroupAdmin | None = None

    async def start(self) -> None:
        """Create the clients on the running loop (their futures belong to it)."""
        settings = self.settings
        self._admin = AdminClient(
            settings.bootstrap_servers,
            client_id="zkafka-ui",
            request_timeout_ms=settings.request_timeout_ms,
            security=settings.security,
        )
        self._groups = GroupAdmin(
            settings.bootstrap_servers,
            client_id="zkafka-ui",
            request_timeout_ms=settings.request_timeout_ms,
            security=settings.security,
        )

    async def close(self) -> None:
        for client in (self._admin, self._groups):
            if client is not None:
                await client.close()

    @property
    def admin(self) -> AdminClient:
        assert self._admin is not None, "ClusterSource.start() was not called"
        return self._admin

    @property
    def group_admin(self) -> GroupAdmin:
        assert self._groups is not None, "ClusterSource.start() was not called"
        return self._groups

    def require_zk(self) -> ZkBrowser:
        if self.zk is None:
            raise ConsoleError(404, "this console was started without --zookeeper: ZooKeeper pages are off")
        return self.zk

    async def in_thread(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    async def zk_view(self) -> tuple[ClusterView, list[Finding]] | None:
        """The doctor's decoded view of the tree and its findings; None without ZooKeeper."""
        zk = self.zk
        if zk is None:
            return None
        return await self.in_thread(lambda: diagnose(zk, DoctorSettings()))

    async def view_or_note(self) -> tuple[ClusterView | None, list[Finding] | None, str | None]:
        """The doctor's view and findings, or why there are none (no ZooKeeper, or it failed)."""
        if self.zk is None:
            return None, None, "started without --zookeeper: nothing from ZooKeeper is shown"
        try:
            got = await self.zk_view()
        except Exception as e:  # ZooKeeper away: a page shows what the brokers say
            return None, None, f"ZooKeeper could not be read: {e}"
        assert got is not None
        return got[0], got[1], None
