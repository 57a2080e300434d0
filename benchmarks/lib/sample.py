"""The sample corpora: a fixed cut of the development corpus, so a newcomer indexes the same texts on every machine
whatever is installed, with one realistic search result set at its head; and a sample of items with fields, job ads
of the labelled job-ad set with the schema they are indexed by, to try `neardup index --fields`, `neardup label`
and `neardup train` on.

Only texts the project may ship go in: the Lee corpus's news stories and Wikipedia sections from gensim's test
data, and the job-ad templates the corpus builder writes itself; each with its republished copies (a new header, a
shortened ending, edited words) and the hard negatives among them. The job ads are invented by their own builder
(benchmarks/lib/jobads), reposts and hard negatives among them.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from benchmarks.lib import jobads
from benchmarks.lib.devcorpus import Doc, generate
from benchmarks.lib.jobads.fields import SCHEMA, items_with_fields

#: Collections of real texts the sample takes (benchmarks.lib.sources), plus the builder's own templates.
SHIPPABLE = ("news", "encyclopedia", "templates")
#: The head of the file: one result set of this many news results, this share of them copies of a story above.
RESULT_SET, DUPLICATE_SHARE = 100, 0.3
SEED = 11
#: The items sample: this many job ads of the job-ad set's tune split (the split no figure is reported on).
ITEMS_SPLIT, ITEMS_SIZE = "tune", 600


def _result_set(docs: list[Doc], rng: random.Random) -> list[Doc]:
    """RESULT_SET news documents in rank order: originals, each copy placed after the story it copies."""
    news = [doc for doc in docs if doc.source == "news"]
    groups: dict[str, list[Doc]] = {}
    for doc in news:
        groups.setdefault(doc.group, []).append(doc)
    copies_wanted = round(RESULT_SET * DUPLICATE_SHARE)
    ranked, copies = [], 0
    for members in rng.sample(list(groups.values()), len(groups)):
        if len(ranked) >= RESULT_SET:
            break
        original = next((doc for doc in members if doc.family == "original"), members[0])
        extra = [doc for doc in members if doc is not original][:max(0, copies_wanted - copies)]
        extra = extra[:RESULT_SET - len(ranked) - 1]
        ranked.append(original)
        for copy in extra:  # a copy ranks below its story, a few places or many
            ranked.insert(rng.randint(ranked.index(original) + 1, len(ranked)), copy)
        copies += len(extra)
    return ranked[:RESULT_SET]


def build() -> list[dict]:
    """The sample's records ({"id", "text", "lang"}), in file order."""
    rng = random.Random(SEED)
    docs = [doc for doc in generate("tune", collections=SHIPPABLE) if doc.source in SHIPPABLE]
    head = _result_set(docs, rng)
    chosen = {id(doc) for doc in head}
    rest = [doc for doc in docs if id(doc) not in chosen]
    return [{"id": f"story-{number}", "text": doc.text, "lang": doc.lang}
            for number, doc in enumerate(head + rest, start=1)]


def build_items() -> tuple[list[dict], dict[str, str]]:
    """The items sample's records ({"id": "ad-N", "lang", "fields"}: jobads.fields.items_with_fields) in file
    order, and each id's opening: two ads of one opening are duplicates (reposts, re-advertisements), any other
    two are not (the same template for another city, title or vacancy; the same company). The openings are the
    truth the tests answer `neardup label` by; the sample holds the records alone."""
    data = jobads.generate(ITEMS_SPLIT, ITEMS_SIZE)
    records, openings = [], {}
    for number, (item, record) in enumerate(zip(data.items, items_with_fields(data.items)), start=1):
        doc_id = f"ad-{number}"
        records.append({**record, "id": doc_id})
        openings[doc_id] = item["group"]
    return records, openings


def items_schema() -> dict:
    """The schema the items sample is indexed by (`neardup index --fields`): the job-ad set's."""
    return SCHEMA


def write(records: list[dict], path: Path) -> None:
    """gzip's file name and mtime are left out, so the same records make the same bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out:
        for record in records:
            out.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
