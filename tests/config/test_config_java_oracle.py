"""java.util.Properties as an independent oracle for the .properties reader and writer.

One JVM run reads every case file and prints each entry as hex UTF-8, so nothing is lost in
transit. Skipped when no JDK is installed (ZooKeeper's Debian package brings one).
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from zkafka.config import format_properties, parse_properties

JAVA = shutil.which("java")
pytestmark = pytest.mark.skipif(JAVA is None, reason="no java on PATH")

ORACLE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class Oracle {
    public static void main(String[] args) throws Exception {
        HexFormat hex = HexFormat.of();
        for (String path : args) {
            Properties p = new Properties();
            try (Reader r = new InputStreamReader(new FileInputStream(path), StandardCharsets.UTF_8)) {
                p.load(r);
            }
            System.out.println("FILE " + path);
            for (String k : new TreeSet<>(p.stringPropertyNames())) {
                System.out.println(hex.formatHex(k.getBytes(StandardCharsets.UTF_8)) + " "
                    + hex.formatHex(p.getProperty(k).getBytes(StandardCharsets.UTF_8)));
            }
        }
    }
}
"""

# Inputs without unescaped trailing whitespace (the one place zkafka trims like Kafka, and Java keeps).
HAND_WRITTEN = [
    "a=b\nc:d\ne f\n\tg\t=\th\n",
    "# comment \\\nx=1\n! other\ny = 2",
    "list=one,\\\n    two,\\\n\t#three\n",
    "k\\=e\\:y\\ s=v\\=\\:\\ \\\\\\t\\n\\r\\f\\u00e9\\q\n",
    "sur=\\ud83d\\ude00\ncjk=\\u4e2d\\u6587\nraw=中文 é\n",
    "dup=1\ndup=2\nempty=\nonly\n",
    "a=x\\\\\nb=y\\\\\\\nc\n",
    "a = = b\nc=d:e=f\ng :h\n",
    "a=1\r\nb=2\\\r\n  3\rc=4",
]


def _random_props(rng: random.Random) -> dict[str, str]:
    alphabet = "ab =:#!\\\t\n\r\f\x0bé中😀\x00 "

    def text(lo: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, 8)))

    return {text(1): text(0) for _ in range(rng.randint(1, 6))}


def _java_read(tmp_path: Path, texts: list[str]) -> list[dict[str, str]]:
    source = tmp_path / "Oracle.java"
    source.write_text(ORACLE)
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"case{i}.properties"
        path.write_bytes(text.encode("utf-8"))
        paths.append(str(path))
    out = subprocess.run([JAVA, str(source), *paths], capture_output=True, text=True, timeout=60, check=True)
    results: list[dict[str, str]] = []
    for line in out.stdout.splitlines():
        if line.startswith("FILE "):
            results.append({})
        else:
            key_hex, _, value_hex = line.partition(" ")
            results[-1][bytes.fromhex(key_hex).decode()] = bytes.fromhex(value_hex).decode()
    return results


def test_reader_and_writer_agree_with_java(tmp_path: Path) -> None:
    rng = random.Random(20240601)
    generated = [_random_props(rng) for _ in range(40)]
    written = [format_properties(p) for p in generated]
    java = _java_read(tmp_path, HAND_WRITTEN + written)
    for text, expected in zip(HAND_WRITTEN, java, strict=False):
        assert parse_properties(text) == expected, text
    for props, text, expected in zip(generated, written, java[len(HAND_WRITTEN) :], strict=True):
        assert expected == props, text  # Java reads what we write ...
        assert parse_properties(text) == props  # ... and so do we
