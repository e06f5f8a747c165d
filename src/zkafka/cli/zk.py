"""`zkafka zk ls|get|tree|rm`: placeholder replaced by the zk browsing commands."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    return None
