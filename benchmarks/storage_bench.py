"""Storage append throughput vs raw os.write; same as `zkafka perf storage`.

python benchmarks/storage_bench.py [--batch-bytes 16384] [--total-mb 512] [--dir DIR]
"""

from __future__ import annotations

import sys

from zkafka.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["perf", "storage", *sys.argv[1:]]))
