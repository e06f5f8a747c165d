#!/usr/bin/env bash
# Idempotent set-up for a fresh machine (root): Debian's ZooKeeper, Java check, the venv with the project.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.installed

need_zookeeper() { [ ! -f /usr/share/java/zookeeper.jar ] || [ ! -d /usr/share/zookeeper ]; }

if need_zookeeper; then
    echo "setup: installing Debian's zookeeper package"
    if [ "$(id -u)" != 0 ]; then
        echo "setup: ERROR: ZooKeeper is missing (/usr/share/zookeeper) and we are not root; install it with: apt-get install zookeeper" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends zookeeper default-jre-headless >/dev/null; }; then
        echo "setup: ERROR: could not install the 'zookeeper' package with apt-get; install it by hand and re-run" >&2
        exit 1
    fi
fi
if ! command -v java >/dev/null 2>&1; then
    echo "setup: ERROR: no 'java' on PATH; ZooKeeper needs a Java runtime (apt-get install default-jre-headless)" >&2
    exit 1
fi

if [ ! -x $VENV/bin/python ]; then
    echo "setup: creating $VENV"
    $PY -m venv $VENV
fi
# Re-install only when the dependency list changed (keeps `make test` quick on a warm machine).
if [ ! -f $STAMP ] || [ pyproject.toml -nt $STAMP ]; then
    echo "setup: installing zkafka with its dev extras into $VENV"
    $VENV/bin/pip install -q --upgrade pip >/dev/null
    $VENV/bin/pip install -q -e ".[dev]"
    touch $STAMP
fi
echo "setup: ok"
