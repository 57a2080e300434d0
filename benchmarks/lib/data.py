"""Reads the benchmarks' data files (benchmarks/data/): JSON documents, each parsed once per process."""
from __future__ import annotations

import functools
import json

from benchmarks.lib.paths import DATA


@functools.lru_cache(maxsize=None)
def load_json(name: str):
    """The parsed JSON of benchmarks/data/NAME (e.g. "jobads/sites.json"). Callers turn it into their own types
    and must not change what it returns (it is shared)."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))
