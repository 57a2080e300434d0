"""Where the benchmarks' files are: this folder, the repository around it, results (out/) and data (data/)."""
from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]
ROOT = BENCHMARKS.parent
#: Results of the runs (git-ignored), unless a script's --out says otherwise.
OUT = BENCHMARKS / "out"
#: Word lists, templates and tables the corpus builders read (benchmarks/data/README.md).
DATA = BENCHMARKS / "data"
