"""The one storage interface: id → sketch bytes, written in atomic batches, read in bulk on the request path.

Backends differ in where the bytes live; the checks on what goes in, and what a read sees while others write, are
the same for all of them, so they live here: a batch commits whole or not at all, a snapshot reads one committed
state (or raises StoreChanged where the backend keeps no older states), and read_consistently is the store
layer's one retry policy (READ_ATTEMPTS). The contract: docs/OPERATING.md ("What a read sees while others write").
"""
from __future__ import annotations

import abc
import hashlib
import json
import struct
from typing import Callable, ClassVar, Iterable, Iterator, Sequence, TypeVar

from ..core.candidates import Fingerprints, Postings
from ..core.encoding import check_sketch, encode_sketch
from ..core.errors import ConfigMismatch, InvalidArgument, StoreChanged, StoreUnavailable
from ..core.sketch_config import SKETCHER_VERSIONS, SketchConfig, sketcher_versions_text
from ..core.vocabulary import BOTTOMK

#: LMDB's largest key; other backends keep the same limit so a store can move between them.
MAX_ID_BYTES = 511
#: Snapshots read_consistently reads on before a write committed during each of them is the caller's StoreChanged.
READ_ATTEMPTS = 3
_Read = TypeVar("_Read")


def encode_id(doc_id: str, where: str = "", field: str | None = None) -> bytes:
    """An id as the store's key. The id rule, the one place it is written: a non-empty string of valid Unicode
    of at most MAX_ID_BYTES UTF-8 bytes. `where` (" at position 3") goes into the error message, `field`
    ("ids[3]") into the error."""
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidArgument(f"an id must be a non-empty string{where}, got {doc_id!r}", field)
    try:
        key = doc_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"id {doc_id[:40]!r}{where} is not valid Unicode (lone surrogate)", field) from None
    if len(key) > MAX_ID_BYTES:
        raise InvalidArgument(f"id longer than {MAX_ID_BYTES} UTF-8 bytes{where}: {doc_id[:40]!r}...", field)
    return key


def encode_ids(ids: Sequence[str]) -> list[bytes]:
    """encode_id of each id, in a few C-level passes where all follow the rule (check_ids); a bad id is named as
    encode_id names it."""
    try:
        keys = list(map(str.encode, ids))
    except (TypeError, UnicodeEncodeError):  # not text, or a lone surrogate
        for position, doc_id in enumerate(ids):
            encode_id(doc_id, f" at position {position}")
        raise
    check_ids(ids)
    return keys


def check_ids(ids: Sequence[str], field: str = "ids[{}]") -> None:
    """encode_id's rule for a whole result set in a few C-level passes: only an empty id or one long enough to
    break the limit is looked at one by one (a protobuf string field is always a str of valid Unicode). `field`
    is the request field of the id at a position ("documents[{}].id")."""
    if "" in ids:
        position = list(ids).index("")
        encode_id("", f" at position {position}", field.format(position))
    if ids and max(map(len, ids)) > MAX_ID_BYTES // 4:  # only then can the UTF-8 form exceed the limit
        for position, doc_id in enumerate(ids):
            encode_id(doc_id, f" at position {position}", field.format(position))


def decode_languages(stored: bytes | str | None) -> frozenset[str]:
    """A store's languages as both backends keep them (a JSON list; nothing stored: none)."""
    return frozenset(json.loads(stored)) if stored else frozenset()


def encode_languages(stored: bytes | str | None, added: frozenset[str]) -> str:
    """The stored languages with `added` joined, as both backends keep them (a sorted JSON list)."""
    return json.dumps(sorted(decode_languages(stored) | added))


class SketchStore(abc.ABC):
    """Sketches of one configuration and stop-list, with a generation counter and a change log for caches."""

    backend: str
    #: The format version this backend writes (a store it opens may be of an older one it still reads: see
    #: format_version). Each backend has its own: the layouts have nothing in common.
    FORMAT_VERSION: ClassVar[int]
    #: Whether a snapshot goes on reading the state it began at while others commit (LMDB), or raises
    #: StoreChanged once one did (Redis): see Snapshot.
    keeps_older_states: ClassVar[bool]
    #: Whether every read is a network round trip (the request path then asks for the sketches it lacks together
    #: with the generation, generation_and_get_many); an embedded store's reads cost less than finding which.
    remote_reads = False
    #: Whether writers in several processes gain from writing at once, each batch still atomic (Redis); else
    #: one process writes (LMDB: one write transaction at a time per store).
    parallel_writers = False

    def __init__(self, config: SketchConfig, stoplist: frozenset[int], format_version: int, location: str,
                 indexed: bool = False):
        """Every backend opens a store through here, after reading its metadata from `location`."""
        if config.sketcher_version not in SKETCHER_VERSIONS[config.kind]:
            # Its sketches follow other rules: comparing them with new ones would be silently wrong, and
            # rewriting them needs the texts, which the store does not keep. (A simhash store of version 2,
            # made before weights, is served: this neardup still sketches by its rules.)
            sketches = "" if config.kind == BOTTOMK else f"{config.kind} stores "
            raise StoreUnavailable(
                f"store {location} was made by sketcher version {config.sketcher_version}; this neardup sketches "
                f"{sketches}with {sketcher_versions_text(config.kind)}: rebuild it with "
                f"`neardup index CORPUS --store NEW_STORE`")
        self.location = location
        self._config = config
        self._stoplist = frozenset(stoplist)
        self._format_version = format_version
        self._indexed = indexed

    @staticmethod
    def check_new(config: SketchConfig) -> None:
        """What a backend checks before it creates a store for `config`: only sketches of this neardup's rules
        (`neardup index` creates stores of the current version; an older simhash one it still sketches by can be
        made too, as tests of old stores do)."""
        if config.sketcher_version not in SKETCHER_VERSIONS[config.kind]:
            raise ConfigMismatch(f"cannot create a store for sketcher version {config.sketcher_version}; this "
                                 f"neardup makes {config.kind} sketches with {sketcher_versions_text(config.kind)}")

    @property
    def config(self) -> SketchConfig:
        return self._config

    @property
    def stoplist(self) -> frozenset[int]:
        return self._stoplist

    @property
    def format_version(self) -> int:
        """The format version of this store as opened (its backend's FORMAT_VERSION, or an older one it reads)."""
        return self._format_version

    @property
    def indexed(self) -> bool:
        """Whether the store keeps postings (value → articles) beside the sketches, for corpus search."""
        return self._indexed

    def checked_items(self, items: Sequence[tuple[str, bytes]]) -> list[tuple[bytes, bytes]]:
        """Every (key, sketch) of a batch, checked before anything is written, so a bad item writes nothing."""
        checked = []
        for doc_id, sketch in items:
            if not isinstance(sketch, (bytes, bytearray, memoryview)):
                raise InvalidArgument(f"sketch of {doc_id!r} must be bytes, got {type(sketch).__name__}")
            checked.append((encode_id(doc_id), check_sketch(bytes(sketch), self._config)))
        return checked

    @abc.abstractmethod
    def get_many(self, ids: Sequence[str]) -> list[bytes | None]:
        """The sketch of each id, in order; None where the id is not stored."""

    @abc.abstractmethod
    def put_many(self, items: Sequence[tuple[str, bytes]]) -> int:
        """Writes (id, sketch) pairs in one atomic batch (the last of repeated ids wins); returns the generation."""

    @abc.abstractmethod
    def delete_many(self, ids: Sequence[str]) -> tuple[int, int]:
        """Deletes ids in one atomic batch; returns (how many were stored, generation)."""

    @abc.abstractmethod
    def generation(self) -> int:
        """A counter bumped by every committed write batch, from any process."""

    def generation_and_get_many(self, ids: Sequence[str]) -> tuple[int, list[bytes | None]]:
        """generation(), then get_many(ids): the sketches are at least as new as the generation. A networked
        backend sends both at once, so a request whose sketches the server does not hold yet costs one round
        trip, not two (view.LiveView.read with ids)."""
        return self.generation(), self.get_many(ids)

    @abc.abstractmethod
    def changed_since(self, generation: int) -> set[str] | None:
        """Ids written or deleted after `generation`; None when the change log no longer reaches back that far."""

    @abc.abstractmethod
    def count(self) -> int:
        """How many sketches are stored."""

    @abc.abstractmethod
    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every stored (id, sketch), in the order of the ids' UTF-8 bytes (the same for every backend). Not one
        consistent read on every backend: compare stores while nothing writes to them."""

    def digest(self) -> str:
        """A SHA-256 (hex) over the configuration, the stop-list and every (id, sketch) in id order: two stores
        hold the same sketches of the same configuration iff their digests are equal, whatever their backends
        (`neardup migrate` verifies a copy by it). Postings and article numbers are derived, clusters not
        compared."""
        digest = hashlib.sha256(b"neardup store digest 1\0")
        digest.update(json.dumps(self._config.to_dict(), sort_keys=True).encode() + b"\0")
        digest.update(struct.pack(">I", len(self._stoplist)) + encode_sketch(sorted(self._stoplist)))
        for doc_id, sketch in self.items():
            key = doc_id.encode()
            digest.update(struct.pack(">II", len(key), len(sketch)) + key + sketch)
        return digest.hexdigest()

    @abc.abstractmethod
    def clusters(self, ids: Sequence[str]) -> list[int]:
        """The cluster id of each id; -1 where it has none (not clustered, not stored, no postings)."""

    @abc.abstractmethod
    def clustering(self) -> dict | None:
        """How the store was last clustered (method, threshold, metric, next_id), or None."""

    def require_postings(self) -> None:
        """Refuses a corpus search (or clustering) of a store that keeps no postings, saying how to get one."""
        if not self.indexed:
            raise ConfigMismatch(f"store {self.location} keeps no postings (made without them, or by an older "
                                 "neardup): re-index the corpus into a new store to search it")

    def clustered(self) -> bool:
        """Whether answers carry cluster ids: once `neardup cluster` ran on a store with postings."""
        return self.indexed and bool(self.clustering())

    @abc.abstractmethod
    def set_clusters(self, assignments: Sequence[tuple[str, int]], clustering: dict | None = None) -> int:
        """Writes (id, cluster id) pairs in one atomic batch: a negative cluster id asks for a new one (each distinct
        negative number one id, taken from the clustering's next_id in the same transaction, so concurrent
        writers never share one); ids no longer
        stored are skipped; `clustering` (a full run's method, threshold, metric, next_id) replaces the stored
        description. Returns the generation (caches drop answers that read these ids)."""

    @abc.abstractmethod
    def drop(self) -> None:
        """Removes the store and everything it holds, and closes it: `neardup index` drops a store it has just made
        to write it again another way (jobs/index.py). Its metadata goes first, so a store dropped halfway no
        longer opens."""

    @abc.abstractmethod
    def model(self) -> bytes | None:
        """The trained pair model an items store keeps (`neardup train`: JSON, core/items.PairModel), or None."""

    @abc.abstractmethod
    def set_model(self, model: bytes | None) -> None:
        """Stores a pair model (None removes it), atomically, beside the configuration it was trained for. A
        server reads it when it starts."""

    @abc.abstractmethod
    def threshold(self) -> dict | None:
        """The store's own default threshold, {"threshold": T, "source": "learned" (by `neardup index` from the
        corpus, with "sampled": documents, and "look_alikes_from" where the look-alikes it was learned above begin,
        core/calibration.py), "set" (by hand) or "trained" (by `neardup train` on a text store's
        labelled pairs, with "trained_on": pairs and "metric": the metric it was fitted under)}, or None: the fixed default of its sketch kind
        (core/vocabulary.py), as for every store made before it could hold one."""

    @abc.abstractmethod
    def set_threshold(self, setting: dict | None) -> None:
        """Stores the default threshold (None removes it: the fixed default again), atomically. A server reads it
        when it starts."""

    @abc.abstractmethod
    def languages(self) -> frozenset[str]:
        """The stemmer languages (core/language.py LANGUAGES names) the store's texts carried as their own lang
        (a record's lang in `neardup index`, a document's in Upsert), whatever the store's language; empty when
        none did, and for a store made before it recorded them. A query text without its lang is identified when
        these hold a language besides the store's (language.query_language)."""

    @abc.abstractmethod
    def add_languages(self, languages: Iterable[str]) -> bool:
        """Adds stemmer languages to languages(), atomically; writes (and answers True) only when one is new."""

    @abc.abstractmethod
    def snapshot(self) -> "Snapshot":
        """A read of one committed state of sketches and postings, for a corpus search (a store that keeps no
        postings raises ConfigMismatch, saying how to make one that does). What it sees while others write is
        the contract of Snapshot; read through read_consistently rather than calling this."""

    @abc.abstractmethod
    def close(self) -> None:
        """Releases the store; further calls fail."""

    def __enter__(self) -> "SketchStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Snapshot(abc.ABC):
    """The store at one committed state: a search reads its query, postings and candidates from the same state.
    Articles are numbered (docno) by the store when first written; a number is never reused.

    Under concurrent writes, every method answers from the state the snapshot began at, or (a backend that keeps
    no older states, once a write committed since then) raises StoreChanged; never from another state, never
    from part of a batch. A backend that keeps older states never raises StoreChanged."""

    @abc.abstractmethod
    def sketch(self, doc_id: str) -> tuple[int, bytes] | None:
        """(docno, sketch) of a stored article, or None."""

    def sketches(self, doc_ids: Sequence[str]) -> list[tuple[int, bytes] | None]:
        """sketch() of each id, in order; a store whose reads are round trips reads them all in one."""
        return [self.sketch(doc_id) for doc_id in doc_ids]

    @abc.abstractmethod
    def postings(self, query: bytes) -> Postings:
        """Every stored article indexed under each of the query sketch's index values (core.candidates.index_values:
        its own values for bottom-K, its four permutation-table keys for SimHash); a hot value's long articles
        may be left out (Postings.unread)."""

    @abc.abstractmethod
    def unread_postings(self, query: bytes, value_indices) -> Postings:
        """The long articles that postings(query) left out for these query values."""

    @abc.abstractmethod
    def articles(self, docnos: Sequence[int]) -> list[tuple[str, bytes]]:
        """(id, sketch) of each docno, in order (every docno given must be stored)."""

    @abc.abstractmethod
    def scan(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bytes]]:
        """(docno, id, sketch) of the articles numbered start ≤ docno < stop, in docno order."""

    def id_keys(self) -> Iterator[bytes]:
        """The UTF-8 of every stored id, in no particular order (a backend that can reads them without the
        sketches): what a sample drawn by the ids (core.calibration.sampled_keys) is drawn from."""
        return (doc_id.encode() for _, doc_id, _ in self.scan())

    def fingerprints(self) -> Fingerprints:
        """Every SimHash fingerprint of a simhash store, for the exact scan of a search past what its permutation
        tables guarantee (core.candidates.simhash_scan)."""
        return Fingerprints.of((docno, sketch) for docno, _, sketch in self.scan())

    @abc.abstractmethod
    def docno_limit(self) -> int:
        """One more than the largest docno ever given: scan(0, docno_limit()) sees every article."""

    @abc.abstractmethod
    def close(self) -> None:
        """Ends the read."""

    def __enter__(self) -> "Snapshot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class MemoizedArticles:
    """Snapshot.articles of one snapshot, each article read once: a whole-store job (all pairs, a sample of the
    candidate pairs) reads the same candidates for many queries. Articles are kept while their bytes stay within
    `budget`; past it the rest are read each time."""

    def __init__(self, snapshot: Snapshot, budget: int = 256 << 20):
        self._snapshot, self._room = snapshot, budget
        self._known: dict[int, tuple[str, bytes]] = {}

    def __call__(self, docnos: Sequence[int]) -> list[tuple[str, bytes]]:
        known = self._known
        unread = [docno for docno in docnos if docno not in known]
        if unread:
            read = self._snapshot.articles(unread)
            if self._room > 0:
                for docno, article in zip(unread, read):
                    known[docno] = article
                self._room -= sum(len(doc_id) + len(sketch) + 120 for doc_id, sketch in read)
            else:
                found = dict(zip(unread, read))
                return [known[docno] if docno in known else found[docno] for docno in docnos]
        return [known[docno] for docno in docnos]


def read_consistently(store: SketchStore, read: Callable[..., _Read], attempts: int = READ_ATTEMPTS,
                      with_generation: bool = False) -> _Read:
    """read(snapshot) on a new snapshot of store, whose every read sees one committed state; when a write
    committed during it on a store that keeps no older states (StoreChanged), read again on a new snapshot (it
    sees that write whole), `attempts` times in all, then the StoreChanged is the caller's. `read` must compute
    its whole answer inside (a generator would escape the snapshot), and must not hand anything out before it
    returns: an attempt that raised StoreChanged is thrown away (what it changed must be safe to do again).
    `with_generation`: read(snapshot, generation), the store's generation read just before the snapshot began,
    so the snapshot's state is at least that new (whoever catches up later from it misses no write)."""
    for attempt in range(1, attempts + 1):
        try:
            generation = store.generation() if with_generation else None
            with store.snapshot() as snapshot:
                return read(snapshot, generation) if with_generation else read(snapshot)
        except StoreChanged:
            if attempt == attempts:
                raise
    raise ValueError(f"attempts must be at least 1, got {attempts}")


def stored_ids(store: SketchStore) -> list[str]:
    """Every stored id in article-number order, read from one committed state (read_consistently)."""
    return read_consistently(store, lambda snapshot: [doc_id for _, doc_id, _ in snapshot.scan()])
