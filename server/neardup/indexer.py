"""`neardup index`: the offline stage. JSON Lines (id, text, optional lang) in, sketches in the store out.

Pass 1 parses and hashes every line, in --workers processes, in corpus order. A new store learns its stop-list
from the full shingle hash sets of pass 1 (a boilerplate sentence can sit above any document's K cut, so
counting after the cut would miss it); pass 2 removes the stop-list, keeps the K smallest and writes atomic
batches. Nothing is written before every line was read, so --strict aborts with the store untouched, and a
process killed during pass 2 leaves whole batches only. Pass 1 keeps 4 bytes per distinct shingle in memory
(for an existing store only the final sketch, at most 4·K bytes per document, 8 for a simhash store).

`--sketch simhash` makes a store of 64-bit SimHash fingerprints of the same shingles instead of bottom-K sketches
(8 bytes per article), each shingle weighing by its count in the document (SketchConfig.weighting: 1 + ln tf for
a new store, 1 for one made before weights). Pass 1 keeps each document's distinct shingle hashes with their counts
(_pack_counts: 4 bytes per distinct shingle and 8 more per shingle that repeats in its document), so pass 2 makes
exactly the fingerprint Sketcher.sketch makes of the text.

Where the passes run is an Engine's business: LocalEngine (this host, the corpus as one partition) or
distributed.DaskEngine (a Dask cluster, the corpus in byte-range partitions). Both run the same steps: LineSketcher
on each line, RecordCollector over the records in corpus order (the last record of an id wins), the stop-list from
document frequencies summed over partitions (core.stoplist), final_sketch for pass 2; this process writes the
batches. So both make the same store from the same corpus, bit for bit.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import multiprocessing
import signal
import sys
import time
from contextlib import nullcontext
from itertools import islice
from typing import BinaryIO, Iterator, NamedTuple, Protocol, Sequence

import numpy as np

from neardup_client.cli import EXIT_OK, EXIT_PARTIAL, UsageError
from .cmdline import at_least, checked, fraction, positive, progress, warn
from .core.fields import FieldSpec
from .core.language import AUTO, canonical_lang, canonical_store_lang, lang_identifier
from .core.sketch import (ItemSketcher, SketchConfig, Sketcher, ShingleCounts, decode_sketch,
                          encode_sketch, load_nltk, stoplist_digest)
from .core.reference import ITEMS, KINDS, SIMHASH
from .core.stoplist import (DEFAULT_FRACTION, DEFAULT_MIN_DOCS, DEFAULT_OWN_SHARE, DEFAULT_SAMPLE_SIZE,
                            Frequencies, Sample, boilerplate, document_frequencies, document_sample, frequent,
                            stoplist_cut)
from . import parquet, threshold as store_threshold
from .engine import Deduplicator
from .errors import ConfigMismatch, InvalidArgument
from .store import (STORE_HELP, SketchStore, create_store, default_store_path, encode_id, open_store,
                    store_exists)

DEFAULT_BATCH_SIZE = 1000
LOCAL, DASK = ENGINES = ("local", "dask")
#: --engine dask's defaults (distributed.DaskEngine's), here so that `neardup index --help` imports no Dask
DEFAULT_PARTITION_BYTES = 64 * 2**20
DEFAULT_CONNECT_TIMEOUT = 10.0
_LINES_PER_TASK = 8      # lines sent to a worker at once: large enough to amortize pickling, small for 10 MB lines
_TASKS_IN_FLIGHT = 64    # per worker; bounds how much of the corpus is buffered ahead of the workers


def parse_record(raw: bytes) -> tuple[str, str | dict, str | None]:
    """(id, text or fields, lang) of one JSON Lines record (fields: an object of field name → value, for an items
    store); InvalidArgument says what is wrong with it."""
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise InvalidArgument(f"invalid UTF-8 at byte {error.start}") from None
    except json.JSONDecodeError as error:  # its msg may end in "at" ("Invalid control character at")
        raise InvalidArgument(f"bad JSON ({error.msg}: column {error.colno})") from None
    except ValueError as error:  # a number too long to convert
        raise InvalidArgument(f"bad JSON ({error})") from None
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
        return Sketched(number, doc_id, payload, None)


_worker_line_sketcher: LineSketcher | None = None


def _start_worker(line_sketcher: LineSketcher) -> None:
    """Sent once per worker rather than with every task; Ctrl-C is left to the parent, which stops the pool."""
    global _worker_line_sketcher
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_line_sketcher = line_sketcher


def _sketch_in_worker(numbered_line: tuple[int, bytes]) -> Sketched:
    return _worker_line_sketcher(numbered_line)


def _sketch_lines(lines: Iterator[tuple[int, bytes]], line_sketcher: LineSketcher,
                  pool: multiprocessing.pool.Pool | None, workers: int) -> Iterator[Sketched]:
    """Results in corpus order; with a pool, the next block is submitted before the current one is consumed."""
    if pool is None:
        yield from map(line_sketcher, lines)
        return
    pending = None
    while block := list(islice(lines, workers * _TASKS_IN_FLIGHT * _LINES_PER_TASK)):
        submitted = pool.imap(_sketch_in_worker, block, chunksize=_LINES_PER_TASK)
        if pending is not None:
            yield from pending
        pending = submitted
    if pending is not None:
        yield from pending


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


def _open_corpus(corpus: str) -> BinaryIO:
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

    def __init__(self, strict: bool, summary: "IndexSummary", noun: str = "line"):
        self.chosen: dict[str, int] = {}  # id → partition << 32 | payload index, of the id's last record
        self._strict, self._summary, self._noun = strict, summary, noun  # noun: "line", or "row" of a Parquet file
        self._payloads: list[int] = []    # well-formed records per partition so far
        self._first_line = 0

    def partition(self, first_line: int) -> None:
        """The records added next are the next partition's; its line 1 is the corpus's line first_line + 1."""
        self._payloads.append(0)
        self._first_line = first_line

    def add(self, line: int, doc_id: str | None, error: str | None) -> None:
        """One record of the current partition (`line`: its number there), in order."""
        if error is not None:
            number = self._first_line + line
            if self._strict:
                raise InvalidArgument(f"{self._noun} {number}: {error}; nothing was written (--strict)")
            self._summary.skipped += 1
            warn(f"neardup: {self._noun} {number}: {error}; skipped")
            return
        self._summary.duplicate_ids += doc_id in self.chosen
        self.chosen[doc_id] = (len(self._payloads) - 1) << 32 | self._payloads[-1]
        self._payloads[-1] += 1

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


class Engine(Protocol):
    """Where pass 1, the stop-list's counts and pass 2 run; the caller writes what comes out, in the order the
    RecordCollector chose. Entered before pass 1 (a cluster is connected to then), left after the writes."""

    def __enter__(self) -> "Engine": ...

    def __exit__(self, *exc) -> None: ...

    def sketch(self, corpus: str, line_sketcher: LineSketcher, collector: RecordCollector) -> None:
        """Pass 1: every line through line_sketcher, each partition's records to the collector, in corpus order;
        the payloads stay with the engine."""

    def frequent(self, kept: list[np.ndarray | None], kind: str, cut: float) -> Frequencies:
        """The shingle hashes of the kept records found in at least `cut` of them (the candidates), with counts."""

    def sample(self, kept: list[np.ndarray | None], kind: str, candidates: np.ndarray) -> Sample:
        """The kept records' diversity sample of the candidates (partition_sample, merged over partitions)."""

    def sketches(self, chosen: dict[str, int], kept: list[np.ndarray | None],
                 sketcher: Sketcher | None) -> Iterator[tuple[str, bytes]]:
        """(id, final_sketch) of every chosen record, in the order of `chosen`."""

    def describe(self) -> str:
        """Where the work ran, for the summary."""


class LocalEngine:
    """Pass 1 in this process or in `workers` processes of this host, reading a file or stdin as one partition; the
    stop-list's counts and pass 2 in this process, pass 2 while the batches are written."""

    def __init__(self, workers: int = 1):
        self._workers = workers
        self._payloads: list[bytes] = []

    def __enter__(self) -> "LocalEngine":
        return self

    def __exit__(self, *exc) -> None:
        self._payloads = []

    def sketch(self, corpus: str, line_sketcher: LineSketcher, collector: RecordCollector) -> None:
        workers = self._workers
        collector.partition(0)
        with (nullcontext() if parquet.is_parquet(corpus) else _open_corpus(corpus)) as stream:
            # a Parquet file's columns are checked before the progress starts
            records = numbered_rows(corpus, parquet.row_groups(corpus)) if stream is None else numbered_lines(stream)
            with (multiprocessing.Pool(workers, _start_worker, (line_sketcher,)) if workers > 1 else nullcontext()) \
                    as pool, progress("sketching") as bar:
                for result in _sketch_lines(records, line_sketcher, pool, workers):
                    bar.update()
                    collector.add(result.line, result.doc_id, result.error)
                    if result.error is None:
                        self._payloads.append(result.payload)

    def frequent(self, kept: list[np.ndarray | None], kind: str, cut: float) -> Frequencies:
        return frequent(partition_frequencies(self._payloads, kept[0], kind), cut)

    def sample(self, kept: list[np.ndarray | None], kind: str, candidates: np.ndarray) -> Sample:
        return partition_sample(self._payloads, kept[0], kind, candidates)

    def sketches(self, chosen: dict[str, int], kept: list[np.ndarray | None],
                 sketcher: Sketcher | None) -> Iterator[tuple[str, bytes]]:
        payloads = self._payloads
        return ((doc_id, final_sketch(payloads[located(where)[1]], sketcher)) for doc_id, where in chosen.items())

    def describe(self) -> str:
        return "local, " + (f"{self._workers} processes" if self._workers > 1 else "this process")


@dataclasses.dataclass
class IndexSummary:
    store: str
    config: SketchConfig
    documents: int = 0          # distinct ids written
    skipped: int = 0            # malformed lines
    duplicate_ids: int = 0      # records whose id came again later (the last one is kept)
    stoplist_size: int = 0
    stoplist_learned: bool = False
    stoplisted_occurrences: int = 0  # (document, shingle) pairs the learned stop-list removed
    popular_kept: int = 0       # shingles in as many documents as boilerplate, kept as copies of few texts
    sketch_bytes: int = 0
    postings: bool = True       # the store keeps postings (corpus search)
    engine: str = "local"       # where pass 1 ran (Engine.describe)
    threshold: "store_threshold.Recorded | None" = None  # the store's default threshold after the run
    elapsed: float = 0.0
    sketched: float = 0.0       # seconds from the start to the end of pass 1 ...
    learned: float = 0.0        # ... and to the stop-list learned (the rest: pass 2 and the writes)

    def format(self) -> str:
        per_article = self.sketch_bytes / self.documents if self.documents else 0
        rate = (self.documents + self.duplicate_ids + self.skipped) / self.elapsed if self.elapsed else 0
        stoplist = (f"{self.stoplist_size:,} (learned; removed {self.stoplisted_occurrences:,} occurrences; kept "
                    f"{self.popular_kept:,} as frequent as boilerplate but held by copies of few texts)"
                    if self.stoplist_learned else f"{self.stoplist_size:,} (the store's)")
        config = self.config
        learning = self.threshold.seconds if self.threshold and self.threshold.learned else 0.0
        size = "sketch=simhash" if config.kind == SIMHASH else f"k={config.k}"
        return "\n".join([
            f"indexed into {self.store} (unit={config.unit} {size} lang={config.lang} "
            f"min_word_len={config.min_word_len})",
            f"  documents:            {self.documents:,}",
            f"  skipped lines:        {self.skipped:,}",
            f"  duplicate ids:        {self.duplicate_ids:,} (the last record of an id wins)",
            f"  stop-listed shingles: {stoplist}",
            f"  bytes per article:    {per_article:.0f} (sketch)",
            "  postings:             " + ("kept (corpus search: FindSimilar, neardup pairs)" if self.postings else
                                          "none (FindSimilar and neardup pairs refuse this store)"),
            f"  engine:               {self.engine}",
            *([f"  default threshold:    {self.threshold.format()}"] if self.threshold else []),
            f"  elapsed:              {self.elapsed:.2f} s ({rate:,.0f} docs/s; reading and sketching "
            f"{self.sketched:.2f} s, stop-list {self.learned - self.sketched:.2f} s, writing "
            f"{self.elapsed - self.learned - learning:.2f} s" + (f", threshold {learning:.2f} s)" if learning else ")"),
        ])


def index_corpus(corpus: str, store_path: str, *, unit: str | None = None, k: int | None = None,
                 lang: str | None = None, min_word_len: int | None = None, sketch: str | None = None,
                 workers: int = 1, strict: bool = False,
                 stop_min_docs: int = DEFAULT_MIN_DOCS, stop_fraction: float = DEFAULT_FRACTION,
                 stop_own_share: float = DEFAULT_OWN_SHARE, learn: bool = True,
                 batch_size: int = DEFAULT_BATCH_SIZE, postings: bool = True,
                 engine: Engine | None = None, schema: dict | None = None,
                 threshold: store_threshold.Choice | None = None) -> IndexSummary:
    """Sketches a JSON Lines corpus into the store at store_path, creating it when there is none.

    Options left at None take the store's configuration (or SketchConfig's defaults for a new store); a given
    option that differs from an existing store's raises ConfigMismatch (`sketch`, the kind: "bottomk" or
    "simhash", included). `learn` and the stop_* cuts apply only
    to a new store: an existing store's stop-list is what its sketches were made with. `postings=False` creates a
    store without postings (smaller, faster to write, no corpus search); an existing store that keeps postings
    refuses it (ConfigMismatch), since they cannot be dropped. `engine` runs the passes (default: a LocalEngine of
    `workers` processes; distributed.DaskEngine on a cluster); this process writes the store either way.
    `schema` ({"fields": [...], "rules": [...]}: see load_schema) makes an items store of records with fields; it
    learns no stop-list. `threshold` sets the store's default threshold after the writes (threshold.record: a new
    bottom-K store with postings learns it unless told otherwise).
    """
    if workers < 1 or batch_size < 1:
        raise InvalidArgument("--workers and --batch-size must be at least 1")
    if stop_min_docs < 2 or not 0.0 <= stop_fraction <= 1.0 or not 0.0 <= stop_own_share <= 1.0:
        raise InvalidArgument("--stop-min-docs must be at least 2 (a shingle of one document is no boilerplate), "
                              "--stop-fraction and --stop-own-share in [0, 1]")
    started = time.monotonic()
    requested = {name: value for name, value in
                 (("unit", unit), ("k", k), ("lang", lang), ("min_word_len", min_word_len), ("kind", sketch))
                 if value is not None}
    if lang is not None:  # an auto store made by another identifier differs from the command line's
        requested["lang_identifier"] = lang_identifier(canonical_store_lang(lang))
    if schema is not None:
        requested.update(kind=ITEMS, fields=schema["fields"], rules=schema["rules"])
    existing = _existing_store(store_path)
    if existing is not None:
        config, stoplist, indexed = existing
        if indexed and not postings:
            raise ConfigMismatch(f"store {store_path} keeps postings; --no-postings applies only when a store is "
                                 "created: leave it out, or index into a new --store")
        if requested.get("kind", config.kind) != config.kind:
            raise ConfigMismatch(f"store {store_path} holds {config.kind} sketches, not {requested['kind']}: leave "
                                 "--sketch out to use the store's, or index into a new --store")
        try:
            config.require_equal(dataclasses.replace(config, **requested), "the command line's sketch")
        except ConfigMismatch as error:
            raise ConfigMismatch(f"{error}; leave the option out to use the store's, or index into a new --store") \
                from None
        learn = False
    else:
        config, stoplist = SketchConfig(**requested), frozenset()
        learn = learn and config.kind != ITEMS
    summary = IndexSummary(store=str(store_path), config=config, stoplist_size=len(stoplist),
                           postings=indexed if existing is not None else postings)
    store_threshold.check_learnable(threshold, config, summary.postings)
    load_nltk()  # once, before the worker processes fork, and before the progress bar measures a rate
    collector = RecordCollector(strict, summary, "row" if parquet.is_parquet(corpus) else "line")
    with engine or LocalEngine(workers) as engine:
        engine.sketch(corpus, LineSketcher(Sketcher(config, stoplist), final=not learn), collector)
        kept = collector.kept()
        summary.sketched = time.monotonic() - started
        if existing is None and not collector.chosen:
            skipped = f" ({summary.skipped:,} malformed lines skipped)" if summary.skipped else ""
            raise InvalidArgument(f"corpus {corpus} holds no records{skipped}: a new store learns its stop-list "
                                  f"from its first corpus, so none was created")
        sketcher = None
        if learn:
            cut = stoplist_cut(len(collector.chosen), stop_min_docs, stop_fraction)
            candidates = engine.frequent(kept, config.kind, cut)
            stop = boilerplate(candidates, engine.sample(kept, config.kind, candidates.values), cut, stop_own_share)
            summary.popular_kept = len(candidates.values) - len(stop.values)
            stoplist = frozenset(stop.values.tolist())
            config = dataclasses.replace(config, stoplist_digest=stoplist_digest(stoplist))
            summary.config, summary.stoplist_size, summary.stoplist_learned = config, len(stoplist), True
            summary.stoplisted_occurrences = int(stop.counts.sum())
            sketcher = Sketcher(config, stoplist)
        summary.learned = time.monotonic() - started
        store = open_store(store_path) if existing is not None else create_store(store_path, config, stoplist,
                                                                                 indexed=postings)
        with store:
            _write_batches(store, engine.sketches(collector.chosen, kept, sketcher), len(collector.chosen),
                           batch_size, summary)
            summary.threshold = store_threshold.record(store, threshold, created=existing is None)
        summary.engine = engine.describe()
    summary.elapsed = time.monotonic() - started
    return summary


def _write_batches(store: SketchStore, sketches: Iterator[tuple[str, bytes]], total: int, batch_size: int,
                   summary: IndexSummary) -> None:
    """Pass 2: atomic batches of batch_size, so a killed process leaves whole batches only. In a clustered store
    each new article gets its cluster after its batch (Deduplicator.assign_clusters)."""
    clustered = Deduplicator(store) if store.clustered() else None
    with progress("writing", total=total) as bar:
        while batch := list(islice(sketches, batch_size)):
            store.put_many(batch)
            if clustered is not None:
                clustered.assign_clusters([doc_id for doc_id, _ in batch])
            bar.update(len(batch))
            summary.documents += len(batch)
            summary.sketch_bytes += sum(len(sketch) for _, sketch in batch)


def _existing_store(store_path: str) -> tuple[SketchConfig, frozenset[int], bool] | None:
    """The configuration, stop-list and postings flag (store.indexed) of the store at store_path; None where a store
    is to be created (store_exists). Anything else that is not a store is refused by open_store."""
    if not store_exists(store_path):
        return None
    with open_store(store_path, readonly=True) as store:
        return store.config, store.stoplist, store.indexed


def load_schema(path: str) -> dict:
    """An items schema file: {"fields": [{"name": ..., "kind": "text"|"exact"|"location", ...}], "rules": [[name,
    ...], ...]} (core/fields.FieldSpec has every setting and its default), checked; InvalidArgument says what is
    wrong."""
    try:
        with open(path, encoding="utf-8") as stream:
            document = json.load(stream)
    except OSError as error:
        raise InvalidArgument(f"cannot read schema {path}: {error.strerror}") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidArgument(f"schema {path} is not JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("fields"), list) \
            or not isinstance(document.get("rules", []), list) or set(document) - {"fields", "rules"}:
        raise InvalidArgument(f"schema {path}: give an object with \"fields\" (a list) and \"rules\" (a list of "
                              "lists of field names)")
    try:
        schema = {"fields": tuple(FieldSpec.from_dict(spec) for spec in document["fields"]),
                  "rules": tuple(tuple(rule) for rule in document.get("rules", []))}
        SketchConfig(kind=ITEMS, **schema)
    except (InvalidArgument, TypeError) as error:
        raise InvalidArgument(f"schema {path}: {error}") from None
    return schema


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = SketchConfig()
    parser.description = ("Sketch a JSON Lines corpus (one object per line: id, text, optional lang) into a store, "
                          "creating it when there is none. An existing store keeps its sketch configuration and "
                          "stop-list; re-indexing an id replaces its sketch. Exit code 3 when malformed lines were "
                          "skipped.")
    parser.add_argument("corpus", metavar="CORPUS",
                        help="JSON Lines file, or - for stdin; a name ending in .parquet is read as Parquet (string "
                             "columns id, text, optional lang; needs the parquet extra)")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--lang", type=checked(str, canonical_store_lang),
                        help=f"default language of the corpus, or {AUTO}: each text's identified language; a "
                             f"record's lang overrides it (default: the store's; for a new store {defaults.lang})")
    parser.add_argument("--unit", type=checked(str, lambda unit: SketchConfig(unit=unit)),
                        help=f"shingle unit: sentence, para-sentence or word:N "
                             f"(default: the store's; for a new store {defaults.unit})")
    parser.add_argument("--sketch", choices=KINDS,
                        help=f"sketch kind: bottomk (the K smallest shingle hashes) or simhash (one 64-bit SimHash "
                             f"fingerprint of them, 8 bytes; Dedup and search by Hamming distance) "
                             f"(default: the store's; for a new store {defaults.kind})")
    parser.add_argument("-k", type=checked(int, lambda k: SketchConfig(k=k)),
                        help=f"sketch size of --sketch bottomk: the K smallest shingle hashes "
                             f"(default: the store's; for a new store {defaults.k})")
    parser.add_argument("--min-word-len", type=checked(int, lambda length: SketchConfig(min_word_len=length)),
                        help=f"shorter words are dropped "
                             f"(default: the store's; for a new store {defaults.min_word_len})")
    parser.add_argument("--fields", metavar="SCHEMA", type=checked(str, load_schema),
                        help="a new store of items with fields (records {\"id\": ..., \"fields\": {...}}), by this "
                             "JSON schema: {\"fields\": [{\"name\", \"kind\": text|exact|location, \"weight\", ...}], "
                             "\"rules\": [[field, ...], ...]}; an existing items store must have the same "
                             "(default: the store's; a new store holds texts)")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="where the corpus is sketched: local (this host, --workers processes) or dask (the Dask "
                             "distributed cluster at --scheduler; CORPUS must then be a path or URL its workers can "
                             "read); the store is written from this host either way")
    parser.add_argument("--workers", type=at_least(1), default=1, help="sketching processes of --engine local")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="the Dask scheduler of --engine dask, e.g. tcp://HOST:8786 (default: none; required "
                             "with --engine dask)")
    parser.add_argument("--partition-bytes", type=at_least(1), default=DEFAULT_PARTITION_BYTES,
                        help="corpus bytes per Dask task of --engine dask (a partition holds the lines that start in "
                             "its byte range)")
    parser.add_argument("--connect-timeout", type=checked(float, positive), default=DEFAULT_CONNECT_TIMEOUT,
                        metavar="SECONDS", help="how long --engine dask tries to reach the scheduler")
    parser.add_argument("--strict", action="store_true",
                        help="abort at the first malformed line, writing nothing, instead of skipping it")
    parser.add_argument("--stop-min-docs", type=at_least(2), default=DEFAULT_MIN_DOCS,
                        help="a new store stop-lists shingles found in at least this many distinct texts ...")
    parser.add_argument("--stop-fraction", type=checked(float, fraction), default=DEFAULT_FRACTION,
                        help="... and in at least this fraction of the documents; copies of one text (a story "
                             "republished many times) count once, so a popular story is never stop-listed")
    parser.add_argument("--stop-own-share", type=checked(float, fraction), default=DEFAULT_OWN_SHARE,
                        help="a document counts as a distinct text when at least this share of its shingles are its "
                             "own (in fewer documents than the cut); 0 counts every document")
    parser.add_argument("--no-stoplist", dest="learn", action="store_false",
                        help="a new store gets no stop-list (default: it learns one)")
    parser.add_argument("--batch-size", type=at_least(1), default=DEFAULT_BATCH_SIZE,
                        help="documents per atomic write batch")
    parser.add_argument("--no-postings", dest="postings", action="store_false",
                        help="a new store keeps no postings: smaller and faster to write, but no corpus search "
                             "(FindSimilar, neardup pairs); an existing store that keeps them refuses this "
                             "(default: a new store keeps postings)")
    store_threshold.add_threshold_argument(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.sketch == SIMHASH and args.k is not None:
        raise UsageError("-k sets the size of a bottom-K sketch; --sketch simhash makes one 64-bit fingerprint: "
                         "leave -k out")
    engine = None
    if args.engine == DASK:
        if args.scheduler is None:
            raise UsageError("--engine dask needs --scheduler ADDRESS (the Dask scheduler, e.g. tcp://HOST:8786)")
        if args.corpus == "-":
            raise UsageError("--engine dask reads the corpus on its workers: give a path or URL, not - (stdin)")
        if args.workers != 1:
            raise UsageError("--workers sets the processes of --engine local; a Dask cluster has its own workers")
        from .distributed import DaskEngine
        engine = DaskEngine(args.scheduler, args.partition_bytes, args.connect_timeout)
    elif args.scheduler is not None:
        raise UsageError("--scheduler is for --engine dask")
    summary = index_corpus(
        args.corpus, args.store, unit=args.unit, k=args.k, lang=args.lang, min_word_len=args.min_word_len,
        sketch=args.sketch, workers=args.workers, strict=args.strict, stop_min_docs=args.stop_min_docs,
        stop_fraction=args.stop_fraction, stop_own_share=args.stop_own_share, learn=args.learn,
        batch_size=args.batch_size, postings=args.postings,
        engine=engine, schema=load_schema(args.fields) if args.fields else None, threshold=args.threshold)
    print(summary.format())
    return EXIT_PARTIAL if summary.skipped else EXIT_OK
