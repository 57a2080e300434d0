"""Kinds of real text the development corpus never read, as a reviewer's held-out kinds would be (issue 38: on other
kinds of real text the served default no worse than the previous release's, and 60 answers reaching the best
peer), each built as the development family of its kind is:

  licences   the SPDX License List's texts (the `spdx` package: pip install spdx) that resemble no licence text of
             either split, their versions grouped by lineage and republished as the `derived` family's are
             (held_out.licences); `--known` keeps those that resemble the development corpus's licences
             too (other versions and wordings of licences it holds: no text of it, but kinds it was tuned on);
  templates  reference pages made from one template that no split reads, in three languages (OpenSSL's provider
             pages; dpkg's file-format and command pages in Portuguese and Swedish, languages no split reads),
             copied and mixed with those two languages' other pages as the `template` family's are
             (held_out.templates);
  rewrites   passages of 100-300 words in one of two English translations of the Bible made by hand centuries
             apart (King James, World English), two in three with the other translation too: a rewrite by people,
             15-45 % of the wording changed; the passages of one book (of the gospels, of the histories of the kings,
             which retell one another) are the distinct texts on one topic (held_out.rewrites).

    python -m benchmarks.heldout {licences,templates,rewrites} [--against REV] [--seeds 5 6 7] [--known]
                                 [--answers 30 60] [--out DIR]

Per seed, what answer_draws measures: neardup at the store's learned default, after 30 and 60 (or --answers) of
`neardup label`'s proposals answered from the truth (`neardup train --corpus`, re-indexing as it advises), at its
best threshold, and the best peer at its best threshold. With --against, the first seed's corpus is also indexed and
served by this checkout's and REV's own command lines, one Dedup per result set at each server's defaults
(served_quality).
Writes heldout_KIND[-known].json and .md.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.answer_draws import (add_answers_argument, answer_checkpoints, answers_option, columns, figures,
                                     header, row, spread)
from benchmarks.evaluate_families import StoreRun, counts_by_scope
from benchmarks.lib import ab, devcorpus, families, held_out, report
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS, ResultSet
from benchmarks.lib.quality_methods import MINHASH_SCORED
from benchmarks.lib.sources import SourceMissing
from benchmarks.served_quality import served
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import BOTTOMK_METRICS
from neardup.jobs.train import OTHER_STOPLISTS, reindex_options

DEFAULT_SEEDS = (5, 6, 7)
#: kind → its corpus of a seed (licences: and known=True for --known).
KINDS = {"licences": held_out.licences, "templates": held_out.templates, "rewrites": held_out.rewrites}
#: kind → the development family built as its corpus is, whose likeness its own is set beside.
FAMILY = {"licences": "derived", "templates": "template", "rewrites": "short"}
#: Distinct texts at least this alike (word 5-gram containment) are what a default threshold must tell from copies.
ALIKE = 0.5


#: The stop-lists (and sketch sizes) a store of texts can have, by the name reachable() reports: the store's own (what
#: `neardup index` learns), and each one `neardup train --corpus` may advise re-indexing a default store with.
STOPLISTS = {"store's": {}, **{name: reindex_options(SketchConfig(), name) for name in OTHER_STOPLISTS}}


def reachable(corpus: families.Corpus) -> dict:
    """Per stop-list (STOPLISTS), neardup's best F1 over the metrics and THRESHOLDS on the overall result sets (an
    oracle), with that metric and threshold: what answers could reach by choosing among them, so that a shortfall
    after answers reads as the sketches' or as the choice's."""
    sets = {"overall": [ResultSet.label(corpus.docs, indexes) for indexes in corpus.result_sets["overall"]]}
    best = {}
    with tempfile.TemporaryDirectory(prefix="heldout-reachable-") as work:
        for number, (stoplist, options) in enumerate(STOPLISTS.items()):
            (Path(work) / str(number)).mkdir()
            run = StoreRun(corpus, Path(work) / str(number), options)
            try:
                defaults = run.deduplicator.served.defaults
                found = []
                for metric in BOTTOMK_METRICS:
                    sweep = [dataclasses.replace(defaults, metric=metric, threshold=float(t)) for t in THRESHOLDS]
                    f1 = counts_by_scope(sets, lambda indexes: run.groups(indexes, sweep), len(THRESHOLDS))[
                        "overall"].f1()
                    at = int(np.argmax(f1))
                    found.append({"f1": float(f1[at]), "metric": metric, "threshold": float(THRESHOLDS[at])})
            finally:
                run.close()
            best[stoplist] = max(found, key=lambda figures: figures["f1"])
    return best


def likeness(corpus: families.Corpus) -> dict:
    """How alike the texts a default threshold must tell apart are. Where distinct texts share a template or lineage
    (a site): per original with another of its site, its largest word 5-gram containment with one. Where they do
    not (rewrites): per rewrite, the share of its word 5-grams its original holds. Their median, and the share at
    least ALIKE."""
    originals = {doc.group: doc for doc in corpus.docs if doc.family == "original"}
    if any(doc.site for doc in originals.values()):
        by_site: dict[str, list[set[str]]] = {}
        for doc in originals.values():
            if doc.site:
                by_site.setdefault(doc.site, []).append(devcorpus._shingles(doc.text))
        best = [max(len(mine & other) / max(1, min(len(mine), len(other))) for j, other in enumerate(texts) if j != i)
                for texts in by_site.values() if len(texts) > 1 for i, mine in enumerate(texts)]
    else:
        pairs = [(devcorpus._shingles(doc.text), devcorpus._shingles(originals[doc.group].text))
                 for doc in corpus.docs if doc.family == "rewrite"]
        best = [len(mine & original) / max(1, len(mine)) for mine, original in pairs]
    return {"texts": len(best), "median": float(np.median(best)) if best else 0.0,
            "alike": sum(value >= ALIKE for value in best) / len(best) if best else 0.0}


#: What likeness measures, per development family a kind is built as.
LIKENESS = {"derived": "How alike the distinct texts of one lineage are (each one's largest word 5-gram containment "
                       "with another",
            "template": "How alike the distinct texts of one template are (each one's largest word 5-gram "
                        "containment with another",
            "short": "How alike a rewrite is to its original (the share of its word 5-grams the original holds"}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--against", metavar="REV", help="also serve the first seed's corpus with this revision")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    parser.add_argument("--known", action="store_true",
                        help="licences: keep the texts that resemble the development corpus's")
    add_answers_argument(parser)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.known and args.kind != "licences":
        parser.error("--known applies to licences only")
    checkpoints = answer_checkpoints(parser, args.answers)
    started = time.perf_counter()
    try:
        sides = [ab.this_environment(), ab.install(args.against)] if args.against else []
        corpora = {seed: KINDS[args.kind](seed, **{"known": True} if args.known else {}) for seed in args.seeds}
    except (ab.RevisionError, SourceMissing) as error:
        raise SystemExit(f"heldout: {error}")
    draws = []
    for seed, corpus in corpora.items():
        draws.append({**figures(corpus, seed, checkpoints), "reachable": reachable(corpus)})
        print(f"  seed {seed}: {len(corpus.docs)} documents, " + ", ".join(
            f"{column} {draws[-1][column]:.3f}" for column in columns(checkpoints))
            + f", peer {draws[-1]['peer f1']:.3f}", file=sys.stderr)
    similar = {"held-out": likeness(corpora[args.seeds[0]]),
               **{split: likeness(families.build(FAMILY[args.kind], split)) for split in ("test", "tune")}}
    servers = {}
    if sides:
        first = corpora[args.seeds[0]]
        with tempfile.TemporaryDirectory(prefix=f"heldout-{args.kind}-") as work:
            source = first.write_jsonl(Path(work) / f"{args.kind}.jsonl")
            for number, side in enumerate(sides):
                servers[side.label] = served(side.neardup, source, first, Path(work) / f"{number}.store")
    command = " ".join(["python -m benchmarks.heldout", args.kind,
                        *(["--against", args.against] * bool(args.against)), "--seeds", *map(str, args.seeds),
                        *["--known"] * args.known]) + answers_option(checkpoints)
    output = {"command": command, "kind": args.kind, "seeds": args.seeds, "answer_checkpoints": checkpoints,
              "documents": {s: len(c.docs) for s, c in corpora.items()},
              "draws": draws, "likeness": similar, "served": servers,
              "sides": {side.label: side.describe() for side in sides},
              "seconds": round(time.perf_counter() - started, 1)}
    text = markdown(output)
    stem = f"heldout_{args.kind}" + "-known" * args.known
    report.save(args.out, stem, output, text)
    print(text + f"\nwrote {args.out / stem}.json, .md ({output['seconds']:.0f} s)")
    return output


def markdown(output: dict) -> str:
    draws = output["draws"]
    lines = [f"Measured with `{output['command']}` ({output['seconds']:.0f} s, Python {sys.version.split()[0]}; "
             f"{min(output['documents'].values())}–{max(output['documents'].values())} documents a draw).", "",
             "F1, mean [min–max] over the draws: neardup at the store's learned default (the thresholds learned: "
             "lowest–highest), after a user's answers, at its best threshold (an oracle), and the best peer of each "
             f"draw at its best threshold ({MINHASH_SCORED}).", "",
             *report.table(header(output["answer_checkpoints"]), [row(draws, output["answer_checkpoints"])]), "",
             "What train chose per draw: " + "; ".join(
                 f"seed {d['seed']}: " + ", ".join(f"{count} answers {setting}" for count, setting in
                                                   d["trained"].items()) for d in draws) + "."]
    if all("reachable" in draw for draw in draws):
        lines += ["", "At its best threshold (an oracle), with each stop-list a store can have and its best metric: "
                  "what the answers could reach by choosing among them (F1, mean [min–max] over the draws; the "
                  "best peer of each draw beside them):", "",
                  *report.table(["stop-list", "best F1", "metrics chosen", "draws at or above the peer"],
                                [[name, spread([d["reachable"][name]["f1"] for d in draws]),
                                  ", ".join(sorted({d["reachable"][name]["metric"] for d in draws})),
                                  f"{sum(d['reachable'][name]['f1'] >= d['peer f1'] for d in draws)} of {len(draws)}"]
                                 for name in STOPLISTS])]
    if "likeness" in output:
        similar, family = output["likeness"], FAMILY[output["kind"]]
        lines += ["", f"{LIKENESS[family]}, seed {output['seeds'][0]}): median "
                  f"{similar['held-out']['median']:.2f}, {similar['held-out']['alike']:.0%} at least {ALIKE} "
                  f"({similar['held-out']['texts']} texts); the development `{family}` family's: test split "
                  f"{similar['test']['median']:.2f} ({similar['test']['alike']:.0%}), tune split "
                  f"{similar['tune']['median']:.2f} ({similar['tune']['alike']:.0%})."]
    if output["served"]:
        lines += ["", f"Served at each build's defaults (seed {output['seeds'][0]}'s corpus, one Dedup per result "
                  "set, each side's own `neardup index` and `neardup serve`):", "",
                  *report.table(["build", "F1 (precision / recall)", "threshold"],
                                [[output['sides'][label],
                                  f"{f['f1']:.3f} ({f['precision']:.2f} / {f['recall']:.2f})",
                                  f"{f['metric']} {f['threshold']:.4g}"] for label, f in output["served"].items()])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
