"""Send fuzz cases to a real broker and watch it: the oracle, the tally, the reproducers.

A *case* is one connection: one frame, or several written back to back (pipelined), sometimes
the same frame repeated, written whole or in random small chunks, after which the fuzzer reads
responses until the broker closes, every frame is answered, or the connection stays quiet for
`read_idle_s` (then it hangs up; some cases hang up without reading at all). Case `k` of seed
`s` is built from `random.Random(f"{s}/{k}")` alone, so any case can be rebuilt and replayed by
itself (`--seed s --case k`).

Cases run in rounds of about `check_every` frames, `concurrency` connections at a time. After
each round, and once more at the end, the oracle looks at the broker:

* crash: the broker process is gone (exit code and the log's tail are kept);
* hang: a fresh connection does not get a Metadata response within 5 s;
* traceback: the broker's log grew a ``Traceback`` (bad input must be refused without one);
  the round's cases are then replayed one at a time to find the case and frame that do it;
* bad response: a response frame with an impossible size, or correlation ids out of order;
* RSS: sampled from /proc/<pid>/status; growth beyond `rss_growth_mb` over the level after the
  first round is a finding.

Every finding is saved under `findings_dir` with the seed, the case and frame indices and the
frames' bytes in hex (`frames.hex`, one frame per line), replayable with `--replay`.
"""

from __future__ import annotations

import asyncio
import collections
import random
import re
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from zkafka.protocol import decode_request, decode_response, encode_request
from zkafka.protocol.api_keys import ApiKey, api_name
from zkafka.protocol.header_types import RequestHeader
from zkafka.protocol.headers import peek_fixed_header, read_request_header
from zkafka.protocol.messages import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from zkafka.protocol.schemas import SPECS
from zkafka.testing.fuzz.generate import RequestGenerator
from zkafka.testing.fuzz.mutate import Wire, api_versions_unsupported, mutate, noise, valid

_SIZE: Final = struct.Struct(">i")
METADATA_DEADLINE_S: Final = 5.0
TRACEBACK: Final = "Traceback (most recent call last)"
_MAX_RESPONSE: Final = 256 << 20
# What asyncio and Python print (without a traceback) when a coroutine or task is dropped.
# Python prints each "never awaited" warning once per coroutine name, so these are a sign, not a count.
ASYNCIO_WARNINGS: Final = (
    "was never awaited",
    "Task exception was never retrieved",
    "Task was destroyed but it is pending",
)


# -- the target ----------------------------------------------------------------------------------


@dataclass
class Target:
    """The broker under test. `pid` and `log_path` are optional for a broker the fuzzer did not
    start (then crash, RSS and traceback checks are skipped); `exit_code` reads a child's status."""

    host: str
    port: int
    pid: int | None = None
    log_path: Path | None = None
    exit_code: Callable[[], int | None] | None = None

    def alive(self) -> bool | None:
        if self.pid is None:
            return None
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
        except OSError:
            return False

    def rss_kb(self) -> int | None:
        if self.pid is None:
            return None
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None


class LogWatch:
    """New lines of the broker's log since the last look, and the tracebacks among them."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.offset = path.stat().st_size if path is not None and path.exists() else 0

    def new_tracebacks(self) -> list[str]:
        return self.scan()[0]

    def scan(self) -> tuple[list[str], list[str]]:
        """(tracebacks, asyncio warnings) in what the log gained since the last look."""
        if self.path is None or not self.path.exists():
            return [], []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        text = data.decode("utf-8", "replace")
        warnings = [line.strip() for line in text.splitlines() if any(w in line for w in ASYNCIO_WARNINGS)]
        return tracebacks_in(text), warnings

    def tail(self, lines: int = 60) -> str:
        if self.path is None or not self.path.exists():
            return ""
        with open(self.path, "rb") as f:
            f.seek(max(0, self.path.stat().st_size - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])


_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d")


def tracebacks_in(text: str) -> list[str]:
    """Each traceback with the log line that introduced it, up to the next log line."""
    lines = text.splitlines()
    found: list[str] = []
    for i, line in enumerate(lines):
        if TRACEBACK not in line:
            continue
        start = i
        while start > 0 and not _LOG_LINE.match(lines[start]) and i - start < 3:
            start -= 1
        end = i + 1
        while end < len(lines) and not _LOG_LINE.match(lines[end]) and end - i < 200:
            end += 1
        found.append("\n".join(lines[start:end]))
    return found


# -- cases ------------------------------------------------------------------------------------------


@dataclass
class Case:
    seed: int
    index: int
    frames: list[Wire]
    chunked: bool = False
    read: bool = True  # False: write and hang up without reading
    first_frame: int = 0  # global index of the first frame (set by the runner)

    @property
    def size(self) -> int:
        return len(self.frames)


def advertised_pairs(served: Mapping[int, tuple[int, int]]) -> list[tuple[int, int]]:
    """Every (api key, version) the broker advertises that the codec can build."""
    return [
        (key, v)
        for key, (lo, hi) in sorted(served.items())
        if key in SPECS
        for v in range(lo, hi + 1)
        if v in SPECS[key].versions
    ]


_CONTROLLER_APIS: Final = (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA)


def fence(w: Wire, served: Mapping[int, tuple[int, int]]) -> Wire:
    """Keep a frame from taking the broker over, when it decodes at all: controller-to-broker
    requests get a stale controller epoch (0: every real one is higher), ControlledShutdown an
    unknown broker id (-1). Without this, the first fake controller whose epoch wins would fence
    the real one for the rest of the run (and a ControlledShutdown of broker 1 would leave it
    shutting down), and the run would measure a broker taken over rather than one under attack."""
    if w.api_key not in (*_CONTROLLER_APIS, ApiKey.CONTROLLED_SHUTDOWN) or len(w.data) < 12:
        return w
    payload = memoryview(w.data)[4:]
    try:
        header, _ = decode_request(payload, served)
        _, body = read_request_header(payload, peek_fixed_header(payload))
    except Exception:
        return w  # the broker will not act on it either
    if header.api_key not in (*_CONTROLLER_APIS, ApiKey.CONTROLLED_SHUTDOWN):
        return w  # a mutated api key made it another request: nothing to fence
    data = bytearray(w.data)
    if header.api_key == ApiKey.CONTROLLED_SHUTDOWN:
        struct.pack_into(">i", data, 4 + body, -1)
    else:  # controller_id, then controller_epoch
        (epoch,) = struct.unpack_from(">i", data, 4 + body + 4)
        if epoch <= 0:
            return w
        struct.pack_into(">i", data, 4 + body + 4, 0)
    return Wire(bytes(data), w.label, w.api_key, w.version, w.expects_response)


def build_case(
    seed: int, index: int, served: Mapping[int, tuple[int, int]], *, takeover: bool = False
) -> Case:
    """Case `index` of `seed`; `takeover` lets controller requests win (see `fence`)."""
    rng = random.Random(f"{seed}/{index}")
    gen = RequestGenerator(rng)
    pairs = advertised_pairs(served)
    count = 1 if rng.random() < 0.7 else rng.choice((2, 2, 3, 4, 4, 8, 16, 32))
    big = rng.random() < 0.01
    # One frame per connection: mostly bad input. Pipelined: mostly valid requests (a bad frame
    # ends the connection, so what follows it is never read), one bad frame somewhere sometimes.
    valid_share = 0.3 if count == 1 else 0.85
    frames: list[Wire] = []
    while len(frames) < count:
        key, version = rng.choice(pairs)
        cid = rng.randrange(2**31)
        r = rng.random()
        if r < valid_share:
            frames.append(valid(gen.request(key, version, cid, big=big)))
        elif r < valid_share + (1 - valid_share) * 0.8:
            other = gen.request(*rng.choice(pairs), rng.randrange(2**31))
            frames.append(mutate(gen.request(key, version, cid, big=big), rng, served, other))
        elif r < valid_share + (1 - valid_share) * 0.95:
            frames.append(noise(rng, served))
        else:
            frames.append(api_versions_unsupported(rng, cid))
        if count > 1 and rng.random() < 0.1:  # the same frame again, once or a few times
            frames += [frames[-1]] * rng.choice((1, 1, 3))
    frames = frames[:count]
    if not takeover:
        frames = [fence(w, served) for w in frames]
    return Case(seed, index, frames, chunked=rng.random() < 0.1, read=rng.random() < 0.95)


# -- running a case -----------------------------------------------------------------------------------


@dataclass
class CaseResult:
    responses: int = 0
    closed_by_broker: bool = False
    hung_up: bool = False  # we closed after read_idle_s of silence
    connect_failed: bool = False
    problems: list[str] = field(default_factory=list)


def _correlation_id(w: Wire) -> int | None:
    if len(w.data) < 12:
        return None
    return int(_SIZE.unpack_from(w.data, 8)[0])


async def run_case(
    case: Case, host: str, port: int, read_idle_s: float, rng: random.Random | None = None
) -> CaseResult:
    result = CaseResult()
    try:
        async with asyncio.timeout(5):
            reader, writer = await asyncio.open_connection(host, port)
    except (OSError, TimeoutError):
        result.connect_failed = True
        return result
    try:
        data = b"".join(w.data for w in case.frames)
        try:
            async with asyncio.timeout(5):
                if case.chunked:
                    chunker = rng or random.Random(case.index)
                    pos = 0
                    while pos < len(data):
                        step = chunker.choice((1, 2, 3, 7, 100))
                        writer.write(data[pos : pos + step])
                        await writer.drain()
                        pos += step
                else:
                    writer.write(data)
                    await writer.drain()
        except (ConnectionError, TimeoutError):
            result.closed_by_broker = True
            return result
        if not case.read:
            return result
        cids = [_correlation_id(w) for w in case.frames]
        known = all(w.expects_response is not None for w in case.frames)
        wanted = sum(1 for w in case.frames if w.expects_response) if known else len(case.frames)
        next_cid = 0
        while result.responses < wanted:
            try:
                async with asyncio.timeout(read_idle_s):
                    head = await reader.readexactly(4)
                    (size,) = _SIZE.unpack(head)
                    if size < 4 or size > _MAX_RESPONSE:
                        result.problems.append(f"response size {size}")
                        break
                    body = await reader.readexactly(size)
            except TimeoutError:
                result.hung_up = True
                break
            except (asyncio.IncompleteReadError, ConnectionError):
                result.closed_by_broker = True
                break
            result.responses += 1
            (cid,) = _SIZE.unpack_from(body, 0)
            while next_cid < len(cids) and cids[next_cid] != cid:
                next_cid += 1
            if next_cid == len(cids):
                result.problems.append(f"response with correlation id {cid} out of order or unknown")
                break
            next_cid += 1
    finally:
        writer.transport.abort()
    return result


# -- the oracle -----------------------------------------------------------------------------------------


async def metadata_probe(host: str, port: int, deadline_s: float = METADATA_DEADLINE_S) -> str | None:
    """None when a fresh connection gets a Metadata response in time, else what went wrong."""
    started = time.monotonic()
    writer = None
    try:
        async with asyncio.timeout(deadline_s):
            reader, writer = await asyncio.open_connection(host, port)
            header = RequestHeader(ApiKey.METADATA, 1, 7, "zkafka-fuzz-oracle")
            writer.write(encode_request(header, MetadataRequest(topics=[])))
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            resp_header, _ = decode_response(ApiKey.METADATA, 1, await reader.readexactly(size))
            if resp_header.correlation_id != 7:
                return f"metadata response with correlation id {resp_header.correlation_id}"
            return None
    except TimeoutError:
        return f"no Metadata response within {deadline_s:g} s"
    except Exception as e:
        return f"metadata probe failed after {time.monotonic() - started:.1f} s: {e!r}"
    finally:
        if writer is not None:
            writer.transport.abort()


async def served_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    """The broker's own ApiVersions table."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        async with asyncio.timeout(10):
            writer.write(
                encode_request(RequestHeader(ApiKey.API_VERSIONS, 0, 1, "zkafka-fuzz"), ApiVersionsRequest())
            )
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            _, resp = decode_response(ApiKey.API_VERSIONS, 0, await reader.readexactly(size))
    finally:
        writer.transport.abort()
    assert isinstance(resp, ApiVersionsResponse)
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


# -- the run ----------------------------------------------------------------------------------------


@dataclass
class Finding:
    kind: str  # crash | hang | traceback | asyncio_warning | bad_response | rss
    detail: str
    cases: list[Case]
    frame: int | None = None  # the culprit frame's global index, when known
    log: str = ""
    saved: Path | None = None


@dataclass
class FuzzConfig:
    frames: int = 10_000
    seed: int = 1
    budget_s: float = 600.0
    concurrency: int = 8
    check_every: int = 500
    read_idle_s: float = 0.3
    rss_growth_mb: float = 64.0
    findings_dir: Path = Path("build/fuzz-findings")
    first_case: int = 0
    only_cases: list[int] | None = None
    takeover: bool = False  # let fake controller requests win (see `fence`)
    say: Callable[[str], None] = print


@dataclass
class Report:
    config: FuzzConfig
    served: dict[int, tuple[int, int]] = field(default_factory=dict)
    frames: int = 0
    cases: int = 0
    by_api: collections.Counter[tuple[int, int, str]] = field(default_factory=collections.Counter)
    by_label: collections.Counter[str] = field(default_factory=collections.Counter)
    responses: int = 0
    closes: int = 0
    hangups: int = 0
    connect_failures: int = 0
    oracle_checks: int = 0
    rss_start_kb: int | None = None
    rss_baseline_kb: int | None = None
    rss_peak_kb: int | None = None
    rss_end_kb: int | None = None
    findings: list[Finding] = field(default_factory=list)
    tracebacks: int = 0
    asyncio_warnings: int = 0
    elapsed_s: float = 0.0
    budget_exhausted: bool = False

    def count(self, kind: str) -> int:
        return sum(1 for f in self.findings if f.kind == kind)

    @property
    def ok(self) -> bool:
        return not self.findings


class Fuzzer:
    def __init__(self, target: Target, config: FuzzConfig) -> None:
        self.target = target
        self.config = config
        self.report = Report(config)
        self.log = LogWatch(target.log_path)

    async def run(self) -> Report:
        cfg, rep, say = self.config, self.report, self.config.say
        started = time.monotonic()
        rep.served = await served_versions(self.target.host, self.target.port)
        pairs = advertised_pairs(rep.served)
        say(
            f"fuzzing {self.target.host}:{self.target.port}: {len(rep.served)} api keys, "
            f"{len(pairs)} (api, version) pairs; seed {cfg.seed}, {cfg.frames} frames, "
            f"budget {cfg.budget_s:g} s"
        )
        rep.rss_start_kb = rep.rss_peak_kb = self.target.rss_kb()
        case_ids: Iterable[int] = (
            cfg.only_cases if cfg.only_cases is not None else _count_from(cfg.first_case)
        )
        ids = iter(case_ids)
        stop = False
        while not stop and rep.frames < cfg.frames:
            if time.monotonic() - started > cfg.budget_s:
                rep.budget_exhausted = True
                say(f"time budget of {cfg.budget_s:g} s used up after {rep.frames} frames")
                break
            round_cases: list[Case] = []
            in_round = 0
            for index in ids:
                case = build_case(cfg.seed, index, rep.served, takeover=cfg.takeover)
                case.frames = case.frames[: cfg.frames - rep.frames - in_round]
                case.first_frame = rep.frames + in_round
                round_cases.append(case)
                in_round += case.size
                if in_round >= cfg.check_every or rep.frames + in_round >= cfg.frames:
                    break
            if not round_cases:
                break
            await self._run_round(round_cases)
            stop = await self._check(round_cases)
            if rep.rss_baseline_kb is None:
                rep.rss_baseline_kb = self.target.rss_kb()
            say(
                f"  {rep.frames:>7} frames, {rep.cases} connections, {rep.responses} responses, "
                f"{len(rep.findings)} findings, RSS {_mb(self.target.rss_kb())}"
            )
        if not stop:
            await asyncio.sleep(1.0)  # let parked requests expire before the last look
            await self._check([])
        rep.rss_end_kb = self.target.rss_kb() if self.target.alive() is not False else rep.rss_end_kb
        self._check_rss()
        rep.elapsed_s = time.monotonic() - started
        return rep

    async def _run_round(self, cases: list[Case]) -> None:
        rep, cfg = self.report, self.config
        sem = asyncio.Semaphore(cfg.concurrency)

        async def one(case: Case) -> tuple[Case, CaseResult]:
            async with sem:
                return case, await run_case(case, self.target.host, self.target.port, cfg.read_idle_s)

        for case, res in await asyncio.gather(*(one(c) for c in cases)):
            rep.cases += 1
            rep.frames += case.size
            for w in case.frames:
                rep.by_api[(w.api_key, w.version, "valid" if w.label == "valid" else "mutated")] += 1
                rep.by_label[w.label] += 1
            rep.responses += res.responses
            rep.closes += res.closed_by_broker
            rep.hangups += res.hung_up
            rep.connect_failures += res.connect_failed
            if res.problems:
                self._finding("bad_response", "; ".join(res.problems), [case])

    async def _check(self, cases: list[Case]) -> bool:
        """The oracle after a round; True when fuzzing cannot go on (crash, hang)."""
        rep = self.report
        rep.oracle_checks += 1
        rss = self.target.rss_kb()
        if rss is not None:
            rep.rss_peak_kb = max(rep.rss_peak_kb or 0, rss)
            rep.rss_end_kb = rss
        if self.target.alive() is False:
            await asyncio.sleep(0.2)
            code = self.target.exit_code() if self.target.exit_code else None
            self._finding(
                "crash", f"broker process {self.target.pid} exited (code {code})", cases, log=self.log.tail()
            )
            return True
        problem = await metadata_probe(self.target.host, self.target.port)
        if problem is not None:
            self._finding("hang", problem, cases, log=self.log.tail())
            return True
        found, warnings = self.log.scan()
        if warnings:
            rep.asyncio_warnings += len(warnings)
            self._finding("asyncio_warning", warnings[0][:300], cases, log="\n".join(warnings[:20]))
        if found:
            rep.tracebacks += len(found)
            await self._blame_traceback(cases, found)
        return False

    async def _blame_traceback(self, cases: list[Case], found: list[str]) -> None:
        """Replay the round's cases one by one (then the culprit's frames one by one) to find
        which input makes the broker log a traceback."""
        say = self.config.say
        say(f"  {len(found)} traceback(s) in the broker log; replaying the round's {len(cases)} cases")
        for case in cases:
            await run_case(case, self.target.host, self.target.port, self.config.read_idle_s)
            await asyncio.sleep(0.05)
            again = self.log.new_tracebacks()
            if not again:
                continue
            frame_index: int | None = None
            culprit = case
            for i, w in enumerate(case.frames):
                single = Case(case.seed, case.index, [w], first_frame=case.first_frame + i)
                await run_case(single, self.target.host, self.target.port, self.config.read_idle_s)
                await asyncio.sleep(0.05)
                alone = self.log.new_tracebacks()
                if alone:
                    frame_index, culprit = case.first_frame + i, single
                    break
            self._finding(
                "traceback", found[0].splitlines()[-1][:300], [culprit], frame=frame_index, log=again[0]
            )
            return
        self._finding(
            "traceback", found[0].splitlines()[-1][:300] + " (not reproduced alone)", cases, log=found[0]
        )

    def _check_rss(self) -> None:
        rep = self.report
        if rep.rss_baseline_kb is None or rep.rss_end_kb is None:
            return
        growth_mb = (rep.rss_end_kb - rep.rss_baseline_kb) / 1024
        if growth_mb > self.config.rss_growth_mb:
            self._finding(
                "rss",
                f"RSS grew {growth_mb:.0f} MiB after the first round "
                f"({_mb(rep.rss_baseline_kb)} -> {_mb(rep.rss_end_kb)}, "
                f"limit {self.config.rss_growth_mb:g} MiB)",
                [],
            )

    def _finding(
        self, kind: str, detail: str, cases: list[Case], frame: int | None = None, log: str = ""
    ) -> None:
        finding = Finding(kind, detail, cases, frame, log)
        finding.saved = save_finding(finding, self.config)
        self.report.findings.append(finding)
        self.config.say(f"  FINDING {kind}: {detail} -> {finding.saved}")


def _count_from(start: int) -> Iterable[int]:
    n = start
    while True:
        yield n
        n += 1


def _mb(kb: int | None) -> str:
    return "n/a" if kb is None else f"{kb / 1024:.1f} MiB"


# -- reproducers ------------------------------------------------------------------------------------


def save_finding(finding: Finding, cfg: FuzzConfig) -> Path:
    first = finding.cases[0] if finding.cases else None
    name = f"{finding.kind}-seed{cfg.seed}" + (f"-case{first.index}" if first else "")
    directory = cfg.findings_dir / name
    n = 1
    while directory.exists():
        n += 1
        directory = cfg.findings_dir / f"{name}-{n}"
    directory.mkdir(parents=True)
    lines = [
        f"kind: {finding.kind}",
        f"detail: {finding.detail}",
        f"seed: {cfg.seed}",
        f"cases: {', '.join(str(c.index) for c in finding.cases) or '-'}",
        f"frame: {finding.frame if finding.frame is not None else '-'}",
        f"replay: python -m zkafka.testing.fuzz --replay {directory / 'frames.hex'}",
    ]
    if first is not None:
        lines.append(f"rebuild: python -m zkafka.testing.fuzz --seed {cfg.seed} --case {first.index}")
    lines.append("")
    hex_lines = []
    for case in finding.cases:
        for i, w in enumerate(case.frames):
            lines.append(
                f"case {case.index} frame {case.first_frame + i}: {api_name(w.api_key)} v{w.version} "
                f"{w.label}, {len(w.data)} bytes"
            )
            hex_lines.append(w.data.hex())
        hex_lines.append("")  # a blank line: the next case is another connection
    if finding.log:
        lines += ["", "broker log:", finding.log]
    (directory / "README.txt").write_text("\n".join(lines) + "\n")
    (directory / "frames.hex").write_text("\n".join(hex_lines) + "\n")
    return directory


def load_frames(path: Path) -> list[list[bytes]]:
    """The connections of a `frames.hex` file: frames one per line, connections blank-separated."""
    connections: list[list[bytes]] = [[]]
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line:
            if connections[-1]:
                connections.append([])
            continue
        connections[-1].append(bytes.fromhex(line))
    return [c for c in connections if c]


# -- the summary ------------------------------------------------------------------------------------


def summary(rep: Report) -> str:
    out: list[str] = []
    per_pair: dict[tuple[int, int], list[int]] = collections.defaultdict(lambda: [0, 0])
    for (key, version, kind), n in rep.by_api.items():
        per_pair[(key, version)][0 if kind == "valid" else 1] += n
    out.append(f"{'api':<28} {'ver':>3} {'valid':>7} {'mutated':>7}")
    for (key, version), (v, m) in sorted(per_pair.items()):
        name = api_name(key) if key >= 0 else "(noise)"
        out.append(f"{name:<28} {version if version >= 0 else '-':>3} {v:>7} {m:>7}")
    out.append("")
    out.append("mutations: " + ", ".join(f"{k} {n}" for k, n in sorted(rep.by_label.items())))
    out.append("")
    rows = [
        ("seed", str(rep.config.seed)),
        ("frames sent", str(rep.frames)),
        ("connections", str(rep.cases)),
        ("responses", str(rep.responses)),
        ("connections closed by the broker", str(rep.closes)),
        ("connections the fuzzer hung up on (silence)", str(rep.hangups)),
        ("connect failures", str(rep.connect_failures)),
        ("oracle checks (Metadata within 5 s)", str(rep.oracle_checks)),
        ("crashes", str(rep.count("crash"))),
        ("hangs", str(rep.count("hang"))),
        ("tracebacks in the broker log", str(rep.tracebacks)),
        ("asyncio warnings in the broker log (never awaited ...)", str(rep.asyncio_warnings)),
        ("bad responses", str(rep.count("bad_response"))),
        (
            "RSS start / after round 1 / peak / end",
            " / ".join(
                _mb(x) for x in (rep.rss_start_kb, rep.rss_baseline_kb, rep.rss_peak_kb, rep.rss_end_kb)
            ),
        ),
        ("RSS growth finding", "yes" if rep.count("rss") else "no"),
        ("elapsed", f"{rep.elapsed_s:.1f} s" + (" (time budget used up)" if rep.budget_exhausted else "")),
        ("findings", str(len(rep.findings))),
    ]
    width = max(len(k) for k, _ in rows)
    out += [f"{k:<{width}}  {v}" for k, v in rows]
    for f in rep.findings:
        out.append(f"  {f.kind}: {f.detail} ({f.saved})")
    return "\n".join(out)
