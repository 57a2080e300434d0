"""Where a busy worker's Python time goes: py-spy samples of the GIL-holding thread of one `neardup serve` worker
under h2load's closed-loop Dedup load, grouped by request-path stage (the harness's profile section)."""
from __future__ import annotations

import linecache
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import neardup
from benchmarks.lib import load, measure
from tests.server_process import Server

_NEARDUP_DIR = Path(neardup.__file__).resolve().parent


def _frame_category(frame: str) -> str | None:
    """The request-path stage a py-spy frame "function (path:line)" belongs to; None outside neardup.
    A servicer frame that is the innermost neardup frame runs C code on its line: its source says which."""
    match = re.match(r"(.*) \((.*):(\d+)\)$", frame)
    if match is None or not match.group(2).startswith("neardup/"):
        return None
    function, path, line = match.group(1), match.group(2), int(match.group(3))
    source = linecache.getline(str(_NEARDUP_DIR.parent / path), line)
    if path.endswith("core/kernel.py"):
        return "kernel"
    if path.endswith("view.py") or "/store/" in path:
        return "sketch gather (view, LMDB)"
    if path.endswith(("cache.py", "changefeed.py")) or "self.cache." in source or "self.feed." in source:
        return "change feed + session cache"
    if function in ("_decode", "dedup_params") or "FromString" in source or "request.ids" in source:
        return "request decode (message, ids to str)"
    if function == "dedup_response" or "SerializeToString" in source:
        return "response encode"
    if path.endswith("deduplicator.py"):
        return "engine checks (ids, missing, read set)"
    return "servicer (other)"


def profile(server: Server, endpoint: load.Endpoint, plan, out: Path) -> dict:
    """py-spy samples of the GIL-holding thread of one worker under closed-loop Dedup load (`plan`: the harness's
    Plan, for the seconds to profile); the raw folded stacks go to out/harness_profile.txt.

    Only the GIL holder runs Python, so the samples say where Python time goes; their count against the
    sampling rate says how much of the wall time anything held the GIL at all. py-spy pauses the process for
    each sample (consistent stacks; --nonblocking tears them), which costs the server a little throughput."""
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        return {"skipped": "py-spy not installed (pip install py-spy)"}
    rate_hz, raw = 200, out / "harness_profile.txt"
    generator = subprocess.Popen(
        load.h2load_command(server.target, endpoint, plan.profile_seconds + 2, load.CLOSED_CONNECTIONS,
                            load.CLOSED_STREAMS), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1)
        cpu_before = measure.tree_cpu_seconds(server.process.pid)
        recorded = subprocess.run(
            [py_spy, "record", "--pid", str(server.process.pid), "--duration", str(plan.profile_seconds),
             "--rate", str(rate_hz), "--gil", "--format", "raw", "--output", str(raw)],
            capture_output=True, text=True, timeout=plan.profile_seconds + 60)
        cpu = measure.tree_cpu_seconds(server.process.pid) - cpu_before
    finally:
        load_output = generator.communicate(timeout=plan.profile_seconds + 60)[0]
    if recorded.returncode != 0 or not raw.exists():
        return {"skipped": f"py-spy failed: {recorded.stderr.strip()[-300:]}"}
    finished = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", load_output)
    shares: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        category = next((c for c in map(_frame_category, reversed(frames)) if c is not None), None)
        if category is None:
            category = "gRPC server (Python side: call state, thread pool)" \
                if any("grpc/" in f or "concurrent/futures" in f for f in frames) else "other Python"
        shares[category] = shares.get(category, 0) + int(count)
    samples = sum(shares.values())
    return {
        "tool": f"py-spy record --gil --rate {rate_hz}, {plan.profile_seconds} s, 1 worker",
        "load": f"h2load closed loop, {load.CLOSED_CONNECTIONS} connections x {load.CLOSED_STREAMS} streams, "
                "Dedup uncached",
        "rps": float(finished.group(2)) if finished else None,
        "samples": samples, "gil_held_share": samples / (rate_hz * plan.profile_seconds),
        "process_cpu_cores": cpu / plan.profile_seconds,
        "categories": {name: count / samples for name, count in sorted(shares.items(), key=lambda kv: -kv[1])},
        "raw": raw.name,
    }
