"""What a Dedup costs over an empty call on the same server, and whether a change made it cost more (A/B).

    python -m benchmarks.request_cost [--quick] [--against REV] [--at REV] [--backend lmdb|redis|cluster]
        [--sketch-size K] [--rounds N] [--out benchmarks/out]

Run it before stopping on any change that touches the request path: `--against` the last release measures this
checkout (side A: this environment's neardup, checked to be the checkout's) and REV (side B, installed from a
`git archive` into an environment of its own that reuses this one's third-party packages; lib/ab.py) on the same
store, in the same run.

One `neardup serve` worker per side, session cache off, the development corpus (real text: news, manual pages, job
ads; lib/devcorpus.py) indexed once by side B's `neardup index` (older code reads what older code wrote; side A's
with --store-from a; --store-from each: every side indexes and serves its own, so a change to the offline stage
shows in the request path; --backend redis or cluster: that LMDB store copied by the same side's `neardup migrate`
into a redis-server, or a Redis Cluster of 3 primaries with a replica each, started here, which the servers then
read), result sets of 100 stored ids with 20-40 % near-duplicates (--result-sets news: 76 news articles each, the
shape the request-cost issue was measured in; --result-sets popular: the corpus plus 300 republished copies of one
news story, 40 of them in each result set; lib/load.py). Both servers
run side by side; each round measures one side then the other (the order alternates), every figure a ratio to that
server's empty health Check in the same round:
  * sequential: one caller, one call at a time (pre-serialized Dedup bytes, NearDupClient.dedup, the empty Check,
    in alternating blocks): Dedup p50 and p99 over Check's;
  * closed loop (h2load, 16 connections x 8 streams): Dedup/s over Check/s, and Dedup messages/s over DedupStream
    (4 x 2 streams of STREAM_MESSAGES requests each) over Check/s;
  * open loop at 1,000 requests/s offered: Dedup's p99 over Check's.
The report gives each figure's median and spread over the rounds per side, the paired difference B - A, the
goals (issue 37's, reported, never asserted) and every failed call. Without --against it also times the Dedup
handler in process, stage by stage (lib/request_path.py). Writes request_cost.json and request_cost.md
(request_cost-popular.* for --result-sets popular, request_cost-redis.* for --backend redis, request_cost-k256.* for
--sketch-size 256, and so on).
"""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import grpc

from benchmarks.lib import ab, load, measure
from benchmarks.lib.paths import OUT, ROOT
from benchmarks.lib.report import save, table
from benchmarks.lib.request_path import representative, request_path
from tests.server_process import RedisClusterServers, RedisServer, Server, free_port
from neardup_client import NearDupClient
from neardup_client.v1 import neardup_pb2 as pb

STREAM_MESSAGES = 32
# Closed loop as h2load connections x concurrent streams: unary calls as the harness runs them; DedupStreams
# within the server's default --max-streams (8), each carrying STREAM_MESSAGES requests.
CLOSED_SHAPES = {"health": {"connections": load.CLOSED_CONNECTIONS, "streams": load.CLOSED_STREAMS},
                 "dedup": {"connections": load.CLOSED_CONNECTIONS, "streams": load.CLOSED_STREAMS},
                 "stream": {"connections": 4, "streams": 2}}
OPEN_RATE = 1000
SEQUENTIAL_KINDS = ("Dedup, pre-serialized bytes", "Dedup, NearDupClient", "health Check (empty call)")
#: Each figure of a round: (what it is, the goal's comparison, the goal); ratios to the same server's empty Check.
FIGURES = {
    "sequential_p50": ("sequential Dedup p50 / Check p50", "<=", 1.15),
    "sequential_client_p50": ("sequential NearDupClient.dedup p50 / Check p50", None, None),
    "sequential_p99": ("sequential Dedup p99 / Check p99", None, None),
    "closed_rate": ("closed loop Dedup/s / Check/s", ">=", 0.8),
    # steadier than the rates: a round's rates move with how the machine schedules the server's threads and h2load
    "closed_cpu": ("closed loop server CPU per Dedup / per Check", None, None),
    "stream_rate": ("closed loop DedupStream messages/s / Check/s", ">=", 2.0),
    "open_p99": (f"p99 at {OPEN_RATE:,}/s offered: Dedup / Check", "<=", 1.5),
}


class Sides:
    """The servers of the sides under measurement, all serving the same store, and what each round measures."""

    def __init__(self, sides: dict[str, ab.Side], stores: dict[str, Path | str], work: Path):
        self.sides, self.work = sides, work
        self.servers: dict[str, Server] = {}
        for name, side in sides.items():
            self.servers[name] = Server(stores[name], *load.CACHE_OFF, workers=1, port=free_port(),
                                        command=side.neardup, log_dir=work)
        for name, server in self.servers.items():
            try:
                server.wait_ready(120)
            except RuntimeError as error:
                raise ab.RevisionError(f"side {name.upper()} ({sides[name].describe()}) cannot serve the store: "
                                       f"{str(error)[-1500:]}") from None

    def endpoints(self, name: str, bodies: list[bytes], id_sets: list[list[str]], chosen: int) -> dict:
        target, work = self.servers[name].target, self.work / name
        work.mkdir(exist_ok=True)
        points = load.endpoints(target, work, bodies[chosen])
        tagged = [pb.DedupRequest(ids=id_sets[(chosen + m) % len(id_sets)], tag=m + 1).SerializeToString()
                  for m in range(STREAM_MESSAGES)]
        points["stream"] = load.stream_endpoint(target, work, "stream", tagged)
        return points

    def answers(self, bodies: list[bytes]) -> dict:
        """What each side answers for every result set (once, before any timing): results marked duplicate, the
        threshold applied, and whether the sides mark the same results as duplicates of the same ones. A side that
        is cheaper because it finds less shows here."""
        found: dict[str, list[list[int]]] = {}
        summary: dict = {}
        for name, server in self.servers.items():
            with grpc.insecure_channel(server.target) as channel:
                dedup = channel.unary_unary(load.DEDUP_PATH)
                replies = [pb.DedupResponse.FromString(dedup(body, timeout=10)) for body in bodies]
            found[name] = [list(reply.duplicate_of) for reply in replies]
            summary[name] = {"results": sum(len(row) for row in found[name]),
                             "duplicates": sum(of >= 0 for row in found[name] for of in row),
                             "threshold": replies[0].threshold}
        if len(found) == 2:
            first, second = found.values()
            summary["same_duplicates"] = sum(a == b for x, y in zip(first, second) for a, b in zip(x, y))
        return summary

    def stop(self) -> dict:
        return {name: load.stop_server(server) for name, server in self.servers.items()}


def sequential(server: Server, id_sets: list[list[str]], bodies: list[bytes], calls: int) -> dict:
    """Dedup as pre-serialized bytes and through the Python client, and the empty Check, in alternating blocks."""
    with NearDupClient(server.target) as client, grpc.insecure_channel(server.target) as channel:
        raw_dedup, check = channel.unary_unary(load.DEDUP_PATH), channel.unary_unary(load.HEALTH_PATH)
        calls_of = dict(zip(SEQUENTIAL_KINDS, (
            lambda i: pb.DedupResponse.FromString(raw_dedup(bodies[i % len(bodies)])).cached,
            lambda i: client.dedup(id_sets[i % len(id_sets)]).cached,
            lambda i: check(load.HEALTH_REQUEST) and False)))
        return load.sequential(server, calls_of, calls)


def measure_round(server: Server, endpoints: dict, id_sets: list[list[str]], bodies: list[bytes], work: Path,
                  seconds: int, calls: int) -> dict:
    """One side's round: the sequential caller, the closed loops and the open loop, as measured."""
    shape = {"seconds": seconds, "warmup": 1, "attempts": 1}
    closed = {name: load.h2load(server, endpoint, work, **CLOSED_SHAPES[name], **shape)
              for name, endpoint in endpoints.items()}
    closed["stream"]["messages_per_s"] = closed["stream"]["achieved_rps"] * STREAM_MESSAGES
    opened = {name: load.h2load(server, endpoints[name], work, rate=OPEN_RATE, **shape)
              for name in ("health", "dedup")}
    return {"sequential": sequential(server, id_sets, bodies, calls), "closed_loop": closed, "open_loop": opened}


def ratios(measured: dict) -> dict[str, float]:
    """A round's figures (FIGURES), each over the same server's empty Check in that round."""
    seq = {name: row["latency_ms"] for name, row in measured["sequential"]["kinds"].items()}
    floor = seq["health Check (empty call)"]
    closed, opened = measured["closed_loop"], measured["open_loop"]
    check_rate = closed["health"]["achieved_rps"]
    return {
        "sequential_p50": seq["Dedup, pre-serialized bytes"]["p50"] / floor["p50"],
        "sequential_client_p50": seq["Dedup, NearDupClient"]["p50"] / floor["p50"],
        "sequential_p99": seq["Dedup, pre-serialized bytes"]["p99"] / floor["p99"],
        "closed_rate": closed["dedup"]["achieved_rps"] / check_rate,
        "closed_cpu": (closed["dedup"]["server_cpu_us_per_request"]
                       / closed["health"]["server_cpu_us_per_request"]),
        "stream_rate": closed["stream"]["messages_per_s"] / check_rate,
        "open_p99": opened["dedup"]["latency_ms"]["p99"] / opened["health"]["latency_ms"]["p99"],
    }


def failed_calls(measured: dict) -> int:
    return (sum(row["errors"] for row in measured["sequential"]["kinds"].values())
            + sum(run["errors"] for part in ("closed_loop", "open_loop") for run in measured[part].values()))


def goals(figures: dict[str, dict], failures: int) -> list[dict]:
    """The goals on one side's medians over the rounds, and no failed call."""
    rows = []
    for key, (what, comparison, goal) in FIGURES.items():
        if comparison is None:
            continue
        value = figures[key]["median"]
        rows.append({"goal": f"{what} {comparison} {goal}", "ratio": value,
                     "met": value <= goal if comparison == "<=" else value >= goal})
    rows.append({"goal": "no failed call", "ratio": float(failures), "met": failures == 0})
    return rows


def _shown(path: str | Path) -> str:
    """A side's interpreter as the result files name it: relative to the repository, where it lies inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


BACKENDS = ("lmdb", "redis", "cluster")


def copied_to_redis(backend: str, stores: dict[str, Path], builders: dict[str, ab.Side], work: Path,
                    stack: ExitStack) -> dict[str, str]:
    """Each side's store (an LMDB directory) copied by `neardup migrate` of the side that built it into a
    redis-server or a Redis Cluster of 3 primaries started here (stopped with `stack`): the URLs the sides serve."""
    redis = stack.enter_context(RedisServer(work / "redis") if backend == "redis"
                                else RedisClusterServers(work / "redis-cluster", 3))
    copies: dict[Path, str] = {}
    for name, path in stores.items():
        if path not in copies:
            copies[path] = redis.url(path.name)
            done = subprocess.run([*builders[name].neardup, "migrate", "--no-progress", str(path), copies[path]],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise ab.RevisionError(f"side {name.upper()} ({builders[name].describe()}) cannot copy the store "
                                       f"into {backend}: {done.stderr.strip()[-1500:]}")
    return {name: copies[path] for name, path in stores.items()}


def run(sides: dict[str, ab.Side], store_from: str, args: argparse.Namespace, say) -> dict:
    results: dict = {"sides": {name: {"label": side.label, "commit": side.commit, "dirty": side.dirty,
                                      "python": _shown(side.python), "described": side.describe()}
                               for name, side in sides.items()}}
    with tempfile.TemporaryDirectory(prefix="neardup-cost-") as scratch, ExitStack() as redis:
        work = Path(scratch)
        stores, results["index"] = {}, {}
        for name in sides if store_from == "each" else [store_from]:
            say(f"indexing the {args.result_sets} corpus with side {name.upper()}'s neardup")
            docs, stores[name], results["index"][name] = load.build_store(
                work, sides[name].neardup, args.result_sets, f"store-{name}",
                ("-k", str(args.sketch_size)) if args.sketch_size else ())
        stores = stores if store_from == "each" else dict.fromkeys(sides, stores[store_from])
        id_sets, bodies = load.dedup_bodies(docs, 40 if args.quick else 200, args.result_sets)
        results["result_sets"], results["store_from"], results["backend"] = args.result_sets, store_from, args.backend
        results["sketch_size"] = args.sketch_size
        results["result_set_size"] = round(sum(map(len, id_sets)) / len(id_sets))
        store = stores["a"]
        chosen = representative(store, bodies)
        results["h2load_body"] = {"result_set": chosen, "request_bytes": len(bodies[chosen])}
        if len(sides) == 1 and sides["a"].python == sys.executable:
            say("timing the Dedup handler in process, stage by stage")
            results["request_path"] = request_path(store, bodies, 5 if args.quick else 20)
        if args.backend != "lmdb":
            say(f"copying the store into {args.backend}")
            builders = sides if store_from == "each" else dict.fromkeys(sides, sides[store_from])
            stores = copied_to_redis(args.backend, stores, builders, work, redis)
        servers = Sides(sides, stores, work)
        try:
            results["answers"] = servers.answers(bodies)
            endpoints = {name: servers.endpoints(name, bodies, id_sets, chosen) for name in sides}
            results["rounds"] = []
            for number in range(args.rounds):
                measured = {}
                for name in ab.order(number, list(sides)):
                    measured[name] = measure_round(servers.servers[name], endpoints[name], id_sets, bodies,
                                                   work / name, args.seconds, args.calls)
                results["rounds"].append({name: {"ratios": ratios(measured[name]), "failed_calls":
                                                 failed_calls(measured[name]), **measured[name]} for name in sides})
                say(f"round {number + 1}/{args.rounds}: " + "; ".join(
                    f"{name.upper()} Dedup p50 {results['rounds'][-1][name]['ratios']['sequential_p50']:.2f}x, "
                    f"closed {results['rounds'][-1][name]['ratios']['closed_rate']:.2f}x" for name in sides))
        finally:
            results["servers"] = servers.stop()
    results["summary"] = ab.summarize([{name: row[name]["ratios"] for name in sides} for row in results["rounds"]])
    results["goals"] = {name: goals(results["summary"]["sides"][name],
                                    sum(row[name]["failed_calls"] for row in results["rounds"])
                                    + results["servers"][name]["internal_errors_logged"]) for name in sides}
    return results


def markdown(results: dict) -> str:
    sides, summary = results["sides"], results["summary"]
    names = list(sides)
    described = ", ".join(f"{name.upper()} = {row['described']}" for name, row in sides.items())
    lines = [f"## Request cost: Dedup against the empty health Check ({results['machine']['date']})", "",
             f"`{results['command']}`: {described}. One worker per side, session cache off, {results['result_sets']} "
             f"result sets of {results['result_set_size']} ids "
             f"({results['h2load_body']['request_bytes']} request bytes for h2load), "
             f"{_stores(results['store_from'], results.get('backend', 'lmdb'))}"
             + (f" with sketches of {results['sketch_size']} values" if results.get("sketch_size") else "") + "; "
             f"{len(results['rounds'])} rounds of {results['seconds_per_run']} s "
             "h2load runs, the order of the sides alternating. Each figure is a ratio to the same server's empty "
             "Check in the same round: median [min–max over the rounds].", ""]
    header = ["figure", *(f"{name.upper()}" for name in names)]
    if "difference" in summary:
        header += ["B − A", "within the rounds' spread"]

    def cell(row: dict) -> str:
        return f"{row['median']:.2f} [{row['min']:.2f}–{row['max']:.2f}]"

    rows = []
    for key, (what, _, _) in FIGURES.items():
        row = [what, *(cell(summary["sides"][name][key]) for name in names)]
        if "difference" in summary:
            difference = summary["difference"][key]
            row += [f"{difference['median']:+.2f} [{difference['min']:+.2f}–{difference['max']:+.2f}]",
                    "yes" if difference["within_spread"] else "**no**"]
        rows.append(row)
    lines += table(header, rows)
    answers = results["answers"]
    lines += ["", "What each side answers for the same result sets (once, untimed): "
              + "; ".join(f"{name.upper()} marks {answers[name]['duplicates']:,} of {answers[name]['results']:,} "
                          f"results as duplicates (threshold {answers[name]['threshold']:g})" for name in names)
              + (f"; the two agree on {answers['same_duplicates']:,} results" if "same_duplicates" in answers
                 else "") + "."]
    lines += ["", "### Goals (medians over the rounds)", ""]
    lines += table(["goal", *(name.upper() for name in names)],
                   [[goal["goal"], *(f"{results['goals'][name][i]['ratio']:.3f} "
                                     f"{'yes' if results['goals'][name][i]['met'] else '**no**'}" for name in names)]
                    for i, goal in enumerate(results["goals"][names[0]])])
    lines += ["", "### Absolute figures, median over the rounds (they drift with the machine's load; the ratios "
                  "above are what compares)", ""]
    lines += table(["side", "Check p50 ms", "Dedup p50 ms", "Check/s closed", "Dedup/s closed",
                    "server CPU µs per Dedup", "other load, cores"],
                   [[name.upper(), *_absolute(results["rounds"], name)] for name in names])
    if "request_path" in results:
        lines += ["", "### Dedup handler in process, without gRPC (µs)", ""]
        lines += table(["stage", "median", "p99"], [[name, f"{row['median_us']:.1f}", f"{row['p99_us']:.1f}"]
                                                    for name, row in results["request_path"]["stages"].items()])
    return "\n".join(lines) + "\n"


def _stores(store_from: str, backend: str) -> str:
    copied = "" if backend == "lmdb" else \
        f" (copied into {'a redis-server' if backend == 'redis' else 'a Redis Cluster of 3 primaries'})"
    if store_from == "each":
        return f"each side serving the store its own `neardup index` built{copied}"
    return f"both serving the store side {store_from.upper()}'s `neardup index` built{copied}"


def _absolute(rounds: list[dict], name: str) -> list[str]:
    def median(pick) -> float:
        return sorted(pick(row[name]) for row in rounds)[len(rounds) // 2]

    kinds = lambda row: row["sequential"]["kinds"]  # noqa: E731
    return [f"{median(lambda r: kinds(r)['health Check (empty call)']['latency_ms']['p50']):.3f}",
            f"{median(lambda r: kinds(r)['Dedup, pre-serialized bytes']['latency_ms']['p50']):.3f}",
            f"{median(lambda r: r['closed_loop']['health']['achieved_rps']):,.0f}",
            f"{median(lambda r: r['closed_loop']['dedup']['achieved_rps']):,.0f}",
            f"{median(lambda r: r['closed_loop']['dedup']['server_cpu_us_per_request']):.0f}",
            f"{median(lambda r: r['closed_loop']['dedup']['other_load_cores']):.2f}"]


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ab.add_side_arguments(parser)
    parser.add_argument("--store-from", choices=("a", "b", "each"), default=None,
                        help="whose `neardup index` builds the store both serve (default: B when there is one); "
                        "each: every side serves a store of its own, built by its own `neardup index` (what a "
                        "change to the offline stage costs the request path)")
    parser.add_argument("--backend", choices=BACKENDS, default=BACKENDS[0],
                        help="the store the servers read: the LMDB directory `neardup index` wrote (default), or a "
                        "copy of it in a redis-server (redis) or a Redis Cluster of 3 primaries (cluster) started here")
    parser.add_argument("--result-sets", choices=load.RESULT_SETS, default=load.RESULT_SETS[0],
                        help="drawn: 100 ids, 20-40 %% near-duplicates over many stories (default); popular: the "
                        f"corpus plus {load.POPULAR_COPIES} republished copies of one news story, "
                        f"{load.POPULAR_IN_SET} of them in each result set; news: {load.NEWS_SET_SIZE} news articles "
                        "per result set (the shape issue 37 was measured in)")
    parser.add_argument("--sketch-size", type=int, metavar="K",
                        help="index the store with `neardup index -k K` (default: neardup's default size), e.g. the "
                        "larger sketch `neardup train --corpus` may advise")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per side (default 5; --quick 3)")
    parser.add_argument("--seconds", type=int, default=None, help="seconds per h2load run (default 4; --quick 2)")
    parser.add_argument("--calls", type=int, default=None,
                        help="sequential calls per kind and round (default 600; --quick 300)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    defaults = {"rounds": (3, 5), "seconds": (2, 4), "calls": (300, 600)}
    for name, (quick, full) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if min(args.rounds, args.seconds, args.calls) < 1:
        parser.error("--rounds, --seconds and --calls must be at least 1")
    if args.store_from in ("b", "each") and not args.against:
        parser.error(f"--store-from {args.store_from} needs --against")
    args.store_from = args.store_from or ("b" if args.against else "a")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_arguments(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if shutil.which("h2load") is None:
        raise SystemExit("request_cost: h2load not found: apt-get install nghttp2-client")

    def say(line: str) -> None:
        print(f"request_cost: {line}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    try:
        sides = ab.sides(args.at, args.against, say)
        results = {"command": " ".join(["python -m benchmarks.request_cost",
                                        *(argv if argv is not None else sys.argv[1:])]),
                   "machine": measure.machine(), "seconds_per_run": args.seconds}
        results.update(run(sides, args.store_from, args, say))
    except ab.RevisionError as error:
        raise SystemExit(f"request_cost: {error}") from None
    results["seconds"] = time.perf_counter() - started
    text = markdown(results)
    stem = "-".join(["request_cost", *([args.result_sets] if args.result_sets != "drawn" else []),
                     *([args.backend] if args.backend != "lmdb" else []),
                     *([f"k{args.sketch_size}"] if args.sketch_size else [])])
    save(args.out, stem, results, text)
    print(text)
    print(f"wrote {args.out / stem}.json, {stem}.md ({results['seconds']:.0f} s)")
    return results


if __name__ == "__main__":
    main()
