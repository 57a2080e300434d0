"""The harness's report: harness.md (goals, the sequential client, open and closed loop, the kernel and the
handler in process, sketching, the profile) and harness_latency.png (open-loop latency per offered rate)."""
from __future__ import annotations

from pathlib import Path

from benchmarks.lib import load
from benchmarks.lib.report import latency_cells, table
from neardup.core import vocabulary


def floor_of(run: dict, runs: list[dict]) -> dict | None:
    """The health run at the same rate on the same server: the open-loop run's floor."""
    return next((r for r in runs if r["endpoint"] == "health" and r["workers"] == run["workers"]
                 and r["offered_rps"] == run["offered_rps"]), None)


def _run_cells(run: dict) -> list[str]:
    """Other load (cores), how many runs it took to get one undisturbed enough, the connection split."""
    return [f"{run['other_load_cores']:.2f}", str(run["attempts"]), "/".join(map(str, run["connections_per_worker"]))]


def _cache_label(hit_share: float) -> str:
    return "uncached (cache off)" if not hit_share else f"cache on, {hit_share:.0%} of Dedup calls repeat a result set"


def markdown(results: dict) -> str:
    meta, plan = results["machine"], results["plan"]
    lines = [
        "# neardup benchmark harness", "",
        f"`{results['command']}` — {meta['date']}, {meta['nproc']} × {meta['cpu']}, Python {meta['python']}, "
        f"grpcio {meta['grpcio']}, {meta['h2load'] or 'no h2load'}, commit {meta['commit']}. "
        f"Dev corpus seed {load.SEED}: {results['index']['documents']} documents; result sets of 100 ids "
        f"with 20–40 % near-duplicates. Latencies in ms; every h2load run measures {plan['seconds']} s after "
        f"{plan['warmup']} s of warm-up. *other load*: cores busy with anything but the server and h2load.", "",
        "## Goals (issue 4)", "",
        *table(["goal", "measured", "met"],
                [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]]),
        "", f"## Sequential client (1 worker, {_cache_label(results['sequential']['hit_share'])}, one channel; "
        f"other load {results['sequential']['other_load_cores']:.2f} cores)", "",
        *table(["call", "p50", "p90", "p99", "p99.9", "p50 / floor", "p99 / floor", "cache hits", "errors"],
                [[name, *latency_cells(row["latency_ms"]), f"{row['p50_over_floor']:.2f}",
                  f"{row['p99_over_floor']:.2f}", f"{row['cache_hits'] / max(1, row['calls']):.0%}",
                  str(row["errors"])]
                 for name, row in results["sequential"]["kinds"].items()]),
        "", f"## Open loop (h2load --rps, {load.OPEN_CONNECTIONS} connections × {load.OPEN_STREAMS} streams)", "",
    ]
    open_runs = results["open_loop"]
    lines += table(
        ["workers", "offered rps", "endpoint", "achieved rps", "p50", "p90", "p99", "p99.9", "p99 / health p99",
         "errors", "server CPU µs/req", "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), str(run["offered_rps"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          *latency_cells(run["latency_ms"]),
          f"{run['latency_ms']['p99'] / floor['latency_ms']['p99']:.2f}" if floor else "—",
          str(run["errors"]), f"{run['server_cpu_us_per_request']:.0f}", f"{run['h2load_cpu_share']:.0%}",
          *_run_cells(run)] for run in open_runs for floor in [floor_of(run, open_runs)]])
    closed_runs = results["closed_loop"]
    lines += ["", f"## Closed loop ({load.CLOSED_CONNECTIONS} connections × {load.CLOSED_STREAMS} streams)", ""]
    lines += table(
        ["workers", "endpoint", "rps", "vs 1 worker", "p50", "p99", "errors", "server CPU µs/req", "server cores",
         "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          f"{run['achieved_rps'] / one['achieved_rps']:.2f} ×" if one else "—",
          *latency_cells(run["latency_ms"], ("p50", "p99")), str(run["errors"]),
          f"{run['server_cpu_us_per_request']:.0f}", f"{run['server_cpu_cores']:.2f}",
          f"{run['h2load_cpu_share']:.0%}", *_run_cells(run)]
         for run in closed_runs
         for one in [next((r for r in closed_runs if r["endpoint"] == run["endpoint"] and r["workers"] == 1), None)]])
    lines += ["", f"## Kernel in process (µs per result set of 100, threshold {vocabulary.DEFAULT_THRESHOLD}, greedy; "
              "× = baseline / kernel on the baseline's sets)", ""]
    lines += table(
        ["sets", "dups/set", "kernel median", "kernel p99", "pure-Python reference", "×",
         "datasketch MinHash pairwise", "×", "MinHash numpy all-pairs", "×"],
        [[row["sets"], f"{row['duplicates_per_set']:.1f}", f"{row['kernel']['median_us']:.1f}",
          f"{row['kernel']['p99_us']:.1f}", f"{row['reference']['median_us']:,.0f}", f"{row['reference_ratio']:,.0f}",
          *([f"{row['minhash_pairwise']['median_us']:,.0f}", f"{row['minhash_pairwise_ratio']:,.0f}",
             f"{row['minhash_numpy']['median_us']:,.0f}", f"{row['minhash_numpy_ratio']:,.0f}"]
            if "minhash_pairwise" in row else ["—"] * 4)] for row in results["kernel"]])
    lines += ["", "## Dedup handler in process, without gRPC (µs, dev-corpus result sets)", ""]
    lines += table(["stage", "median", "p99"], [[name, f"{row['median_us']:.1f}", f"{row['p99_us']:.1f}"]
                                                 for name, row in results["request_path"]["stages"].items()])
    sketch = results["sketching"]
    lines += ["", f"## Sketching throughput ({sketch['documents']} dev corpus texts, best of {sketch['rounds']})", ""]
    lines += table(["sketcher", "docs/s", "× MinHash"],
                    [[f"{sketch['neardup']} (default unit)", f"{sketch['neardup_docs_per_s']:,.0f}",
                      f"{sketch['ratio']:.2f}"],
                     [sketch["minhash"], f"{sketch['minhash_docs_per_s']:,.0f}", "1.00"]])
    lines += ["", f"`neardup index` (CLI, 1 process, start-up included): {results['index']['docs_per_s']:,.0f} "
              f"docs/s over {results['index']['documents']} documents.", "", "## Profile of Dedup at load", ""]
    prof = results["profile"]
    if "skipped" in prof:
        lines.append(f"skipped: {prof['skipped']}")
    else:
        lines += [f"{prof['tool']}; {prof['load']} at {prof['rps'] or 0:.0f} rps. The GIL was held "
                  f"{prof['gil_held_share']:.0%} of the wall time; the worker used {prof['process_cpu_cores']:.2f} "
                  "cores (gRPC's C core runs outside the GIL). Share of GIL-holding samples:", ""]
        lines += table(["where", "share"], [[name, f"{share:.0%}"] for name, share in prof["categories"].items()])
    lines += ["", "Servers: " + "; ".join(
        f"{s['workers']} worker(s), cache {'on' if s['cache'] else 'off'}: exit {s['exit_code']}, "
        f"{s['internal_errors_logged']} internal errors logged" for s in results["servers"]) + ".", ""]
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    workers = sorted({run["workers"] for run in results["open_loop"]})
    figure, axes = plt.subplots(1, len(workers), figsize=(6.5 * len(workers), 4.8), squeeze=False, sharey=True)
    styles = {"p50": ":", "p99": "-", "p99.9": "--"}
    colors = {"health": "tab:gray", "dedup": "tab:blue", "dedup cached": "tab:green"}
    for axis, count in zip(axes[0], workers):
        for endpoint, color in colors.items():
            runs = sorted((r for r in results["open_loop"] if r["workers"] == count and r["endpoint"] == endpoint),
                          key=lambda r: r["offered_rps"])
            if not runs:
                continue
            for name, style in styles.items():
                axis.plot([r["offered_rps"] for r in runs], [r["latency_ms"][name] for r in runs], style,
                          color=color, marker="o", markersize=3, label=f"{endpoint} {name}")
        axis.set_xscale("log")
        axis.set_yscale("log")
        rates = sorted({r["offered_rps"] for r in results["open_loop"] if r["workers"] == count})
        axis.set_xticks(rates, [str(rate) for rate in rates])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.set_title(f"{count} server process{'es' if count > 1 else ''}, open loop (h2load)")
        axis.set_xlabel("offered load, requests/s")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("latency, ms")
    axes[0][-1].legend(fontsize=7, ncol=3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
