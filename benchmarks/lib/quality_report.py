"""The detection-quality report of the edit families (quality-SPLIT.md, the "edit families" part of
benchmarks/QUALITY.md): per method its best threshold and its figures at its default, the margins of neardup's
default over the baselines overall and per scope, neardup's SimHash per Hamming distance, and the precision/recall
curves as a plot."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.lib.quality_counts import NEGATIVE_KINDS, SIMHASH_EXACT_BITS, THRESHOLDS, Counts
from benchmarks.lib.quality_methods import Method
from neardup.core import reference, vocabulary


def _at(threshold: float) -> int:
    return int(np.flatnonzero(np.isclose(THRESHOLDS, threshold))[0])


def summary(method: Method, counts: dict[str, Counts]) -> dict:
    """Best overall threshold, each scope's own best, and the figures at the method's default threshold."""
    overall = counts["overall"]
    best = int(np.argmax(overall.f1()))
    at = _at(method.default_threshold) if method.default_threshold is not None else best

    def figures(index: int) -> dict:
        return {"threshold": float(THRESHOLDS[index]), "precision": float(overall.precision()[index]),
                "recall": float(overall.recall()[index]), "f1": float(overall.f1()[index]),
                "scopes": {scope: float(c.f1()[index]) for scope, c in counts.items() if scope != "overall"},
                "negatives_grouped": {kind: float(overall.negatives_grouped[kind][index]
                                                  / max(1, overall.negatives[kind])) for kind in NEGATIVE_KINDS}}

    scope_best = {scope: {"threshold": float(THRESHOLDS[int(np.argmax(c.f1()))]), "f1": float(np.max(c.f1()))}
                  for scope, c in counts.items() if scope != "overall"}
    return {"name": method.name, "default": figures(at), "best": figures(best), "scope_best": scope_best,
            "curve": {"threshold": THRESHOLDS.tolist(), "precision": overall.precision().tolist(),
                      "recall": overall.recall().tolist(), "f1": overall.f1().tolist()},
            "negatives_grouped_curve": {kind: (overall.negatives_grouped[kind] / max(1, overall.negatives[kind])
                                               ).tolist() for kind in NEGATIVE_KINDS}}


def margins(default: dict, baselines: list[dict], oracle: bool = True) -> dict[str, float]:
    """neardup's F1 at its default minus the best baseline's F1, overall and per scope: the issue's bar is a
    margin >= 0 everywhere. Per scope, each baseline is read at that scope's own best threshold (oracle) or at
    its one best overall threshold, as a service would run it."""
    def baseline_f1(b: dict, scope: str) -> float:
        return b["scope_best"][scope]["f1"] if oracle else b["best"]["scopes"][scope]

    result = {scope: default["default"]["scopes"][scope] - max(baseline_f1(b, scope) for b in baselines)
              for scope in default["default"]["scopes"]}
    result["overall"] = default["default"]["f1"] - max(b["best"]["f1"] for b in baselines)
    return result


def _simhash_distance_f1(row: dict, distance: int) -> tuple[float, float, float, int]:
    """Precision, recall and F1 of a SimHash row at a Hamming distance, and the index of its threshold."""
    curve = row["curve"]
    i = max(i for i, t in enumerate(THRESHOLDS) if reference.max_distance(float(t)) == distance)
    return curve["precision"][i], curve["recall"][i], curve["f1"][i], i


def markdown(default: dict, baselines: list[dict], explored: list[dict], command: str, corpus_note: str,
             simhash: dict | None = None, weightings: list[dict] | None = None) -> str:
    """The report; `simhash`, neardup's SimHash sketch, is shown beside the baselines (at its best threshold, and
    per distance in a table of its own) but is no baseline: the margins are over the baselines only.
    `weightings`: SimHash under each shingle weighting (--explore)."""
    lines = [f"Measured with `{command}` ({corpus_note}).", "",
             "**Overall** (mixed result sets): neardup at its default threshold; each baseline at its own best "
             "threshold. *Grouped*: the share of hard-negative pairs put in one group — template variants (left "
             "out of F1: near-duplicates as text), pages of one site, sections of one article, a text and one that "
             "quotes a passage of it.", "",
             "| method | threshold | precision | recall | F1 | grouped: template | site | topic | quote |",
             "|---|---|---|---|---|---|---|---|---|"]
    others = baselines + ([simhash] if simhash else [])
    for row, figures in [(default, default["default"])] + [(b, b["best"]) for b in others]:
        neg = figures["negatives_grouped"]
        lines.append(f"| {row['name']} | {figures['threshold']:.2f} | {figures['precision']:.3f} | "
                     f"{figures['recall']:.3f} | **{figures['f1']:.3f}** | {neg['template']:.1%} | "
                     f"{neg['site']:.1%} | {neg['topic']:.1%} | {neg['quote']:.1%} |")
    margin = margins(default, baselines)
    lines += ["", "**Per scope** (F1 on result sets whose duplicates all come from one edit family, edit rate, "
              "length of the original or language; hard negatives included). neardup at its one default "
              "threshold; each baseline at *that scope's own* best threshold (an oracle no service has), shown as "
              "F1@threshold.", "",
              "| scope | " + " | ".join([default["name"]] + [b["name"] for b in others]) + " | margin |",
              "|---|" + "---|" * (len(others) + 2)]
    for scope in default["default"]["scopes"]:
        lines.append(f"| {scope} | **{default['default']['scopes'][scope]:.3f}** | " + " | ".join(
            f"{b['scope_best'][scope]['f1']:.3f}@{b['scope_best'][scope]['threshold']:.2f}" for b in others)
            + f" | {margin[scope]:+.3f} |")
    worst = min(margin, key=margin.get)
    served = margins(default, baselines, oracle=False)
    served_worst = min(served, key=served.get)
    lines += ["", f"Overall margin over the best baseline's best threshold: {margin['overall']:+.3f}; smallest "
              f"margin: {worst} {margin[worst]:+.3f} (baselines at each scope's own best threshold), "
              f"{served_worst} {served[served_worst]:+.3f} (baselines at their one best overall threshold)."]
    if simhash:
        default_bits = reference.max_distance(vocabulary.SIMHASH_THRESHOLD)
        lines += ["", f"**{simhash['name']}** — a store made by `neardup index --sketch simhash` (the default's "
                  "shingles and stop-list, one 64-bit fingerprint per text, each shingle weighing 1 + ln of its "
                  "count in the text): overall, per Hamming distance allowed (threshold t allows 64 − ⌈64 t⌉ bits; "
                  f"a simhash store's default, {vocabulary.SIMHASH_THRESHOLD:g} = {64 - default_bits}/64, allows "
                  f"{default_bits}; its corpus search reads permutation tables up to {SIMHASH_EXACT_BITS} bits and "
                  "scans every fingerprint past that, exact either way), and per scope at its one best overall "
                  "threshold. It sits beside the baselines above but is none: the margins are "
                  "over the baselines only.", "",
                  "| max distance (bits) | threshold | precision | recall | F1 | grouped: template | site | topic | "
                  "quote |", "|---|---|---|---|---|---|---|---|---|"]
        best = simhash["best"]
        best_bits = reference.max_distance(best["threshold"])
        for distance in sorted({0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, default_bits, best_bits}):
            if not any(reference.max_distance(float(t)) == distance for t in THRESHOLDS):
                continue
            precision, recall, f1, i = _simhash_distance_f1(simhash, distance)
            neg = simhash["negatives_grouped_curve"]
            marks = [mark for mark, bits in (("default", default_bits), ("best", best_bits),
                                             ("table search", SIMHASH_EXACT_BITS)) if distance == bits]
            mark = f" ({', '.join(marks)})" if marks else ""
            lines.append(f"| {distance}{mark} | {(64 - distance) / 64:.4f} | {precision:.3f} | "
                         f"{recall:.3f} | **{f1:.3f}** | {neg['template'][i]:.1%} | "
                         f"{neg['site'][i]:.1%} | {neg['topic'][i]:.1%} | {neg['quote'][i]:.1%} |")
        scopes = best["scopes"]
        lines += ["", "Per scope at its best threshold: " + ", ".join(f"{scope} {f1:.3f}"
                                                                       for scope, f1 in scopes.items()) + "."]
    if weightings:
        lines += ["", "**SimHash shingle weightings explored** (the same shingles and stop-list; a shingle votes "
                  "with 1, its count tf in the text, or 1 + ln tf: reference.shingle_weight), each at its own best "
                  "overall threshold, and at 3 bits.", "",
                  "| weighting | best threshold (bits) | precision | recall | F1 | F1 at 3 bits |",
                  "|---|---|---|---|---|---|"]
        for row in weightings:
            best = row["best"]
            lines.append(f"| {row['name'].rsplit(' weight ', 1)[-1]} | {best['threshold']:.4f} "
                         f"({reference.max_distance(best['threshold'])}) | {best['precision']:.3f} | "
                         f"{best['recall']:.3f} | **{best['f1']:.4f}** | "
                         f"{_simhash_distance_f1(row, SIMHASH_EXACT_BITS)[2]:.3f} |")
    if explored:
        lines += ["", "**neardup configurations explored** (each at its own best overall threshold; the worst "
                  "scope's F1 at that same threshold, and the worst margin over the baselines' per-scope best if "
                  "that threshold were the default).", "",
                  "| configuration | best threshold | F1 overall | worst scope (F1) | worst margin |",
                  "|---|---|---|---|---|"]
        for row in explored:
            scopes = row["best"]["scopes"]
            low = min(scopes, key=scopes.get)
            as_default = margins({"default": row["best"]}, baselines)
            low_margin = min(as_default, key=as_default.get)
            lines.append(f"| {row['name']} | {row['best']['threshold']:.2f} | {row['best']['f1']:.3f} | "
                         f"{low} ({scopes[low]:.3f}) | {low_margin} ({as_default[low_margin]:+.3f}) |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.5))
    for row in rows:
        curve = row["curve"]
        line, = ax.plot(curve["recall"], curve["precision"], label=row["name"], linewidth=1.4)
        point = row["default"]
        ax.plot([point["recall"]], [point["precision"]], "o", color=line.get_color())
    ax.set_xlabel("recall (pairs)")
    ax.set_ylabel("precision (pairs)")
    ax.set_title("Near-duplicate pairs over a threshold sweep (dots: default / best threshold)")
    ax.set_xlim(0.4, 1.0)
    ax.set_ylim(0.4, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
