#!/usr/bin/env bash
# Idempotent set-up for a fresh machine (root): Debian's ZooKeeper, Java check, the venv with the project.
set -euo pipefail
cd "$(dirname "$0")/.."

# The interpreter: $PYTHON if set; else the distribution's /usr/bin/python3 when it is 3.11 or newer
# and can make a venv; else python3 on PATH. Debian's is built with profile-guided optimisation and
# LTO, a plain source build (pyenv's default) is not: the same broker spends ~15-30 % less CPU per
# request on Debian's (docs/performance.md, "The interpreter"), and every figure there is taken on it.
if [ -n "${PYTHON:-}" ]; then
    PY=$PYTHON
elif [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys, ensurepip, venv; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    PY=/usr/bin/python3
else
    PY=python3
fi
VENV=.venv
STAMP=$VENV/.installed

# Debian packages: the ZooKeeper server (required), and kcat (a librdkafka client), Burrow (LinkedIn's
# lag monitor) and Go with segmentio/kafka-go (whose own test suite runs against a broker) and
# Shopify/sarama (driven by tests/interop/sarama_check), Node with npm for KafkaJS (below), and
# Chromium with chromedriver for the web console's browser tests:
# third-party clients and tools the tests drive against the cluster.
missing=()
[ -f /usr/share/java/zookeeper.jar ] && [ -d /usr/share/zookeeper ] || missing+=(zookeeper)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[ -x /usr/bin/Burrow ] || missing+=(burrow)
command -v go >/dev/null 2>&1 || missing+=(golang-go)
[ -d /usr/share/gocode/src/github.com/segmentio/kafka-go ] || missing+=(golang-github-segmentio-kafka-go-dev)
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] || missing+=(golang-github-shopify-sarama-dev)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# the web console's browser tests: Debian's Chromium and its WebDriver, driven by selenium
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
        echo "setup: ERROR: missing Debian packages (${missing[*]}) and we are not root; install them with: apt-get install ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
        echo "setup: ERROR: could not install ${missing[*]} with apt-get; install them by hand and re-run" >&2
        exit 1
    fi
fi
if ! command -v java >/dev/null 2>&1; then
    echo "setup: ERROR: no 'java' on PATH; ZooKeeper needs a Java runtime (apt-get install default-jre-headless)" >&2
    exit 1
fi

# A venv made from another interpreter than the one chosen above is made again (its packages too).
if [ -f $VENV/pyvenv.cfg ]; then
    venv_from=$(sed -n 's/^executable = //p' $VENV/pyvenv.cfg)
    want_from=$($PY -c 'import os, sys; print(os.path.realpath(sys.executable))')
    if [ -n "$venv_from" ] && [ "$(realpath "$venv_from")" != "$want_from" ]; then
        echo "setup: $VENV was made from $venv_from; making it again from $want_from"
        rm -rf $VENV
    fi
fi
if [ ! -x $VENV/bin/python ]; then
    echo "setup: creating $VENV from $($PY -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    $PY -m venv $VENV
fi
# Re-install only when the dependency list changed (keeps `make test` quick on a warm machine).
if [ ! -f $STAMP ] || [ pyproject.toml -nt $STAMP ]; then
    echo "setup: installing zkafka with its dev and spark extras into $VENV"
    $VENV/bin/pip install -q --upgrade pip >/dev/null
    # pip looks in every index it is configured with (a machine's local wheel index, then PyPI) for
    # each exact pin; one it cannot find anywhere fails the install, and the set-up with it, loudly.
    if ! $VENV/bin/pip install -q -e ".[dev,spark]"; then
        echo "setup: ERROR: pip could not install zkafka's pinned dependencies (pyproject.toml, extras dev and spark: the error above); is PyPI reachable?" >&2
        exit 1
    fi
    touch $STAMP
fi
# zkafka's bytecode, compiled here once: where PYTHONDONTWRITEBYTECODE is set (as on this project's
# machines) Python never writes it, and every broker, CLI, test worker and Spark Python worker
# would compile the whole package from source at each start (~0.3-0.7 s of CPU a process). Python
# still reads bytecode that exists; a stale file is ignored, so nothing here can run old code.
$VENV/bin/python -m compileall -q -j 0 src/zkafka >/dev/null
# KafkaJS from npm (exact version and hash in tests/interop/kafkajs/package-lock.json), into that
# directory's node_modules (ignored by git); skipped when the pinned version is already there.
KAFKAJS_DIR=tests/interop/kafkajs
KAFKAJS_WANT=$(sed -n 's/.*"kafkajs": "\(.*\)".*/\1/p' $KAFKAJS_DIR/package.json)
KAFKAJS_HAVE=$(sed -n 's/^  "version": "\(.*\)".*/\1/p' $KAFKAJS_DIR/node_modules/kafkajs/package.json 2>/dev/null || true)
if [ "$KAFKAJS_HAVE" != "$KAFKAJS_WANT" ]; then
    echo "setup: installing KafkaJS $KAFKAJS_WANT into $KAFKAJS_DIR/node_modules"
    if ! (cd $KAFKAJS_DIR && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
        echo "setup: ERROR: npm could not install KafkaJS (network?); re-run when the npm registry is reachable" >&2
        exit 1
    fi
fi
echo "setup: ok"
