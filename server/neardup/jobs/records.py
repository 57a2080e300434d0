"""Corpus records → sketch payloads, the steps both engines of `neardup index` share: parsing a record,
sketching a line (LineSketcher), collecting records in corpus order (RecordCollector), a partition's shingle
counts and diversity sample for the stop-list, and the final sketch of pass 2."""
from __future__ import annotations

import dataclasses
import functools
import json
import sys
from typing import BinaryIO, Iterator, NamedTuple, Sequence

import numpy as np

from neardup_client.json_lines import parse_line

from ..core.encoding import decode_sketch, encode_sketch
from ..core.errors import InvalidArgument
from ..core.language import canonical_lang
from ..core.sketch_config import SketchConfig
from ..core.sketcher import ItemSketcher, ShingleCounts, Sketcher
from ..core.stoplist import DEFAULT_SAMPLE_SIZE, Frequencies, Sample, document_frequencies, document_sample
from ..core.vocabulary import ITEMS, SIMHASH
from ..store import encode_id
from . import parquet
from .progress import warn


def parse_record(raw: bytes) -> tuple[str, str | dict, str | None]:
    """(id, text or fields, lang) of one JSON Lines record (fields: an object of field name → value, for an items
    store); InvalidArgument says what is wrong with it."""
    try:
        record = parse_line(raw)
    except ValueError as error:
        raise InvalidArgument(str(error)) from None
    return check_record(record)


def check_record(record: object) -> tuple[str, str | dict, str | None]:
    """(id, text or fields, lang) of a parsed record: a JSON Lines line's object, or a Parquet row."""
    if not isinstance(record, dict):
        raise InvalidArgument(f"not a JSON object but {type(record).__name__}")
    if "id" not in record:
        raise InvalidArgument("missing id")
    doc_id = record["id"]
    encode_id(doc_id)
    text = record.get("fields", record.get("text"))
    if "fields" in record and not isinstance(text, dict):
        raise InvalidArgument(f"fields must be an object of field name → value, got {type(text).__name__}")
    if not isinstance(text, (str, dict)):
        raise InvalidArgument("missing text" if text is None else f"text must be a string, got {type(text).__name__}")
    lang = record.get("lang")
    if lang is not None:
        if not isinstance(lang, str):
            raise InvalidArgument(f"lang must be a string, got {type(lang).__name__}")
        canonical_lang(lang)
    return doc_id, text, lang or None


class Sketched(NamedTuple):
    line: int
    doc_id: str | None
    # the final sketch, or when the stop-list is still to be learned every distinct shingle hash (a simhash
    # store: with its count, _pack_counts)
    payload: bytes | None
    error: str | None
    #: the stemmer language the record carried as its own lang (canonical), "" when none
    lang: str = ""


def _pack_counts(counts: ShingleCounts) -> bytes:
    """A document's hash counts in pass 1's memory: the number of distinct hashes, the hashes, then the position
    and count of each hash that occurs more than once (native uint32 throughout). Most word 3-grams occur once in
    their text, so this is ~4 bytes per distinct shingle, as a bottom-K store's pass 1 keeps."""
    tf = np.frombuffer(counts.counts, np.uint32)
    repeated = np.flatnonzero(tf > 1).astype(np.uint32)
    return np.uint32(len(tf)).tobytes() + counts.hashes + repeated.tobytes() + tf[repeated].tobytes()


def _unpack_counts(payload: bytes) -> ShingleCounts:
    """The hash counts _pack_counts packed."""
    size = int(np.frombuffer(payload, np.uint32, 1)[0])
    repeats = np.frombuffer(payload, np.uint32, offset=4 + 4 * size)
    tf = np.ones(size, np.uint32)
    tf[repeats[:len(repeats) // 2]] = repeats[len(repeats) // 2:]
    return ShingleCounts(payload[4:4 + 4 * size], tf.tobytes())


def _payload_hashes(payload: bytes, kind: str) -> np.ndarray:
    """The distinct shingle hashes of pass 1's payload for a store of this kind (the stop-list is learned from)."""
    if kind == SIMHASH:
        return np.frombuffer(payload, np.uint32, int(np.frombuffer(payload, np.uint32, 1)[0]), 4)
    return np.frombuffer(payload, "<u4")


@functools.lru_cache(maxsize=4)
def _item_sketcher(config: SketchConfig) -> ItemSketcher:
    return ItemSketcher(config)


@dataclasses.dataclass(frozen=True)
class LineSketcher:
    """Pass 1 for one line; `final` when the stop-list is known, so the K cut can happen in the worker."""

    sketcher: Sketcher
    final: bool

    def __call__(self, numbered_line: tuple[int, bytes | dict]) -> Sketched:
        """A JSON Lines line (bytes, parsed here) or a Parquet row (a dict), with its number."""
        number, raw = numbered_line
        sketcher = self.sketcher
        try:
            doc_id, text, lang = parse_record(raw) if isinstance(raw, bytes) else check_record(raw)
            if sketcher.config.kind == ITEMS:
                if not isinstance(text, dict):
                    raise InvalidArgument("this store holds items with fields: give the record's \"fields\"")
                payload = _item_sketcher(sketcher.config).sketch(text, lang)
            elif isinstance(text, dict):
                raise InvalidArgument("a record with fields needs an items store (`neardup index --fields SCHEMA`); "
                                      "this one holds texts")
            elif self.final:
                payload = sketcher.sketch(text, lang)
            elif sketcher.config.kind == SIMHASH:
                payload = _pack_counts(sketcher.hash_counts(text, lang))
            else:
                payload = encode_sketch(sketcher.hashes(text, lang))
        except InvalidArgument as error:
            return Sketched(number, None, None, str(error))
        return Sketched(number, doc_id, payload, None, canonical_lang(lang) if lang else "")


def numbered_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines with their 1-based numbers, as bytes: a line with invalid UTF-8 is then one bad record."""
    for number, line in enumerate(stream, 1):
        if not line.isspace():
            yield number, line


def numbered_rows(corpus: str, groups: list[int]) -> Iterator[tuple[int, dict]]:
    """The rows of a Parquet corpus with their 1-based numbers, a row group at a time (groups: parquet.row_groups)."""
    number = 0
    for group in range(len(groups)):
        for row in parquet.rows(corpus, group):
            number += 1
            yield number, row


def open_corpus(corpus: str) -> BinaryIO:
    if corpus == "-":
        return sys.stdin.buffer
    try:
        return open(corpus, "rb")
    except OSError as error:
        raise InvalidArgument(f"cannot read corpus {corpus}: {error.strerror}") from None


class RecordCollector:
    """Pass 1's records in corpus order, from any engine: a malformed line is reported and skipped (with --strict the
    run stops there, before anything is written), and for each id the record that is written is its last one, in
    the place where the id first came (the write order). A record is found by its partition and the index of its
    payload among the partition's well-formed records (the local engine reads the corpus as one partition)."""

    def __init__(self, strict: bool, noun: str = "line", source: str = ""):
        self.chosen: dict[str, int] = {}  # id → partition << 32 | payload index, of the id's last record
        self.skipped = 0                  # malformed records
        self.duplicate_ids = 0            # records whose id came again later (the last one is kept)
        self._strict, self._noun = strict, noun  # noun: "line", or "row" of a Parquet file
        #: Where a malformed record's line is, in its warning ("" for the corpus the command itself names).
        self._source = source
        self._payloads: list[int] = []    # well-formed records per partition so far
        #: the stemmer languages well-formed records carried as their own lang (SketchStore.languages)
        self.languages: set[str] = set()
        self._first_line = 0

    def partition(self, first_line: int) -> None:
        """The records added next are the next partition's; its line 1 is the corpus's line first_line + 1."""
        self._payloads.append(0)
        self._first_line = first_line

    def add(self, line: int, doc_id: str | None, error: str | None, lang: str = "") -> None:
        """One record of the current partition (`line`: its number there), in order; `lang`: the stemmer language
        it carried as its own, "" when none."""
        if error is not None:
            number = self._first_line + line
            if self._strict:
                raise InvalidArgument(f"{self._noun} {number}: {error}; nothing was written (--strict)")
            self.skipped += 1
            warn(f"neardup: {self._source}{self._noun} {number}: {error}; skipped")
            return
        if lang:
            self.languages.add(lang)
        self.duplicate_ids += doc_id in self.chosen
        self.chosen[doc_id] = (len(self._payloads) - 1) << 32 | self._payloads[-1]
        self._payloads[-1] += 1

    @property
    def unit(self) -> str:
        """What a record is, for a progress count: " lines", or " rows" of a Parquet file."""
        return f" {self._noun}s"

    def described(self) -> str:
        """What became of the records counted so far: `5 sketched, 1 skipped: malformed`, and the records an id
        came again after (`1 record replaced by a later line of the same id`)."""
        noun = "record" if self.duplicate_ids == 1 else "records"
        return ", ".join([f"{sum(self._payloads):,} sketched",
                          *([f"{self.skipped:,} skipped: malformed"] if self.skipped else []),
                          *([f"{self.duplicate_ids:,} {noun} replaced by a later {self._noun} of the same id"]
                            if self.duplicate_ids else [])])

    def kept(self) -> list[np.ndarray | None]:
        """Per partition, the payload indices written (ascending), None where all of them are: the records an id
        came again after are left out of the stop-list's counts and of pass 2."""
        if len(self.chosen) == sum(self._payloads):  # no id came twice
            return [None] * len(self._payloads)
        written = np.sort(np.fromiter(self.chosen.values(), np.int64, len(self.chosen)))  # by partition, then index
        bounds = np.searchsorted(written, np.arange(len(self._payloads) + 1, dtype=np.int64) << 32).tolist()
        kept = []
        for partition, payloads in enumerate(self._payloads):
            mine = written[bounds[partition]:bounds[partition + 1]] & _INDEX_MASK
            kept.append(None if len(mine) == payloads else mine)
        return kept


_INDEX_MASK = (1 << 32) - 1


def located(where: int) -> tuple[int, int]:
    """(partition, payload index) of a record, from its RecordCollector.chosen value."""
    return where >> 32, where & _INDEX_MASK


def kept_payloads(payloads: Sequence[bytes], kept: np.ndarray | None) -> Sequence[bytes]:
    """The payloads of one partition's records that are written (`kept`, RecordCollector.kept), in order."""
    return payloads if kept is None else [payloads[index] for index in kept.tolist()]


def partition_frequencies(payloads: Sequence[bytes], kept: np.ndarray | None, kind: str) -> Frequencies:
    """Document frequencies of the records of one partition that are written: summed over partitions, the counts
    the stop-list is learned from."""
    return document_frequencies(_payload_hashes(payload, kind) for payload in kept_payloads(payloads, kept))


def partition_sample(payloads: Sequence[bytes], kept: np.ndarray | None, kind: str, candidates: np.ndarray) -> Sample:
    """The diversity sample of the records of one partition that are written: merged over partitions
    (core.stoplist.merged), what tells a candidate's copies of one text from unlike documents."""
    return document_sample([_payload_hashes(payload, kind) for payload in kept_payloads(payloads, kept)],
                           candidates, DEFAULT_SAMPLE_SIZE)


def final_sketch(payload: bytes, sketcher: Sketcher | None) -> bytes:
    """Pass 2 of one record: the sketch of its pass-1 payload under the learned stop-list; with no sketcher the
    stop-list was known in pass 1 and the payload is the sketch."""
    if sketcher is None:
        return payload
    if sketcher.config.kind == SIMHASH:
        return sketcher.sketch_counts(_unpack_counts(payload))
    return sketcher.sketch_hashes(decode_sketch(payload))


def read_records(path: str, wanted: set[str], content: str) -> dict[str, dict]:
    """The records of the wanted ids in a JSON Lines corpus (--corpus of `neardup label`, of the page's Label pairs
    view and of `neardup train`), those whose `content` is there ("fields": a dict, "text": a string); lines that
    are not such records, or not UTF-8, are passed over (the sketching pass over the same file warns of them)."""
    kind = dict if content == "fields" else str
    found = {}
    try:
        with open(path, "rb") as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                except ValueError:  # UnicodeDecodeError too
                    continue
                if isinstance(record, dict) and record.get("id") in wanted and isinstance(record.get(content), kind):
                    found[record["id"]] = record
    except OSError as error:
        raise InvalidArgument(f"cannot read --corpus {path}: {error.strerror}") from None
    return found
