"""Service defaults, chosen by measured F1 on the development corpus (benchmarks/QUALITY.md, reproduced by
`python benchmarks/evaluate.py`; seed 7, 1416 documents, 440 result sets of ~100).

With the default sketch (para-sentence shingles, K = 64, min_word_len 1, stop-list learned by `neardup index`),
containment reaches F1 0.968 overall at 0.67–0.70; below 2/3 template variants with one city or date changed
start to group (F1 0.90 at 0.61), above 0.71 recall falls. 0.68 sits inside that plateau, clear of the 2/3 step
that short documents produce. Jaccard peaks at 0.91: excerpts and truncated copies need containment.
"""
DEFAULT_THRESHOLD: float = 0.68
DEFAULT_METRIC: str = "containment"
DEFAULT_GROUPING: str = "greedy"
