"""A neardup server under load, as the harness and the soak test drive it.

The store is the seeded development corpus indexed by the real CLI (build_store); requests are result sets of
100 stored ids (dedup_bodies). Two ways to load a running server (tests/server_process.py's Server):

  * h2load (nghttp2-client), open or closed loop, posting one prebuilt gRPC frame per Endpoint. h2load sees
    HTTP status only, so OK answers are counted by their bytes (check_answers);
  * a sequential caller (sequential): any call functions, one call at a time, timed in turns. A new kind of
    call (another RPC, a stream) is one more function.

Both report latency percentiles next to the CPU the server, the load generator and the rest of the machine
spent meanwhile (measure.CpuMeter).
"""
from __future__ import annotations

import dataclasses
import functools
import random
import re
import resource
import subprocess
import time
from pathlib import Path
from typing import Callable

import grpc
import numpy as np
from grpc_health.v1 import health_pb2

from benchmarks.lib import devcorpus, devcorpus_sets, edits
from benchmarks.lib.measure import CpuMeter, connections_per_worker, percentiles_ms
from tests.server_process import NEARDUP, Server
from neardup_client.v1 import neardup_pb2 as pb

SEED = devcorpus.SPLIT_SEEDS[devcorpus.DEFAULT_SPLIT]
DEDUP_PATH = "/neardup.v1.NearDup/Dedup"
STREAM_PATH = "/neardup.v1.NearDup/DedupStream"
UPSERT_PATH = "/neardup.v1.NearDup/Upsert"
SIMILAR_PATH = "/neardup.v1.NearDup/FindSimilar"
HEALTH_PATH = "/grpc.health.v1.Health/Check"
HEALTH_REQUEST = health_pb2.HealthCheckRequest().SerializeToString()
GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")
CACHE_OFF = ("--cache-size", "0")
# Open loop: the floor measurements used 8 connections; enough streams that a late answer does not hold
# back the next request. Closed loop: more connections, so SO_REUSEPORT spreads them over the workers.
OPEN_CONNECTIONS, OPEN_STREAMS = 8, 16
CLOSED_CONNECTIONS, CLOSED_STREAMS = 16, 8
# Cores busy with something else during a run above which the run is repeated (a shared machine).
DISTURBED_CORES = 0.25


# --- the served store and its requests ----------------------------------------------------------------------------

#: The kinds of result set (and corpus) a run serves: "drawn", the development corpus and result sets of 20-40 %
#: near-duplicates spread over many stories; "popular", the same corpus plus POPULAR_COPIES republished copies of one
#: news story (as in the stop-list's popular-story check), each result set holding POPULAR_IN_SET of them, the rest
#: other articles: a news query about a story republished many times, whose shared values many results hold (the
#: kernel's long chains); "news", the same corpus and result sets of NEWS_SET_SIZE news articles only, 20-40 % of
#: them near-duplicates: the shape the request-cost issue was measured in (real news result sets of about 76 ids).
RESULT_SETS = ("drawn", "popular", "news")
POPULAR_COPIES = 300
POPULAR_IN_SET = 40
POPULAR_GROUP = "popular"
NEWS_SET_SIZE = 76


def corpus(kind: str = RESULT_SETS[0]) -> list[devcorpus.Doc]:
    """The documents a run of `kind` (RESULT_SETS) indexes: a new list each call, of documents built once per
    process (each side of an A/B run that builds its own store, each kind of result set, share one build)."""
    if kind not in RESULT_SETS:
        raise ValueError(f"unknown kind of result set {kind!r}; use one of {', '.join(RESULT_SETS)}")
    return list(_corpus("popular" if kind == "popular" else RESULT_SETS[0]))


@functools.lru_cache(maxsize=None)
def _corpus(kind: str) -> tuple[devcorpus.Doc, ...]:
    """"popular": the development corpus and POPULAR_COPIES copies of its longest news story; else the corpus."""
    if kind != "popular":
        return tuple(devcorpus.generate(devcorpus.DEFAULT_SPLIT))
    docs = list(_corpus(RESULT_SETS[0]))
    rng = random.Random(SEED)
    story = max((d for d in docs if d.family == "original" and d.source == "news" and d.site == ""),
                key=lambda d: len(d.text))
    sites = [site for site in edits.news_sites(rng) if site.lang == story.lang]
    for n in range(POPULAR_COPIES):
        family = rng.choice(edits.EDIT_FAMILIES)
        text, rate = edits.republish(story.text, story.lang, family, rng.choice(sites), rng)
        docs.append(devcorpus.Doc(f"popular{n:04d}", text, story.lang, POPULAR_GROUP, family, story.source,
                                  story.length, round(rate, 4)))
    return tuple(docs)


def build_store(work: Path, command: list[str] = NEARDUP, kind: str = RESULT_SETS[0], name: str = "store",
                options: tuple[str, ...] = ()) -> tuple[list[devcorpus.Doc], Path, dict]:
    """The corpus of `kind`, indexed by the real CLI (`command`: another build's; `options`: more of `neardup
    index`'s) into a new store `name`."""
    docs = corpus(kind)
    source = work / f"{kind}.jsonl"
    if not source.exists():
        devcorpus.write_jsonl(docs, source)
    store = work / name
    started = time.perf_counter()
    done = subprocess.run([*command, "index", str(source), "--store", str(store), *options], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"neardup index failed:\n{done.stderr}")
    return docs, store, {"documents": len(docs), "seconds": seconds, "docs_per_s": len(docs) / seconds,
                         "command": " ".join(["python -m neardup.cli index CORPUS --store STORE", *options])}


def dedup_bodies(docs: list[devcorpus.Doc], count: int, kind: str = RESULT_SETS[0]
                 ) -> tuple[list[list[str]], list[bytes]]:
    """Result sets of stored ids of `kind` (RESULT_SETS) from corpus(kind), 100 each (NEWS_SET_SIZE for news),
    and their requests."""
    if kind == "news":
        news = [i for i, doc in enumerate(docs) if doc.source == "news"]
        drawn = [[news[i] for i in indexes] for indexes in devcorpus_sets.draw_result_sets(
            [docs[i] for i in news], count, SEED, size=NEWS_SET_SIZE)]
    else:
        drawn = devcorpus_sets.draw_result_sets(docs, count, SEED)
    if kind == "popular":
        copies = np.array([p for p, doc in enumerate(docs) if doc.group == POPULAR_GROUP])
        rng = np.random.default_rng(SEED)
        sets = []
        for indexes in drawn:
            chosen = rng.choice(copies, POPULAR_IN_SET, replace=False).tolist()
            sets.append([int(i) for i in rng.permutation(chosen + indexes[:100 - POPULAR_IN_SET])])
        drawn = sets
    elif kind not in RESULT_SETS:
        raise ValueError(f"unknown kind of result set {kind!r}; use one of {', '.join(RESULT_SETS)}")
    id_sets = [[docs[i].id for i in indexes] for indexes in drawn]
    return id_sets, [pb.DedupRequest(ids=ids).SerializeToString() for ids in id_sets]


def stop_server(server: Server, timeout: float = 20) -> dict:
    """SIGTERM (then SIGKILL, by Server.stop) and what the server logged as internal errors."""
    try:
        code = server.stop(timeout=timeout)
    finally:
        internal = server.log().count("internal error")
    return {"exit_code": code, "internal_errors_logged": internal}


# --- h2load -------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Endpoint:
    """What h2load posts: one framed request body, and the length of the message an OK answer carries."""

    name: str
    path: str
    body: Path
    answer_bytes: int


def grpc_frame(message: bytes) -> bytes:
    """One length-prefixed gRPC message: no compression flag, 4-byte big-endian length, the message."""
    return b"\0" + len(message).to_bytes(4, "big") + message


def answer_of(target: str, path: str, message: bytes) -> bytes:
    """The answer h2load will get, through Python gRPC, or SystemExit with the status if it is not OK. Asked
    twice on one connection (one worker): on a caching server the second answer is the cached one."""
    with grpc.insecure_channel(target) as channel:
        try:
            return [channel.unary_unary(path)(message, timeout=10) for _ in range(2)][-1]
        except grpc.RpcError as error:
            raise SystemExit(f"{path} on {target} failed: {error.code().name}: {error.details()}") from None


def endpoint(target: str, work: Path, name: str, path: str, message: bytes) -> Endpoint:
    """A unary method's request framed into a file for h2load, verified once through Python gRPC."""
    body = work / f"{name}.grpc"
    body.write_bytes(grpc_frame(message))
    return Endpoint(name, path, body, len(answer_of(target, path, message)))


def endpoints(target: str, work: Path, dedup_body: bytes) -> dict[str, Endpoint]:
    """The health Check (the floor) and Dedup, each verified once through Python gRPC before any load."""
    return {name: endpoint(target, work, name, path, message)
            for name, path, message in (("health", HEALTH_PATH, HEALTH_REQUEST), ("dedup", DEDUP_PATH, dedup_body))}


def stream_endpoint(target: str, work: Path, name: str, messages: list[bytes]) -> Endpoint:
    """DedupStream with `messages` (serialized DedupRequests) as one h2load request: a stream carrying them all.
    Its answer_bytes are set so that check_answers counts streams: all answer frames of a stream, less one
    frame header (check_answers adds it back)."""
    body = work / f"{name}.grpc"
    body.write_bytes(b"".join(map(grpc_frame, messages)))
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(STREAM_PATH)
        try:
            answers = list(call(iter(messages), timeout=30))
        except grpc.RpcError as error:
            raise SystemExit(f"{STREAM_PATH} on {target} failed: {error.code().name}: {error.details()}") from None
    failed = [pb.DedupResponse.FromString(a).error for a in answers if pb.DedupResponse.FromString(a).HasField("error")]
    if len(answers) != len(messages) or failed:
        raise SystemExit(f"{STREAM_PATH} answered {len(answers)} of {len(messages)} messages: {failed[:1]}")
    return Endpoint(name, STREAM_PATH, body, sum(len(a) + 5 for a in answers) - 5)


def check_answers(data_bytes: int, succeeded: int, answer_bytes: int) -> int:
    """gRPC errors among HTTP-successful requests. An OK unary answer is exactly one framed message of known
    length; an error is a trailers-only response without DATA. So the DATA byte count says how many were OK."""
    return max(0, succeeded - round(data_bytes / (answer_bytes + 5)))


def h2load_command(target: str, endpoint: Endpoint, duration: int, connections: int, streams: int,
                   rate: int | None = None, log: Path | None = None) -> list[str]:
    """h2load posting the endpoint's body for `duration` s: at `rate` requests/s over all connections (open
    loop), else as fast as answers come (closed loop); `log` gets one line per request."""
    return ["h2load", f"--duration={duration}", f"--clients={connections}", f"--max-concurrent-streams={streams}",
            "--threads=1", f"--data={endpoint.body}", *([f"--log-file={log}"] if log else []),
            *(f"--header={header}" for header in GRPC_HEADERS), *([f"--rps={rate / connections:g}"] if rate else []),
            f"http://{target}{endpoint.path}"]


_H2LOAD_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                              r"(\d+) errored, (\d+) timeout")
_H2LOAD_DATA = re.compile(r"traffic: .*\((\d+)\) data")


def h2load_once(server: Server, endpoint: Endpoint, work: Path, *, seconds: int, warmup: int,
                rate: int | None = None, connections: int = OPEN_CONNECTIONS, streams: int = OPEN_STREAMS) -> dict:
    """One h2load run of warmup + seconds: open loop at `rate` requests/s over all connections, else closed loop.

    No --warm-up-time: h2load's DATA byte count then covers every request, so check_answers sees them all;
    the warm-up is dropped from the latency log instead."""
    log = work / "h2load.tsv"
    wall = seconds + warmup
    command = h2load_command(server.target, endpoint, wall, connections, streams, rate, log)
    with CpuMeter(server.process.pid, resource.RUSAGE_CHILDREN) as cpu:
        load = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(warmup)
            split = connections_per_worker(server.process.pid, server.port)
        finally:
            stdout, stderr = load.communicate(timeout=wall + 60)
    requests, data = _H2LOAD_REQUESTS.search(stdout), _H2LOAD_DATA.search(stdout)
    if load.returncode != 0 or requests is None or data is None:
        raise SystemExit(f"h2load failed ({load.returncode}): {' '.join(command)}\n{stdout}\n{stderr}")
    total, _, finished, succeeded, failed, errored, timeouts = map(int, requests.groups())
    grpc_errors = check_answers(int(data.group(1)), succeeded, endpoint.answer_bytes)
    rows = [line.split("\t") for line in log.read_text().splitlines() if line]
    log.unlink()
    starts = np.array([int(r[0]) for r in rows], dtype=np.int64)
    measured = starts >= starts.min() + warmup * 1_000_000 if len(rows) else np.zeros(0, dtype=bool)
    durations = np.array([int(r[2]) for r in rows], dtype=np.int64)[measured]
    http_errors = sum(r[1] != "200" for r in rows)
    return {
        "endpoint": endpoint.name, "mode": "open" if rate else "closed", "offered_rps": rate,
        "connections": connections, "streams_per_connection": streams, "connections_per_worker": split,
        "achieved_rps": len(durations) / seconds, "measured_requests": len(durations),
        "latency_ms": percentiles_ms(durations),
        "requests": total, "done": finished, "failed": failed, "errored": errored, "timeouts": timeouts,
        "http_errors": http_errors, "grpc_errors": grpc_errors,
        "errors": failed + errored + timeouts + http_errors + grpc_errors,
        "h2load_cpu_share": cpu.load_seconds / wall,
        "server_cpu_us_per_request": cpu.server_seconds * 1e6 / max(1, finished),
        "server_cpu_cores": cpu.server_seconds / wall,
        # whatever else ran on the machine meanwhile (other users of a shared machine), in cores
        "other_load_cores": cpu.other_load_cores(wall),
    }


def h2load(server: Server, endpoint: Endpoint, work: Path, *, seconds: int, warmup: int, attempts: int,
           rate: int | None = None, connections: int = OPEN_CONNECTIONS, streams: int = OPEN_STREAMS) -> dict:
    """h2load_once, repeated while other load on the machine disturbs it: the least disturbed of up to
    `attempts` runs is kept."""
    runs = []
    while len(runs) < attempts and (not runs or runs[-1]["other_load_cores"] > DISTURBED_CORES):
        runs.append(h2load_once(server, endpoint, work, seconds=seconds, warmup=warmup, rate=rate,
                                connections=connections, streams=streams))
    return {**min(runs, key=lambda run: run["other_load_cores"]), "attempts": len(runs)}


# --- a sequential caller ------------------------------------------------------------------------------------------

def sequential(server: Server, kinds: dict[str, Callable[[int], bool]], calls: int, *, warmup: int = 50,
               block: int = 50) -> dict:
    """One caller, one call at a time: kinds maps a name to a function that makes call number i (0 ..
    warmup + calls - 1) and returns whether the server's session cache answered it. Each kind is warmed up,
    then the kinds alternate in blocks, so drift in the machine's load touches all of them alike. A call that
    raises is counted as an error, not timed. Per kind: latency, calls timed, errors, cache hits."""
    samples: dict[str, list[float]] = {name: [] for name in kinds}
    errors, hits = dict.fromkeys(kinds, 0), dict.fromkeys(kinds, 0)
    with CpuMeter(server.process.pid) as cpu:
        for call in kinds.values():
            for i in range(warmup):
                call(i)
        for start in range(warmup, warmup + calls, block):
            for name, call in kinds.items():
                for i in range(start, min(warmup + calls, start + block)):
                    began = time.perf_counter_ns()
                    try:
                        cached = call(i)
                    except Exception:  # counted, not fatal: the figure says how many failed
                        errors[name] += 1
                        continue
                    samples[name].append((time.perf_counter_ns() - began) / 1000)
                    hits[name] += cached
    return {"other_load_cores": cpu.other_load_cores(),
            "kinds": {name: {"latency_ms": percentiles_ms(np.array(times)), "calls": len(times),
                             "errors": errors[name], "cache_hits": hits[name]} for name, times in samples.items()}}
