"""index_corpus's options as one value (IndexOptions): its checks refuse out-of-range numbers when it is made
(before index_corpus can touch a store), and what it says is what the store it makes holds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from neardup.core.errors import InvalidArgument
from neardup.core.sketcher import Sketcher
from neardup.core.vocabulary import SIMHASH
from neardup.jobs.index import DEFAULT_BATCH_SIZE, IndexOptions, index_corpus
from neardup.store import open_store
from textgen import corpus_records


def _corpus(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("changes, message", [
    ({"workers": 0}, "--workers and --batch-size must be at least 1"),
    ({"batch_size": 0}, "--workers and --batch-size must be at least 1"),
    ({"stop_min_docs": 1}, "--stop-min-docs must be at least 2"),
    ({"stop_fraction": 1.5}, "--stop-fraction and --stop-own-share in [0, 1]"),
    ({"stop_own_share": -0.1}, "--stop-fraction and --stop-own-share in [0, 1]"),
])
def test_out_of_range_options_are_refused_when_made(changes, message):
    with pytest.raises(InvalidArgument) as refused:
        IndexOptions(**changes)
    assert message in str(refused.value)


def test_the_defaults_are_the_commands():
    options = IndexOptions()
    assert (options.workers, options.batch_size, options.learn, options.postings) == (1, DEFAULT_BATCH_SIZE, True, True)
    assert options.sketch is None and options.schema is None and options.threshold is None
    with pytest.raises(AttributeError):
        options.workers = 2  # frozen: one value, passed on as is


def test_the_store_holds_what_the_options_say(tmp_path):
    records = corpus_records(30)
    corpus = _corpus(tmp_path / "corpus.jsonl", records)
    summary = index_corpus(str(corpus), str(tmp_path / "store"),
                           IndexOptions(sketch=SIMHASH, learn=False, postings=False, batch_size=7))
    assert summary.postings is False and summary.stoplist_size == 0 and not summary.stoplist_learned
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.config.kind == SIMHASH and not store.indexed and store.stoplist == frozenset()
        sketcher = Sketcher(store.config, store.stoplist)
        ids = [record["id"] for record in records]
        assert store.get_many(ids) == [sketcher.sketch(record["text"]) for record in records]

