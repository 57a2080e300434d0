"""The sample corpus of README's first command: the same file on every machine (made again from the development
corpus, it is byte for byte the shipped one), news at its head, and its first 100 ids a result set with a
realistic share of near-duplicates (README promises 20-40 %); the README's Python example answers as it says."""
from __future__ import annotations

import gzip
import json

import pytest

from benchmarks import sample as sample_command
from benchmarks.lib import sample
from server_process import serving
from neardup.cli.main import main
from neardup_client import NearDupClient


@pytest.fixture(scope="module")
def sample_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("sample") / "sample.jsonl"
    assert sample_command.main(["--out", str(path)]) == 0
    return path


def test_the_shipped_sample_is_made_again_byte_for_byte(tmp_path):
    sample.write(sample.build(), tmp_path / "again.jsonl.gz")
    assert (tmp_path / "again.jsonl.gz").read_bytes() == sample_command.SHIPPED.read_bytes()


def test_the_sample_is_the_shipped_file_with_news_at_its_head(sample_path):
    with gzip.open(sample_command.SHIPPED, "rb") as shipped:
        assert sample_path.read_bytes() == shipped.read()
    records = [json.loads(line) for line in sample_path.read_text(encoding="utf-8").splitlines()]
    assert [record["id"] for record in records] == [f"story-{n}" for n in range(1, len(records) + 1)]
    assert len(records) > 1000 and {record["lang"] for record in records[:100]} == {"en"}


def test_its_first_100_ids_are_a_result_set_with_a_realistic_share_of_duplicates(sample_path, tmp_path):
    store = tmp_path / "store"
    assert main(["index", str(sample_path), "--store", str(store)]) == 0
    with serving(store) as server, NearDupClient(server.target) as client:
        answer = client.dedup([f"story-{n}" for n in range(1, 101)])
        assert 20 <= len(answer.duplicates) <= 40
        readme = client.dedup(["story-1", "story-2", "story-3"])  # README's Python example
        assert list(readme.keep) == ["story-1", "story-3"]
        assert [(d.id, d.position, d.duplicate_of) for d in readme.duplicates] == [("story-2", 1, "story-1")]
