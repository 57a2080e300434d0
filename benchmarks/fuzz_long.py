"""The fuzz properties of tests/service/test_fuzz.py at length, outside CI (their inputs and checks: lib/fuzz.py).

Hypothesis draws the inputs (no example database, so every run is fresh) and each one goes through the same
check the CI test uses; a failure stops that property with hypothesis's shrunk example. The tally of outcomes
(answered, or which error) shows the inputs reached past the decoder rather than all failing at its door.

    python -m benchmarks.fuzz_long [--inputs 20000] [--server-inputs 10000] [--out benchmarks/out]

--inputs is per in-process property (request bytes of Dedup, Upsert, Delete and Info; the sketcher; corpus lines
of `neardup index`; result-set lines of `neardup dedup --jsonl`); --server-inputs go to a real `neardup serve`
over one channel. Writes fuzz_long.json.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

import grpc
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from benchmarks.lib import fuzz
from benchmarks.lib.load import stop_server
from benchmarks.lib.paths import OUT
from tests.server_process import Server


def run(name: str, strategy: st.SearchStrategy, check, inputs: int) -> dict:
    """Checks `inputs` draws of strategy; returns the tally, the rate and the failure if there was one."""
    tally: collections.Counter[str] = collections.Counter()

    @settings(fuzz.FUZZ, max_examples=inputs, database=None, phases=[Phase.generate, Phase.shrink])
    @given(strategy)
    def prop(example):
        tally[check(*example)] += 1

    started = time.perf_counter()
    failure = None
    try:
        prop()
    except Exception as error:  # the shrunk counterexample: reported, and the other properties still run
        failure = f"{type(error).__name__}: {error}"
    seconds = time.perf_counter() - started
    row = {"property": name, "inputs": sum(tally.values()), "seconds": round(seconds, 1),
           "inputs_per_s": round(sum(tally.values()) / seconds), "outcomes": dict(tally.most_common()),
           "failure": failure}
    print(f"{name}: {row['inputs']:,} inputs in {seconds:.0f} s, "
          f"{', '.join(f'{k} {v:,}' for k, v in tally.most_common())}{'; FAILED: ' + failure if failure else ''}",
          flush=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=20_000, help="inputs per in-process property (7 of them)")
    parser.add_argument("--server-inputs", type=int, default=10_000, help="inputs sent to a real server")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="neardup-fuzz-") as scratch:
        store, servicer = fuzz.make_servicer(Path(scratch) / "store")
        with store:
            for method in fuzz.REQUESTS:
                rows.append(run(f"{method} request bytes, in process", fuzz.request_bytes(method).map(
                    lambda body, method=method: (servicer, method, body)), fuzz.check_handler, args.inputs))
        rows.append(run("sketcher: any text, any language", st.tuples(st.sampled_from(fuzz.UNITS), fuzz.any_text,
                                                                       fuzz.langs), fuzz.check_sketcher, args.inputs))
        rows.append(run("neardup index: corpus lines", st.tuples(fuzz.json_lines), fuzz.check_corpus_line, args.inputs))
        rows.append(run("neardup dedup --jsonl: result-set lines", st.tuples(fuzz.json_lines),
                        fuzz.check_result_set_line, args.inputs))
        server = Server(Path(scratch) / "store", "--max-result-set", str(fuzz.MAX_RESULT_SET)).wait_ready(60)
        try:
            with grpc.insecure_channel(server.target) as channel:
                bodies = st.sampled_from(list(fuzz.REQUESTS)).flatmap(
                    lambda method: fuzz.request_bytes(method).map(lambda body: (channel, method, body)))
                rows.append(run("all methods, through a real server", bodies, fuzz.check_over_grpc,
                                args.server_inputs))
        finally:
            stopped = stop_server(server, timeout=30)
        exit_code, internal = stopped["exit_code"], stopped["internal_errors_logged"]
    summary = {"command": f"python -m benchmarks.fuzz_long --inputs {args.inputs} --server-inputs {args.server_inputs}",
               "total_inputs": sum(row["inputs"] for row in rows), "failures": sum(bool(r["failure"]) for r in rows),
               "server_exit_code": exit_code, "server_internal_errors_logged": internal, "properties": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fuzz_long.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(f"{summary['total_inputs']:,} inputs, {summary['failures']} failing properties, server exit {exit_code}, "
          f"{internal} internal errors logged; wrote {args.out / 'fuzz_long.json'}")
    return 1 if summary["failures"] or internal or exit_code else 0


if __name__ == "__main__":
    sys.exit(main())
