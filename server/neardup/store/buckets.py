"""The postings format every backend stores, and the one place it is encoded, moved and searched: value → the
articles indexed under it (core/candidates.index_values), grouped in buckets by the value's low BUCKET_BITS bits,
6 bytes an entry (a 16-bit tag, the article number), so a write costs what it adds, not what the buckets hold.
A backend keeps buckets as key (4 bytes, big-endian bucket number) → the entries' bytes, and gives a search
(BucketSnapshot) the buckets of one committed state. Why this format: docs/design.md ("Corpus search").
"""
from __future__ import annotations

import abc
import struct
from pathlib import Path
from typing import Callable, Hashable, NamedTuple, Sequence

import numpy as np

from ..core import candidates
from ..core.candidates import Fingerprints, Postings, index_values
from .base import Snapshot

BUCKET_BITS = 20
BUCKET_MASK = (1 << BUCKET_BITS) - 1
ENTRY = np.dtype([("tag", "<u2"), ("docno", "<u4")])  # packed: 6 bytes
_LENGTH_BITS = 4  # the low bits of a tag: a short article's length (< MIN_EVIDENCE = 16), 0 for a long one
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1
#: The most decoded large buckets a store keeps (a few hundred at 1M articles).
_MAX_LARGE_BUCKETS = 4096


def bucket_keys(values: np.ndarray) -> list[bytes]:
    """The bucket key of each index value."""
    raw_keys = (values & BUCKET_MASK).astype(">u4").tobytes()
    return [raw_keys[at:at + 4] for at in range(0, len(raw_keys), 4)]


class LargeBucket:
    """A postings bucket of over candidates.HOT_POSTINGS entries (a hot value's, at 1M articles 10K-100K of them),
    decoded once and grouped by value: reading and scanning it per query was most of a search's time (~300 KB a
    query at 1M). Valid only for the committed state it was read at (`state`: LMDB's transaction id, a Redis
    store's generation): a snapshot of another one reads the bucket again."""

    __slots__ = ("state", "_by_value")

    def __init__(self, state: Hashable, bucket: bytes):
        self.state = state
        words = np.frombuffer(bucket, "<u2").reshape(-1, 3)  # an entry is 3 words: tag, docno low, docno high
        high, length = words[:, 0] >> _LENGTH_BITS, (words[:, 0] & _LENGTH_MASK).astype(np.uint8)
        docnos = words[:, 1].astype(np.uint32) | words[:, 2].astype(np.uint32) << np.uint32(16)
        order = np.lexsort((length == 0, high))  # by value, short articles first, in bucket order within
        high, length, docnos = high[order], length[order], docnos[order]
        starts = np.flatnonzero(np.diff(high, prepend=-1)).tolist() + [len(high)]
        self._by_value: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for start, stop in zip(starts, starts[1:]):
            split = start + int(np.count_nonzero(length[start:stop]))
            self._by_value[int(high[start])] = (docnos[start:split], length[start:split], docnos[split:stop])

    def entries(self, value_high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(short articles' docnos, their lengths, long articles' docnos) of the value with these high bits."""
        return self._by_value.get(value_high, _NO_ENTRIES)


_NO_ENTRIES = (np.empty(0, np.uint32), np.empty(0, np.uint8), np.empty(0, np.uint32))


class LargeBuckets(dict):
    """What a store decodes once per committed state and keeps across snapshots of it: its large buckets by key,
    and a simhash store's fingerprints (BucketSnapshot.fingerprints)."""

    fingerprints: tuple[Hashable, Fingerprints] | None = None

    def remember(self, key: bytes, bucket: LargeBucket) -> LargeBucket:
        if len(self) >= _MAX_LARGE_BUCKETS:
            self.clear()
        self[key] = bucket
        return bucket

    def at(self, keys: list[bytes], state: Hashable) -> dict[bytes, LargeBucket]:
        """The large buckets among keys decoded at this committed state."""
        found = {}
        for key in keys:
            bucket = self.get(key)
            if bucket is not None and bucket.state == state:
                found[key] = bucket
        return found


def rewrite(old: list[tuple[bytes, int]], new: list[tuple[bytes, int]], kind: str,
            read: Callable[[list[bytes]], dict[bytes, bytes]], append: bool = False) -> "BucketWrites":
    """The bucket writes that move articles' postings: `old` (stored sketch, docno) pairs leave their buckets,
    `new` (sketch, docno) pairs join theirs; read(keys) gives the stored buckets among keys. `append`: the backend
    appends to a stored bucket in place (Redis' APPEND), so only the buckets old articles leave are read and
    rewritten, and the others get only their new entries, whatever their size."""
    old_values, old_docnos, _ = _flatten(old, kind)
    new_values, new_docnos, length_class = _flatten(new, kind)
    added = np.empty(len(new_values), ENTRY)
    added["tag"] = _tags(new_values, length_class)
    added["docno"] = new_docnos
    new_buckets = new_values & BUCKET_MASK
    order = np.argsort(new_buckets, kind="stable")
    new_buckets, added = new_buckets[order], added[order].tobytes()
    touched = _distinct(np.concatenate([old_values & BUCKET_MASK, new_buckets]))
    ends = (np.searchsorted(new_buckets, touched, side="right") * ENTRY.itemsize).tolist()
    starts = [0] + ends[:-1]
    raw_keys = touched.astype(">u4").tobytes()
    keys = [raw_keys[at:at + 4] for at in range(0, len(raw_keys), 4)]
    leaving = [(struct.pack(">I", bucket), docnos) for bucket, docnos in _grouped(old_values & BUCKET_MASK,
                                                                                  old_docnos)]
    wanted = [key for key, _ in leaving] if append else keys
    stored = read(wanted) if wanted else {}
    # an old article's entries leave every bucket of its old values: only those buckets are decoded
    dropping = {}
    for key, docnos in leaving:
        entries = np.frombuffer(stored.get(key, b""), ENTRY)
        dropping[key] = entries[~np.isin(entries["docno"], docnos)].tobytes()
    writes = BucketWrites([], [], [])
    for key, start, end in zip(keys, starts, ends):
        if append and key not in dropping:
            if end > start:
                writes.appends.append((key, added[start:end]))
            continue
        value = (dropping[key] if key in dropping else stored.get(key, b"")) + added[start:end]
        if value:
            writes.values.append((key, value))
        elif key in stored:
            writes.deletes.append(key)
    return writes


class BucketBuilder:
    """The postings of a new store, built once per bucket where put_many would rewrite every bucket a batch touches
    (a cost growing with the store): each batch's entries spill to one of PARTS files by their bucket's high bits,
    then each file, sorted by bucket, gives its buckets in key order. A bucket's entries keep the order they were
    added in, so a store built of the same batches holds the same bytes either way."""

    PARTS_BITS = 6
    _LOW_BITS = BUCKET_BITS - PARTS_BITS  # a bucket's number within its part
    _SPILLED = np.dtype([("low", "<u2"), ("tag", "<u2"), ("docno", "<u4")])  # packed: 8 bytes

    def __init__(self, kind: str, directory: Path):
        self._kind = kind
        self._files = [directory / f"postings-{part:02d}" for part in range(1 << self.PARTS_BITS)]
        for path in self._files:
            path.write_bytes(b"")

    def add(self, sketches: list[tuple[bytes, int]]) -> None:
        """The (sketch, docno) pairs of a batch, docnos ascending across batches."""
        values, docnos, length_class = _flatten(sketches, self._kind)
        spilled = np.empty(len(values), self._SPILLED)
        spilled["low"] = values & ((1 << self._LOW_BITS) - 1)
        spilled["tag"] = _tags(values, length_class)
        spilled["docno"] = docnos
        part = ((values & BUCKET_MASK) >> self._LOW_BITS).astype(np.uint8)
        order = np.argsort(part, kind="stable")  # a radix sort: 8-bit keys
        spilled, part = spilled[order], part[order]
        bounds = np.searchsorted(part, np.arange(len(self._files) + 1)).tolist()
        for path, start, stop in zip(self._files, bounds, bounds[1:]):
            if stop > start:
                with path.open("ab") as out:
                    out.write(spilled[start:stop].tobytes())

    def parts(self) -> int:
        return len(self._files)

    def buckets(self, part: int) -> list[tuple[bytes, bytes]]:
        """(key, entries) of every bucket of one part, in key order; its spill file is removed."""
        spilled = np.fromfile(self._files[part], self._SPILLED)
        self._files[part].unlink()
        if not len(spilled):
            return []
        spilled = spilled[np.argsort(spilled["low"], kind="stable")]  # a radix sort: 16-bit keys
        entries = np.empty(len(spilled), ENTRY)
        entries["tag"], entries["docno"] = spilled["tag"], spilled["docno"]
        data = entries.tobytes()
        low = spilled["low"]
        cuts = np.flatnonzero(np.diff(low)) + 1
        starts = np.concatenate([[0], cuts]).tolist()
        ends = np.concatenate([cuts, [len(low)]]).tolist()
        raw_keys = ((part << self._LOW_BITS) | low[starts].astype(np.uint32)).astype(">u4").tobytes()
        width = ENTRY.itemsize
        return [(raw_keys[4 * i:4 * i + 4], data[start * width:end * width])
                for i, (start, end) in enumerate(zip(starts, ends))]

    def discard(self) -> None:
        for path in self._files:
            path.unlink(missing_ok=True)


class BucketWrites(NamedTuple):
    """What a batch does to the buckets: whole new values, entries appended to stored buckets, buckets emptied."""
    values: list[tuple[bytes, bytes]]
    appends: list[tuple[bytes, bytes]]
    deletes: list[bytes]


class PostingsPlan(NamedTuple):
    """A query's index values, their bucket keys, the large buckets held decoded, and the buckets to read."""
    values: np.ndarray
    keys: list[bytes]
    large: dict
    wanted: list[bytes]


class BucketSnapshot(Snapshot):
    """Corpus search over the buckets of one committed state: a backend gives the buckets (_buckets), the state's
    identity (_state) and the store's LargeBuckets memo."""

    def __init__(self, kind: str, large_buckets: LargeBuckets):
        self._kind = kind
        self._large_buckets = large_buckets
        self._held: tuple[bytes, dict[bytes, LargeBucket]] = (b"", {})  # the latest query's, for unread_postings

    @abc.abstractmethod
    def _buckets(self, keys: list[bytes]) -> dict[bytes, bytes]:
        """The stored buckets among keys, at this snapshot's state."""

    @property
    @abc.abstractmethod
    def _state(self) -> Hashable:
        """What identifies the committed state read (LargeBucket.state)."""

    def fingerprints(self) -> Fingerprints:
        """Read once per committed state (a write makes the next search read them all again)."""
        held = self._large_buckets.fingerprints
        if held is None or held[0] != self._state:
            held = (self._state, super().fingerprints())
            self._large_buckets.fingerprints = held
        return held[1]

    def postings(self, query: bytes) -> Postings:
        """The query values' entries: small buckets decoded together; a large one (over candidates.HOT_POSTINGS
        entries) from its decoded form, which the store keeps per committed state (LargeBucket), where a value
        holding more than candidates.HOT_POSTINGS long articles leaves them out (Postings.unread) until asked."""
        plan = self.postings_plan(query)
        return self.postings_of(query, plan, self._buckets(plan.wanted) if plan.wanted else {})

    def postings_plan(self, query: bytes) -> "PostingsPlan":
        """What postings(query) reads: the buckets of the query's values not held decoded (`wanted`). A backend
        that reads many snapshots' buckets together (a cluster store's shards) reads them, then postings_of()."""
        values = index_values([query], self._kind).values
        keys = bucket_keys(values)
        large = self._large_buckets.at(keys, self._state)
        return PostingsPlan(values, keys, large, [key for key in keys if key not in large])

    def postings_of(self, query: bytes, plan: "PostingsPlan", found: dict[bytes, bytes]) -> Postings:
        """postings(query) from its plan and the stored buckets among plan.wanted (`found`)."""
        values, keys, large, _ = plan
        for key, bucket in found.items():
            if len(bucket) > candidates.HOT_POSTINGS * ENTRY.itemsize:
                large[key] = self._large_buckets.remember(key, LargeBucket(self._state, bucket))
        held = [b"" if key in large else found.get(key, b"") for key in keys]
        sizes = np.fromiter(map(len, held), np.int64, len(held)) // ENTRY.itemsize
        small = np.flatnonzero(sizes)
        entries = np.frombuffer(b"".join([held[i] for i in small.tolist()]), ENTRY)
        value_index = np.repeat(small, sizes[small])
        tags = entries["tag"]
        match = (tags >> _LENGTH_BITS) == (values >> BUCKET_BITS)[value_index]
        parts = [(value_index[match], entries["docno"][match], (tags[match] & _LENGTH_MASK).astype(np.uint8))]
        unread, unread_lengths = [], []
        self._held = (query, large)
        for index, key in enumerate(keys):
            if key not in large:
                continue
            short, short_lengths, long = large[key].entries(int(values[index]) >> BUCKET_BITS)
            if len(long) > candidates.HOT_POSTINGS:  # only the short articles' entries are taken
                unread.append(index)
                unread_lengths.append(len(long))
                parts.append((np.full(len(short), index), short, short_lengths))
            else:
                parts.append((np.full(len(short) + len(long), index), np.concatenate([short, long]),
                              np.concatenate([short_lengths, np.zeros(len(long), np.uint8)])))
        return Postings(*(np.concatenate(column) for column in zip(*parts)), np.array(unread, np.intp),
                        np.array(unread_lengths, np.int64))

    def unread_postings(self, query: bytes, value_indices: Sequence[int]) -> Postings:
        """The long articles' entries that postings(query) left out for these query values (Postings.unread)."""
        values = index_values([query], self._kind).values
        large = self._held[1] if self._held[0] == query else {}
        parts = [(np.empty(0, np.intp), np.empty(0, np.uint32), np.empty(0, np.uint8))]
        for index in np.asarray(value_indices).tolist():
            key = struct.pack(">I", int(values[index]) & BUCKET_MASK)
            bucket = large.get(key) or LargeBucket(self._state, self._buckets([key]).get(key, b""))
            long = bucket.entries(int(values[index]) >> BUCKET_BITS)[2]
            parts.append((np.full(len(long), index), long, np.zeros(len(long), np.uint8)))
        return Postings(*(np.concatenate(column) for column in zip(*parts)))


def _flatten(sketches: list[tuple[bytes, int]], kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The index values of (sketch, docno) pairs (core.candidates.index_values), and the docno and length class of
    each value."""
    indexed = index_values([sketch for sketch, _ in sketches], kind)
    docnos = np.repeat(np.array([docno for _, docno in sketches], np.uint64), indexed.lengths)
    return indexed.values, docnos, np.repeat(indexed.length_class, indexed.lengths)


def _tags(values: np.ndarray, length_class: np.ndarray) -> np.ndarray:
    """An entry's tag: the value's bits above the bucket's, then the article's length class."""
    return ((values >> BUCKET_BITS).astype(np.uint16) << _LENGTH_BITS) | length_class.astype(np.uint16)


def _grouped(buckets: np.ndarray, docnos: np.ndarray):
    """(bucket, the docnos of its entries) per distinct bucket."""
    order = np.argsort(buckets, kind="stable")
    buckets, docnos = buckets[order], docnos[order]
    cuts = np.flatnonzero(np.diff(buckets)) + 1
    return zip(buckets[np.concatenate([[0], cuts])].tolist() if len(buckets) else [], np.split(docnos, cuts))


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a compare: faster than np.unique's hashing here)."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values
