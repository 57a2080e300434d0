"""FindSimilar with a text sent without its language, in a store of one language whose texts carry others (issue 39):
the sample corpus (English, German, Dutch and Russian pages, each record with its lang) indexed by `neardup index`
into a real store, served by a real `neardup serve`. The text of a stored German page, sent without --lang, finds
that page (it was stemmed as English before, and found nothing); the answer says which language was used and how,
the same through the client and `neardup similar`. A store of one language alone keeps stemming as its own, and
learns a language from an Upsert."""
from __future__ import annotations

import json

import pytest

from benchmarks import sample as sample_command
from server_process import serving, write_jsonl
from neardup.cli.main import main
from neardup.store import open_store
from neardup_client import Document, NearDupClient


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("sample") / "sample.jsonl"
    assert sample_command.main(["--out", str(path)]) == 0
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def corpus(records, tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "sample.jsonl", records)


@pytest.fixture(scope="module")
def store(corpus, tmp_path_factory):
    location = tmp_path_factory.mktemp("store") / "store"
    assert main(["index", str(corpus), "--store", str(location)]) == 0
    return location


@pytest.fixture(scope="module")
def server(store):
    with serving(store) as running:
        yield running


def first(records: list[dict], lang: str) -> dict:
    return next(record for record in records if record.get("lang") == lang)


def test_the_store_records_the_languages_its_pages_carried_and_info_says_them(store, server):
    with open_store(store, readonly=True) as opened:
        assert opened.config.lang == "english"
        assert opened.languages() == {"english", "german", "dutch", "russian"}
    with NearDupClient(server.target, timeout=10) as client:
        assert client.info().languages == ["dutch", "english", "german", "russian"]


@pytest.mark.parametrize("lang, stemmer", [("de", "german"), ("nl", "dutch"), ("ru", "russian"), ("en", "english")])
def test_a_stored_page_sent_without_its_lang_finds_itself(records, server, lang, stemmer):
    page = first(records, lang)
    with NearDupClient(server.target, timeout=10) as client:
        answer = client.find_similar(document=Document("", text=page["text"]), top_k=3)
    assert (answer.lang, answer.lang_source) == (stemmer, "identified")
    assert answer.matches[0].similarity == 1.0 and page["id"] in [m.id for m in answer.matches
                                                                  if m.similarity == 1.0]


def test_its_lang_given_is_applied_as_given(records, server):
    """What the answer said before, now with why: the German page stemmed as English matches nothing near."""
    page = first(records, "de")
    with NearDupClient(server.target, timeout=10) as client:
        as_english = client.find_similar(document=Document("", text=page["text"], lang="en"), top_k=3)
        as_german = client.find_similar(document=Document("", text=page["text"], lang="de"), top_k=3)
        by_id = client.find_similar(page["id"], top_k=3)
    assert (as_english.lang, as_english.lang_source) == ("english", "given")
    assert page["id"] not in [match.id for match in as_english.matches]
    assert (as_german.lang, as_german.lang_source) == ("german", "given")
    assert as_german.matches[0].similarity == 1.0
    assert (by_id.lang, by_id.lang_source) == ("", "")  # a stored sketch: no text stemmed
    assert "lang" not in by_id.to_dict()


def test_neardup_similar_answers_as_the_client_does(records, server, tmp_path, neardup):
    page = first(records, "de")
    (tmp_path / "page.txt").write_text(page["text"], encoding="utf-8")
    done = neardup("similar", "--target", server.target, "--text", tmp_path / "page.txt", "--top-k", "3")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert (printed["lang"], printed["lang_source"]) == ("german", "identified")
    with NearDupClient(server.target, timeout=10) as client:
        answer = client.find_similar(document=Document("", text=page["text"]), top_k=3)
    assert printed == answer.to_dict()
    assert printed["matches"][0]["similarity"] == 1.0


def test_a_store_of_one_language_stems_as_its_own_until_an_upsert_brings_another(records, tmp_path, neardup):
    """No lang carried: every query text is stemmed in the store's language ("store"), a German one too (so it
    misses its German copy, stored as English). An Upsert of a page with lang de records German: the next query
    is identified (every worker reads the store's languages), and migrate keeps them."""
    english = [{"id": record["id"], "text": record["text"]} for record in records if record["lang"] == "en"]
    corpus = write_jsonl(tmp_path / "english.jsonl", english)
    assert neardup("index", corpus, "--store", tmp_path / "store").returncode == 0
    page = first(records, "de")
    with serving(tmp_path / "store", workers=2) as server, NearDupClient(server.target, timeout=10) as client:
        assert client.info().languages == []
        before = client.find_similar(document=Document("", text=page["text"]), top_k=3)
        assert (before.lang, before.lang_source) == ("english", "store") and before.matches == []
        client.upsert([Document("stellenangebot", text=page["text"], lang="de")])
        assert client.info().languages == ["german"]
        for _ in range(4):  # whichever worker answers
            after = client.find_similar(document=Document("", text=page["text"]), top_k=3)
            assert (after.lang, after.lang_source) == ("german", "identified")
            assert [(match.id, match.similarity) for match in after.matches] == [("stellenangebot", 1.0)]
        english_page = client.find_similar(document=Document("", text=english[0]["text"]), top_k=3)
        assert (english_page.lang, english_page.lang_source) == ("english", "identified")
        assert english[0]["id"] in [match.id for match in english_page.matches if match.similarity == 1.0]
    assert neardup("migrate", tmp_path / "store", tmp_path / "copy").returncode == 0
    with open_store(tmp_path / "copy", readonly=True) as copy:
        assert copy.languages() == {"german"}


def test_migrate_copies_the_languages_to_either_backend(store, store_location, neardup):
    done = neardup("migrate", store, store_location)
    assert done.returncode == 0, done.stderr
    with open_store(store_location, readonly=True) as copy:
        assert copy.languages() == {"english", "german", "dutch", "russian"}
    with open_store(store_location) as copy:  # adding is a union, written once
        assert copy.add_languages(["german"]) is False
        assert copy.add_languages(["german", "french"]) is True
        assert copy.languages() == {"english", "german", "dutch", "russian", "french"}
