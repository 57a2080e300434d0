"""How much text the pairs of a job-ad set share: word 3-gram Jaccard per relation kind and language, and the
markdown report of counts and quartiles (jobads.md's table)."""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter, defaultdict

from benchmarks.lib.jobads.model import JobAds
from benchmarks.lib.jobads.pairs import KINDS
from benchmarks.lib.jobads.world import LANGS

_WORD = re.compile(r"\w+")


def word3(text: str) -> set[str]:
    """The set of lowercased word 3-grams of a text."""
    words = _WORD.findall(text.lower())
    return {" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def overlaps(data: JobAds) -> dict[tuple[str, str], list[float]]:
    """(kind, lang) → word 3-gram Jaccard of each pair's texts."""
    by_id = {item["id"]: item for item in data.items}
    cache: dict[str, set] = {}

    def grams(doc_id: str) -> set:
        if doc_id not in cache:
            cache[doc_id] = word3(by_id[doc_id]["text"])
        return cache[doc_id]

    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for pair in data.pairs:
        out[pair["kind"], by_id[pair["a"]]["lang"]].append(jaccard(grams(pair["a"]), grams(pair["b"])))
    return out


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (math.nan,) * 3
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def report(data: JobAds, split: str) -> str:
    """Counts per kind and language and the word 3-gram Jaccard quartiles, as markdown."""
    items = data.items
    by_lang = Counter(item["lang"] for item in items)
    group_sizes = Counter(item["group"] for item in items)
    grouped = sum(1 for item in items if group_sizes[item["group"]] > 1)
    lines = [f"{split}: {len(items)} items ({', '.join(f'{lang} {n}' for lang, n in sorted(by_lang.items()))}), "
             f"{len({i['company'] for i in items})} companies, {len(group_sizes)} openings, "
             f"{grouped} items ({grouped / max(1, len(items)):.0%}) in a group of two or more; {len(data.pairs)} pairs",
             "", "| kind | duplicate | lang | pairs | Jaccard q1 | median | q3 | < 0.5 | > 0.6 |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    stats = overlaps(data)
    for kind in KINDS:
        for lang in LANGS:
            values = stats.get((kind, lang), [])
            if not values:
                lines.append(f"| {kind} | {KINDS[kind]} | {lang} | 0 | | | | | |")
                continue
            q1, q2, q3 = quartiles(values)
            low = sum(v < 0.5 for v in values) / len(values)
            high = sum(v > 0.6 for v in values) / len(values)
            lines.append(f"| {kind} | {KINDS[kind]} | {lang} | {len(values)} | {q1:.2f} | {q2:.2f} | {q3:.2f} | "
                         f"{low:.0%} | {high:.0%} |")
    return "\n".join(lines)

