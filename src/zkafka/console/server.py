"""Serving the console with uvicorn on one address, until interrupted."""

from __future__ import annotations

import uvicorn

from zkafka.console.app import build_app
from zkafka.console.settings import ConsoleSettings
from zkafka.console.source import ZkBrowser


def serve(settings: ConsoleSettings, host: str, port: int, zk: ZkBrowser | None = None) -> None:
    config = uvicorn.Config(
        build_app(settings, zk),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        # the brokers' own event loop: uvloop is already a dependency
        loop="uvloop",
    )
    uvicorn.Server(config).run()
