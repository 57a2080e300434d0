"""Markdown for the benchmark reports: tables whose number columns line up, and the latency cells they share."""
from __future__ import annotations

import json
import re
from pathlib import Path

_NUMBER = re.compile(r"^[\d.,—%× -]+$")


def ms(value: float | None) -> str:
    """A latency in ms with two decimals; — when there is none (no request was measured)."""
    return "—" if value is None else f"{value:.2f}"


def latency_cells(latency: dict, names=("p50", "p90", "p99", "p99.9")) -> list[str]:
    """The chosen percentiles of a measure.percentiles_ms dict, as table cells."""
    return [ms(latency[name]) for name in names]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Markdown lines; columns after the first that hold numbers are right-aligned."""
    numeric = [i > 0 and all(_NUMBER.match(row[i]) for row in rows) for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def save(out: Path, stem: str, results: dict | list, text: str) -> None:
    """Writes a run's results as out/stem.json and its report as out/stem.md."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(text, encoding="utf-8")
