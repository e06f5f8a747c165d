"""Serving the console with uvicorn on one address (HTTP, or HTTPS with a certificate), until
interrupted."""

from __future__ import annotations

import uvicorn

from zkafka.console.app import build_app
from zkafka.console.settings import ConsoleSettings
from zkafka.console.source import ZkBrowser


def serve(
    settings: ConsoleSettings,
    host: str,
    port: int,
    zk: ZkBrowser | None = None,
    *,
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
) -> None:
    """Serve until interrupted; over HTTPS when given a certificate (and its key), as a console that
    takes passwords (`--login`) should be anywhere but loopback."""
    config = uvicorn.Config(
        build_app(settings, zk),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        # the brokers' own event loop: uvloop is already a dependency
        loop="uvloop",
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
    )
    uvicorn.Server(config).run()
