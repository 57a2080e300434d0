"""`neardup index`: the offline stage. JSON Lines (id, text, optional lang) in, sketches in the store out, in two
passes: pass 1 parses and hashes every line (a new store learns its stop-list from the whole hash sets), pass 2
makes the final sketches and writes atomic batches, nothing before every line was read. Where the passes run is an
Engine's business (LocalEngine, dask_engine.DaskEngine): the same steps (records.py), so the same store.
The passes and their memory: docs/commands/neardup-index.md ("Two passes"); the engines: docs/design.md ("The
offline stage's engines").
"""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import signal
import time
from contextlib import nullcontext
from itertools import islice
from typing import Callable, Iterator, Protocol

import numpy as np

from ..core.calibration import FIELD_WEIGHTS
from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.fields import FieldSpec, with_weights
from ..core.language import canonical_store_lang, lang_identifier
from ..core.nltk_text import load_nltk
from ..core.sketch_config import SketchConfig, stoplist_digest
from ..core.sketcher import Sketcher
from ..core.stoplist import (DEFAULT_FRACTION, DEFAULT_MIN_DOCS, DEFAULT_OWN_SHARE, Frequencies, Sample, boilerplate,
                             frequent, stoplist_cut)
from ..core.vocabulary import ITEMS
from ..runtime.served_store import ServedStore
from ..runtime.writer import Writer
from ..store import SketchStore, create_store, open_store, store_backend, store_exists
from . import parquet, threshold as store_threshold
from .progress import progress
from .records import (LineSketcher, RecordCollector, Sketched, final_sketch, located, numbered_lines, numbered_rows,
                      open_corpus, partition_frequencies, partition_sample)

DEFAULT_BATCH_SIZE = 1000
LOCAL, DASK = ENGINES = ("local", "dask")
#: --engine dask's defaults (dask_engine.DaskEngine's), here so that `neardup index --help` imports no Dask: a
#: corpus is cut into about PARTITIONS_PER_WORKER byte ranges per worker (so every worker has work, and a slow
#: one holds up less of it), each of at least MIN_PARTITION_BYTES and at most MAX_PARTITION_BYTES.
PARTITIONS_PER_WORKER = 4
MIN_PARTITION_BYTES, MAX_PARTITION_BYTES = 64 * 2**10, 64 * 2**20
DEFAULT_CONNECT_TIMEOUT = 10.0
_LINES_PER_TASK = 8      # lines sent to a worker at once: large enough to amortize pickling, small for 10 MB lines
_TASKS_IN_FLIGHT = 64    # per worker; bounds how much of the corpus is buffered ahead of the workers


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


class Engine(Protocol):
    """Where pass 1, the stop-list's counts and pass 2 run; the caller writes what comes out, in the order the
    RecordCollector chose, unless the engine's workers write a store that allows it themselves
    (writes_from_workers: then write(), in any order, each id once). Entered before pass 1 (a cluster is
    connected to then), left after the writes."""

    writes_from_workers: bool

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

    def write(self, location: str, kept: list[np.ndarray | None], sketcher: Sketcher | None,
              batch_size: int) -> Iterator[tuple[int, int]]:
        """Where writes_from_workers: pass 2 written into the store at location (parallel_writers) by the
        workers, in atomic batches; (documents, sketch bytes) as each part is done."""


class LocalEngine:
    """Pass 1 in this process or in `workers` processes of this host, reading a file or stdin as one partition; the
    stop-list's counts and pass 2 in this process, pass 2 while the batches are written."""

    writes_from_workers = False

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
        with (nullcontext() if parquet.is_parquet(corpus) else open_corpus(corpus)) as stream:
            # a Parquet file's columns are checked before the progress starts
            records = numbered_rows(corpus, parquet.row_groups(corpus)) if stream is None else numbered_lines(stream)
            with (multiprocessing.Pool(workers, _start_worker, (line_sketcher,)) if workers > 1 else nullcontext()) \
                    as pool, progress("sketching", unit=collector.unit) as bar:
                for result in _sketch_lines(records, line_sketcher, pool, workers):
                    bar.update()
                    collector.add(result.line, result.doc_id, result.error, result.lang)
                    if result.error is None:
                        self._payloads.append(result.payload)
                    else:
                        bar.set_note(collector.described())
                bar.set_note(collector.described())

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
    stoplist_dropped: int = 0   # the learned stop-list's size where rule 8 wrote the store again without it
    writes: int = 0             # pass 2 runs: 2 where rule 8 wrote the store again, 3 where it then gave it up
    sketch_bytes: int = 0
    postings: bool = True       # the store keeps postings (corpus search)
    engine: str = "local"       # where pass 1 ran (Engine.describe)
    threshold: "store_threshold.Recorded | None" = None  # the store's default threshold after the run
    elapsed: float = 0.0
    sketched: float = 0.0       # seconds from the start to the end of pass 1 ...
    learned: float = 0.0        # ... and to the stop-list learned (the rest: pass 2 and the writes)

    def count(self, documents: int, sketch_bytes: int, bar) -> None:
        """Written: counted here and on the progress bar."""
        self.documents += documents
        self.sketch_bytes += sketch_bytes
        bar.update(documents)

    def _weighed(self) -> tuple | None:
        """An items store's fields as its server weighs them (the weights learned with its threshold), else None."""
        weights = (self.threshold.setting or {}).get(FIELD_WEIGHTS) if self.threshold is not None else None
        return with_weights(self.config.fields, weights) if weights else None

    def format(self) -> str:
        per_article = self.sketch_bytes / self.documents if self.documents else 0
        rate = (self.documents + self.duplicate_ids + self.skipped) / self.elapsed if self.elapsed else 0
        stoplist = (f"{self.stoplist_size:,} (learned; removed {self.stoplisted_occurrences:,} occurrences; kept "
                    f"{self.popular_kept:,} as frequent as boilerplate but held by copies of few texts)"
                    if self.stoplist_learned else f"{self.stoplist_size:,} (the store's)")
        if self.stoplist_dropped:
            stoplist = (f"0 (learned {self.stoplist_dropped:,}, then left out: under it the look-alikes reach the "
                        "copies, and the store was written again without it)")
        elif self.writes > 2:
            stoplist += ("; the store was written again without it and then with it once more: without it the cut "
                         "below the copies fell short of them")
        config = self.config
        learning = self.threshold.seconds if self.threshold and self.threshold.learned else 0.0
        return "\n".join([
            f"indexed into {self.store} ({config.describe(self._weighed())})",
            f"  documents:            {self.documents:,}",
            f"  skipped lines:        {self.skipped:,}",
            f"  duplicate ids:        {self.duplicate_ids:,} (the last record of an id wins)",
            # an items store compares fields: it has no shingles to stop-list
            *([] if config.kind == ITEMS else [f"  stop-listed shingles: {stoplist}"]),
            f"  bytes per article:    {per_article:.0f} (sketch)",
            "  postings:             " + ("kept (corpus search: FindSimilar, neardup pairs)" if self.postings else
                                          "none (FindSimilar and neardup pairs refuse this store)"),
            f"  engine:               {self.engine}",
            *([f"  default threshold:    {self.threshold.format()}"] if self.threshold else []),
            f"  elapsed:              {self.elapsed:.2f} s ({rate:,.0f} docs/s; reading and sketching "
            f"{self.sketched:.2f} s, stop-list {self.learned - self.sketched:.2f} s, writing "
            f"{self.elapsed - self.learned - learning:.2f} s" + (f", threshold {learning:.2f} s)" if learning else ")"),
        ])


@dataclasses.dataclass(frozen=True)
class IndexOptions:
    """How index_corpus sketches a corpus and writes it (`neardup index`'s options, save where it runs: the engine).

    The sketch options (unit, k, lang, min_word_len, sketch: the kind, "bottomk" or "simhash") left at None take
    the store's configuration (or SketchConfig's defaults for a new store); a given one that differs from an
    existing store's is a ConfigMismatch. `learn` and the stop_* cuts apply only to a new store: an existing store's
    stop-list is what its sketches were made with. `postings=False` creates a store without postings (smaller,
    faster to write, no corpus search); an existing store that keeps postings refuses it (ConfigMismatch), since
    they cannot be dropped. `workers`: the processes of the default LocalEngine. `schema` ({"fields": [...],
    "rules": [...]}: see load_schema) makes an items store of records with fields; it learns no stop-list.
    `threshold` sets the store's default threshold after the writes (threshold.record: a new bottom-K store with
    postings learns it unless told otherwise). Out-of-range numbers are an InvalidArgument when it is made.
    """

    unit: str | None = None
    k: int | None = None
    lang: str | None = None
    min_word_len: int | None = None
    sketch: str | None = None
    workers: int = 1
    strict: bool = False
    stop_min_docs: int = DEFAULT_MIN_DOCS
    stop_fraction: float = DEFAULT_FRACTION
    stop_own_share: float = DEFAULT_OWN_SHARE
    learn: bool = True
    batch_size: int = DEFAULT_BATCH_SIZE
    postings: bool = True
    schema: dict | None = None
    threshold: store_threshold.Choice | None = None

    def default_stoplist(self) -> bool:
        """Whether the stop-list is learned by the default rule: none of its --stop-* options asks otherwise."""
        return (self.stop_min_docs, self.stop_fraction, self.stop_own_share) == (DEFAULT_MIN_DOCS, DEFAULT_FRACTION,
                                                                                  DEFAULT_OWN_SHARE)

    def __post_init__(self) -> None:
        if self.workers < 1 or self.batch_size < 1:
            raise InvalidArgument("--workers and --batch-size must be at least 1")
        if self.stop_min_docs < 2 or not 0.0 <= self.stop_fraction <= 1.0 or not 0.0 <= self.stop_own_share <= 1.0:
            raise InvalidArgument("--stop-min-docs must be at least 2 (a shingle of one document is no boilerplate), "
                                  "--stop-fraction and --stop-own-share in [0, 1]")


def index_corpus(corpus: str, store_path: str, options: IndexOptions = IndexOptions(), *,
                 engine: Engine | None = None) -> IndexSummary:
    """Sketches a JSON Lines corpus into the store at store_path, creating it when there is none, as `options`
    say (IndexOptions). `engine` runs the passes (default: a LocalEngine of options.workers processes;
    dask_engine.DaskEngine on a cluster); this process writes the store either way.
    """
    started = time.monotonic()
    schema, postings, learn = options.schema, options.postings, options.learn
    requested = {name: value for name, value in
                 (("unit", options.unit), ("k", options.k), ("lang", options.lang),
                  ("min_word_len", options.min_word_len), ("kind", options.sketch))
                 if value is not None}
    if options.lang is not None:  # an auto store made by another identifier differs from the command line's
        requested["lang_identifier"] = lang_identifier(canonical_store_lang(options.lang))
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
        if requested.get("kind") == ITEMS and schema is None:
            raise InvalidArgument(f"a new items store needs a schema (--fields SCHEMA): {store_path} holds none yet")
        config, stoplist = SketchConfig(**requested), frozenset()
        learn = learn and config.kind != ITEMS
    summary = IndexSummary(store=str(store_path), config=config, stoplist_size=len(stoplist),
                           postings=indexed if existing is not None else postings)
    store_threshold.check_learnable(options.threshold, config, summary.postings)
    if options.workers > 1:
        load_nltk()  # once, before the worker processes fork (one process imports it at its first use, if any)
    collector = RecordCollector(options.strict, "row" if parquet.is_parquet(corpus) else "line")
    with engine or LocalEngine(options.workers) as engine:
        engine.sketch(corpus, LineSketcher(Sketcher(config, stoplist), final=not learn), collector)
        summary.skipped, summary.duplicate_ids = collector.skipped, collector.duplicate_ids
        kept = collector.kept()
        summary.sketched = time.monotonic() - started
        if existing is None and not collector.chosen:
            skipped = f" ({summary.skipped:,} malformed lines skipped)" if summary.skipped else ""
            raise InvalidArgument(f"corpus {corpus} holds no records{skipped}: a new store learns its stop-list "
                                  f"from its first corpus, so none was created")
        sketcher = None
        if learn:
            cut = stoplist_cut(len(collector.chosen), options.stop_min_docs, options.stop_fraction)
            candidates = engine.frequent(kept, config.kind, cut)
            stop = boilerplate(candidates, engine.sample(kept, config.kind, candidates.values), cut,
                               options.stop_own_share)
            summary.popular_kept = len(candidates.values) - len(stop.values)
            stoplist = frozenset(stop.values.tolist())
            config = dataclasses.replace(config, stoplist_digest=stoplist_digest(stoplist))
            summary.config, summary.stoplist_size, summary.stoplist_learned = config, len(stoplist), True
            summary.stoplisted_occurrences = int(stop.counts.sum())
            sketcher = Sketcher(config, stoplist)
        summary.learned = time.monotonic() - started
        write = _Write(store_path, existing is None, postings, engine, collector, kept, options, summary)
        write(config, stoplist, sketcher)
        found = summary.threshold.found
        if learn and options.default_stoplist() and found is not None and found.up_to_the_copies:
            # rule 8 (docs/threshold.md): the look-alikes reach the copies under the stop-list, so the store is
            # written again from pass 1's hashes without it, and learns its cut under mutual (a stop-list asked
            # for by its --stop-* options, as `neardup train` advises one, is kept)
            seconds = summary.threshold.seconds
            unlisted = dataclasses.replace(config, stoplist_digest=stoplist_digest(frozenset()))
            write.again(unlisted, frozenset(), Sketcher(unlisted, frozenset()), len(stoplist), below_the_copies=True)
            found = summary.threshold.found
            if found is None or not found.near_the_top:
                # without the stop-list the copies do not bunch near the top (a template's shared text lifts its
                # pages towards them): the store is written as it was first
                seconds += summary.threshold.seconds
                write.again(config, stoplist, sketcher, 0)
            summary.threshold = summary.threshold._replace(seconds=seconds + summary.threshold.seconds)  # each one
        summary.engine = engine.describe()
    summary.elapsed = time.monotonic() - started
    return summary


@dataclasses.dataclass
class _Write:
    """Pass 2 of index_corpus into the store at store_path (created by it when `create`), then its threshold: once;
    twice where rule 8 writes a new store again without its stop-list; three times where rule 8's own cut then
    falls short of the copies and the store is written as it was first."""

    store_path: str
    create: bool
    postings: bool
    engine: Engine
    collector: RecordCollector
    kept: list
    options: IndexOptions
    summary: IndexSummary

    def __call__(self, config: SketchConfig, stoplist: frozenset[int], sketcher: Sketcher | None,
                 below_the_copies: bool = False) -> None:
        chosen, options, summary = self.collector.chosen, self.options, self.summary
        summary.writes += 1
        on_workers = self.engine.writes_from_workers and store_backend(self.store_path).parallel_writers
        batches = _batches(self.engine.sketches(chosen, self.kept, sketcher), len(chosen), options.batch_size,
                           summary)
        if self.create:
            store = create_store(self.store_path, config, stoplist, indexed=self.postings,
                                 articles=None if on_workers else batches, postings_done=_postings_progress())
        else:
            store = open_store(self.store_path)
        with store:
            if on_workers and not store.clustered():  # a clustered store's new articles get clusters per batch
                with progress("writing", total=len(chosen)) as bar:
                    for documents, sketch_bytes in self.engine.write(store.location, self.kept, sketcher,
                                                                     options.batch_size):
                        summary.count(documents, sketch_bytes, bar)
            elif not self.create:
                _write_batches(store, batches)
            store.add_languages(self.collector.languages)
            summary.threshold = store_threshold.record(store, options.threshold, created=self.create,
                                                       below_the_copies=below_the_copies)

    def again(self, config: SketchConfig, stoplist: frozenset[int], sketcher: Sketcher | None, dropped: int,
              below_the_copies: bool = False) -> None:
        """Rule 8: the store just written dropped and written again with `stoplist` (`dropped`: the size of the
        learned stop-list left out; `below_the_copies`: the cut learned by rule 8)."""
        open_store(self.store_path).drop()
        summary = self.summary
        summary.documents = summary.sketch_bytes = 0
        summary.config, summary.stoplist_size, summary.stoplist_dropped = config, len(stoplist), dropped
        self(config, stoplist, sketcher, below_the_copies)


def frequent_shingles(corpus: str, config: SketchConfig, min_docs: int = DEFAULT_MIN_DOCS,
                      fraction: float = DEFAULT_FRACTION) -> frozenset[int]:
    """The stop-list a new store of config learns from corpus with `--stop-own-share 0`: every shingle hash in at
    least the cut's count of its records, copies of one text each counted (jobs/train weighs a store's own
    stop-list against it: it drops what a family of texts derived from one another shares, which the own-share
    rule keeps as it keeps a popular story)."""
    unlisted = dataclasses.replace(config, stoplist_digest=stoplist_digest(frozenset()))
    collector = RecordCollector(False, "row" if parquet.is_parquet(corpus) else "line", f"--corpus {corpus} ")
    with LocalEngine() as engine:
        engine.sketch(corpus, LineSketcher(Sketcher(unlisted), final=False), collector)
        cut = stoplist_cut(len(collector.chosen), min_docs, fraction)
        return frozenset(engine.frequent(collector.kept(), config.kind, cut).values.tolist())


def _batches(sketches: Iterator[tuple[str, bytes]], total: int, batch_size: int,
             summary: IndexSummary) -> Iterator[list[tuple[str, bytes]]]:
    """Pass 2's batches of batch_size, each counted once written."""
    with progress("writing", total=total) as bar:
        while batch := list(islice(sketches, batch_size)):
            yield batch
            summary.count(len(batch), sum(len(sketch) for _, sketch in batch), bar)


def _postings_progress() -> Callable[[int, int], None]:
    """A new store's postings, written after its sketches (create_store's postings_done): a bar of their parts."""
    bars = []

    def done(part: int, parts: int) -> None:
        if not bars:
            bars.append(progress("postings", total=parts, unit=" parts"))
        bars[0].update(1)
        if part == parts:
            bars[0].close()
    return done


def _write_batches(store: SketchStore, batches: Iterator[list[tuple[str, bytes]]]) -> None:
    """Into an existing store: each batch atomic, so a killed process leaves whole batches only. In a clustered
    store each new article gets its cluster after its batch (Writer.assign_clusters). (A new store is
    written whole by create_store or not at all, where its backend allows: LMDB.)"""
    clustered = Writer(ServedStore(store)) if store.clustered() else None
    for batch in batches:
        store.put_many(batch)
        if clustered is not None:
            clustered.assign_clusters([doc_id for doc_id, _ in batch])


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


