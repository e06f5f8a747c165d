"""The environment the Go clients' tests build in: Debian's Go packages (GOPATH mode, no modules)
and one build cache for the whole checkout, `.cache/go-build` (git ignores it).

A fresh cache per test compiled the parts of Go's standard library they use (net, crypto/tls,
...) again for each of them, and again on every run: about half of the kafka-go test's CPU (25.0
CPU-s with a cold cache, 13.0 with a warm one). Go's cache is content-addressed and safe for
concurrent builds, so sharing it changes nothing a test checks."""

from __future__ import annotations

import os
from pathlib import Path

GOPATH = "/usr/share/gocode"
BUILD_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "go-build"


def go_environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "GOPATH": GOPATH, "GO111MODULE": "off", "GOCACHE": str(BUILD_CACHE), **extra}
