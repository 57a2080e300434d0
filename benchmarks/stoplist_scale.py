"""Boilerplate by diversity at scale: a popular story is never stop-listed, a site's header is.

Two corpora of real text (lib/sources.py), each indexed by the product (`index_corpus`, default options):

* popular — one news story republished COPIES times (edits.republish: edits over the whole text, new headlines,
  site boilerplate, truncation, lost punctuation...) among OTHERS other real articles. A result set of 100 of its
  copies is grouped as the server groups it (Deduplicator, the store's defaults): how many are marked duplicate.
  The same corpus under the count rule (every holder of a shingle counted as a distinct text: --stop-own-share 0,
  --stop-min-docs 50, --stop-fraction 0.01: the stop-list before diversity) for comparison.
* header — ARTICLES distinct articles (each a mix of real sentences), PAGES of which carry one site's header and
  footer: are all of the header's shingles stop-listed, and none of a page's own sentences?

    python -m benchmarks.stoplist_scale [--copies 500] [--others 2000] [--articles 200000] [--pages 1000]

writes benchmarks/out/stoplist_scale.json and .md.
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from benchmarks.lib import devcorpus, edits, sources
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from neardup.core import kernel
from neardup.core.sketcher import Sketcher
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.served_store import ServedStore
from neardup.jobs.index import IndexOptions, index_corpus
from neardup.store import open_store

COUNT_RULE = {"stop_own_share": 0.0, "stop_fraction": 0.01, "stop_min_docs": 50}
FAMILIES = ("edit", "headline", "truncate", "boilerplate", "unpunctuated", "combined", "format")


def _write(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")


def popular(copies: int, others: int, seed: int, workdir: Path) -> dict:
    rng = random.Random(seed)
    english = [s for s in devcorpus.load_sources("test") if s.lang == "en" and sources.words(s.text) >= 150]
    stories = [s for s in english if s.collection == "news"]
    story = rng.choice(stories)
    pool = [s for s in english if s.key != story.key]
    sites = edits.news_sites(rng)
    records = [{"id": f"copy-{n}", "text": edits.republish(
        story.text, "en", rng.choice(FAMILIES), rng.choice([s for s in sites if s.lang == "en"]), rng)[0]}
        for n in range(copies)]
    records += [{"id": f"other-{n}", "text": rng.choice(pool).text if n < len(pool) else
                 " ".join(rng.choice(pool).text.split(". ")[rng.randrange(3):][:12])} for n in range(others)]
    rng.shuffle(records)
    corpus = workdir / "popular.jsonl"
    _write(corpus, records)
    result_set = [f"copy-{n}" for n in rng.sample(range(copies), min(100, copies))]
    runs = {}
    for rule, options in (("diversity (default)", {}), ("count (before)", COUNT_RULE)):
        store_path = workdir / f"popular-{len(runs)}"
        summary = index_corpus(str(corpus), str(store_path), IndexOptions(workers=2, **options))
        with open_store(store_path, readonly=True) as store:
            engine = Deduplicator(ServedStore(store))
            outcome = engine.dedup_ids(result_set, engine.served.defaults)
            story_hashes = Sketcher(store.config, store.stoplist).hashes(story.text)
            runs[rule] = {"stoplist_size": summary.stoplist_size, "popular_kept": summary.popular_kept,
                          "story_shingles_stoplisted": len(story_hashes & store.stoplist) / len(story_hashes),
                          "marked_duplicate": sum(d >= 0 for d in kernel.unpack(outcome.packed_grouping).duplicate_of),
                          "threshold": engine.served.defaults.threshold}
    return {"copies": copies, "others": others, "result_set": len(result_set), "story": story.key, "runs": runs}


def header(articles: int, pages: int, seed: int, workdir: Path) -> dict:
    rng = random.Random(seed)
    sentences = [sentence for s in devcorpus.load_sources("test") if s.lang == "en"
                 for sentence in edits.split_sentences(s.text) if 8 <= len(sentence.split()) <= 40]
    site = next(s for s in edits.news_sites(rng) if s.lang == "en")
    on_site = set(rng.sample(range(articles), pages))
    started = time.monotonic()
    corpus = workdir / "header.jsonl"
    with corpus.open("w", encoding="utf-8") as stream:
        for n in range(articles):
            body = " ".join(rng.sample(sentences, rng.randrange(6, 13)))
            text = "\n".join([*site.header, body, *site.footer]) if n in on_site else body
            stream.write(json.dumps({"id": f"a-{n}", "text": text}, ensure_ascii=False) + "\n")
    summary = index_corpus(str(corpus), str(workdir / "header"), IndexOptions(workers=2))
    with open_store(workdir / "header", readonly=True) as store:
        sketcher = Sketcher(store.config, store.stoplist)
        boilerplate = sketcher.hashes("\n".join(site.header)) | sketcher.hashes("\n".join(site.footer))
        found = len(boilerplate & store.stoplist)
    return {"articles": articles, "pages": pages, "share": pages / articles, "header_shingles": len(boilerplate),
            "header_shingles_stoplisted": found, "stoplist_size": summary.stoplist_size,
            "popular_kept": summary.popular_kept, "index_seconds": summary.elapsed,
            "stoplist_seconds": summary.learned - summary.sketched,
            "seconds": time.monotonic() - started}


def report(results: dict) -> str:
    p, h = results["popular"], results["header"]
    lines = ["## Boilerplate by diversity at scale", "",
             f"*`python -m benchmarks.stoplist_scale --copies {p['copies']} --others {p['others']} --articles "
             f"{h['articles']} --pages {h['pages']}`*", "",
             f"**A popular story**: one news story republished {p['copies']} times among {p['others']} other "
             f"articles; a result set of {p['result_set']} of its copies, grouped at the store's default.", "",
             *table(["stop-list rule", "stop-list size", "frequent shingles kept", "story shingles stop-listed",
                     "marked duplicate", "threshold"],
                    [[rule, f"{run['stoplist_size']:,}", f"{run['popular_kept']:,}",
                      f"{run['story_shingles_stoplisted']:.1%}", f"{run['marked_duplicate']} of "
                      f"{p['result_set'] - 1}", f"{run['threshold']:.2f}"] for rule, run in p["runs"].items()]),
             "", f"**A site header**: {h['pages']:,} pages ({h['share']:.1%}) of {h['articles']:,} articles carry "
             f"one site's header and footer: {h['header_shingles_stoplisted']} of {h['header_shingles']} of its "
             f"shingles stop-listed (stop-list {h['stoplist_size']:,}; indexed in {h['index_seconds']:.0f} s "
             f"with 2 workers, of which {h['stoplist_seconds']:.1f} s learning the stop-list).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=500)
    parser.add_argument("--others", type=int, default=2000)
    parser.add_argument("--articles", type=int, default=200_000)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        results = {"popular": popular(args.copies, args.others, args.seed, Path(workdir)),
                   "header": header(args.articles, args.pages, args.seed, Path(workdir))}
    text = report(results)
    save(OUT, "stoplist_scale", results, text)
    print(text)


if __name__ == "__main__":
    main()
