"""What corpus search's postings cost a store: Upsert rate with postings on and off, and the index's bytes per article
against the sketches', at 100K and 1M generated articles (lib/similar_corpus.py).

    python -m benchmarks.bench_similar_upsert [--quick] [--sizes 100000 1000000] [--plain 100000] [--out DIR]
        [--dir DIR]

The corpus is written in put_many batches of 50,000 articles into a store with postings (indexed=True) and, for its
first --plain articles, into one without. At each size: disk_usage's pages of the index (docnos, ids, postings) per
article and against the sketches', the postings' entries and the longest and shortest postings of the 30 hot values
(how many over the search's HOT_POSTINGS). Writes bench_similar_upsert.json and .md in --out (also printed). Issue
11's goal, reported, never asserted: the index at most 2x the sketch bytes. The other corpus-search measurements
are bench_similar_server, _engine, _recall, _pairs and _lsh.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.lib import similar_run
from benchmarks.lib.report import table
from benchmarks.lib.similar_corpus import HOT_BELOW, hot_values
from neardup.core.candidates import HOT_POSTINGS

GOAL_INDEX_RATIO = 2.0


def index_size(state: similar_run.Built, size: int) -> dict:
    """The store's index and sketch bytes at `size` articles, and the hot values' postings."""
    row: dict = {"articles": size}
    usage = state.store.disk_usage()
    row["disk_usage"] = usage
    row["data_mdb_bytes"] = (state.store_path / "data.mdb").stat().st_size
    row["sketch_payload_bytes_per_article"] = sum(map(len, state.corpus.sketches[:size])) / size
    row["index_bytes_per_article"] = usage["index"] / size
    row["sketches_bytes_per_article"] = usage["sketches"] / size
    row["index_to_sketches"] = usage["index"] / usage["sketches"]
    values = np.frombuffer(b"".join(state.corpus.sketches[:size]), "<u4")
    row["postings_entries"] = int(len(values))
    small = values[values < HOT_BELOW]
    postings = np.array([int((small == v).sum()) for v in hot_values()])
    row["hot_postings"] = {"longest": int(postings.max()), "shortest": int(postings.min()),
                           "over_HOT_POSTINGS": int((postings > HOT_POSTINGS).sum()), "HOT_POSTINGS": HOT_POSTINGS}
    row["writes"] = [w for w in state.writes if w["before"] < size]
    return row


def measured(plan: similar_run.Plan, work: Path) -> dict:
    rows = []
    plain_size = min(max(plan.sizes), plan.plain)
    for size, state in similar_run.corpus_sizes(plan, work):
        row = index_size(state, size)
        if size == plain_size and state.plain_usage:
            row["without_postings_disk_usage"] = state.plain_usage
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "writes": state.writes,
            "plain_writes": state.plain_writes, "phases": state.phases, "corpus": state.corpus_summary(),
            "goals": goals(rows)}


def goals(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        ratio = row["index_to_sketches"]
        found.append({"goal": f"{row['articles']:,}: index <= {GOAL_INDEX_RATIO:g} x the sketches' bytes",
                      "measured": f"{row['index_bytes_per_article']:.0f} vs {row['sketches_bytes_per_article']:.0f}"
                                  f" bytes/article = {ratio:.2f} x", "met": ratio <= GOAL_INDEX_RATIO})
    return found


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: what postings cost (Upsert, index bytes)")
    lines += ["", "### Index size", ""]
    lines += table(["articles", "sketches bytes/article", "index bytes/article", "index / sketches",
                    "postings entries", "hot postings (articles)"],
                   [[f"{row['articles']:,}", f(row["sketches_bytes_per_article"], 0),
                     f(row["index_bytes_per_article"], 0), f(row["index_to_sketches"]),
                     f"{row['postings_entries']:,}",
                     f"{row['hot_postings']['shortest']:,}–{row['hot_postings']['longest']:,}"]
                    for row in results["rows"]])
    lines += ["", "Upsert (put_many batches of 50,000 articles):", ""]
    rows = [["postings on", f"{w['before']:,}", f"{w['seconds']:.1f}", f(w["articles_per_s"], 0)]
            for w in results["writes"]]
    rows += [["postings off", f"{w['before']:,}", f"{w['seconds']:.1f}", f(w["articles_per_s"], 0)]
             for w in results["plain_writes"]]
    lines += table(["store", "articles before the batch", "seconds", "articles/s"], rows)
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = similar_run.parser(__doc__)
    parser.add_argument("--plain", type=int, default=100_000,
                        help="articles also written to a store without postings")
    args = parser.parse_args(argv)
    plan = similar_run.plan_of(args, parser, plain=args.plain)
    similar_run.run("bench_similar_upsert", args, lambda work: measured(plan, work),
                    markdown)


if __name__ == "__main__":
    main()
