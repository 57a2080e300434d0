"""The state of a store a whole-store job (`neardup pairs`, `neardup cluster`) reads while others may write to it.

An LMDB store keeps older states: the job reads its own snapshot in place. A Redis store keeps none, and a job
that reads every article's postings cannot start again whenever a write commits, so the job reads a copy in a
temporary LMDB store: every article read in article-number order (not at one state: a snapshot that finds a
write committed is followed by a new one from where it was), then the articles its change log names as written
since the read began read again, until a read of them sees the generation it began at: the copy is the store at
that generation. Only these re-reads start again, and they are short, however large the store. What the copy is
and what follows from it: docs/commands/neardup-pairs.md ("Beside writers").
"""
from __future__ import annotations

import dataclasses
import hashlib
import heapq
import struct
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..core.errors import StoreChanged
from ..store import SketchStore, create_store, open_store, read_consistently
from .progress import progress

#: Reads of the articles written since the copy began before the job gives up on one that sees no write meanwhile,
#: and whole reads begun again because the change log no longer reaches back to the first's generation.
CATCH_UP_ATTEMPTS, COPY_ATTEMPTS = 20, 3
_BATCH = 10_000
_RECORD = struct.Struct(">QHI")  # an article in a spill file: its number, id length, sketch length; then both


@dataclasses.dataclass
class View:
    """Where the job reads (the store itself, or its copy) and what state that is."""
    location: str
    generation: int | None = None  # of the store the copy holds; None: the store read in place

    def describe(self) -> str:
        """How the summary line says what was read ("" for the store read in place)."""
        return "" if self.generation is None else f"a copy of the store at generation {self.generation:,}"


@contextmanager
def read_view(store: SketchStore, location: str) -> Iterator[View]:
    """The view of the store at `location` (open as `store`) a whole-store job reads: the store itself where it
    keeps older states, else a consistent copy in a temporary directory, removed on leaving."""
    if store.keeps_older_states:
        yield View(str(location))
        return
    store.require_postings()
    with tempfile.TemporaryDirectory(prefix="neardup-view-") as directory:
        yield _copy(store, Path(directory) / "store")


def _copy(store: SketchStore, path: Path) -> View:
    """The articles read into a spill file, then the copy built from it and the articles written since, in one
    pass."""
    with tempfile.TemporaryFile(dir=path.parent) as spill:
        generation, written = _read(store, spill)
        with progress("indexing the copy", unit=" parts") as stage:
            copy = create_store(path, store.config, store.stoplist, indexed=True,
                                articles=_batches(spill, written),
                                postings_done=lambda part, parts: stage.update(part - stage.n))
    with copy:
        if store.threshold() is not None:
            copy.set_threshold(store.threshold())
    return View(str(path), generation)


def _read(store: SketchStore, spill: BinaryIO) -> tuple[int, dict[str, tuple[int, bytes] | None]]:
    """Every article into `spill` in article-number order (read as it comes), then (generation G, the article
    number and sketch at G of each article written since the read began, None: deleted): the spill's articles
    but those, and those, are the store at G."""
    with progress("copying", total=store.count(), unit=" articles") as bar:
        for _ in range(COPY_ATTEMPTS):
            spill.seek(0)
            spill.truncate()
            began = store.generation()
            for docno, doc_id, sketch in _scan(store):
                key = doc_id.encode()
                spill.write(_RECORD.pack(docno, len(key), len(sketch)) + key + sketch)
                bar.update()
            for _ in range(CATCH_UP_ATTEMPTS):
                now = store.generation()
                changed = store.changed_since(began)
                if changed is None:  # the change log no longer reaches back: read everything again
                    break
                ids = sorted(changed)
                try:
                    with store.snapshot() as snapshot:
                        found = snapshot.sketches(ids)
                except StoreChanged:
                    continue
                if store.generation() == now:  # nothing written since `now`: these are the articles at `now`
                    return now, dict(zip(ids, found))
            bar.update(-bar.n)
            bar.set_note("written meanwhile: read again")
    raise StoreChanged(f"{store.location} was written during each read of what was written since the copy began "
                       f"({COPY_ATTEMPTS} copies, {CATCH_UP_ATTEMPTS} reads each): writes come faster than it can "
                       "be read; run again when they are fewer")


def _scan(store: SketchStore) -> Iterator[tuple[int, str, bytes]]:
    """(docno, id, sketch) of every article in article-number order, each as some state since the scan began held
    it: a snapshot's scan that finds a write committed goes on in a new snapshot from where it was."""
    start = 0
    while True:
        try:
            with store.snapshot() as snapshot:
                for docno, doc_id, sketch in snapshot.scan(start):
                    yield docno, doc_id, sketch
                    start = docno + 1
            return
        except StoreChanged:
            continue


def _batches(spill: BinaryIO, written: dict[str, tuple[int, bytes] | None]) -> Iterator[list[tuple[str, bytes]]]:
    """The spill's articles but those written since, and those (not deleted) as written, in article-number
    order: the copy numbers them in the same order as the store."""
    later = sorted((found[0], doc_id, found[1]) for doc_id, found in written.items() if found is not None)
    batch: list[tuple[str, bytes]] = []
    for _, doc_id, sketch in heapq.merge(_spilled(spill, written), later):
        batch.append((doc_id, sketch))
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _spilled(spill: BinaryIO, written: dict) -> Iterator[tuple[int, str, bytes]]:
    end = spill.tell()
    spill.seek(0)
    while spill.tell() < end:
        docno, key_length, sketch_length = _RECORD.unpack(spill.read(_RECORD.size))
        doc_id, sketch = spill.read(key_length).decode(), spill.read(sketch_length)
        if doc_id not in written:
            yield docno, doc_id, sketch


def sketch_digest(sketch: bytes | None) -> bytes:
    """A short digest of a sketch: what a job keeps of each article of its view, to tell a rewritten one."""
    return b"" if sketch is None else hashlib.blake2b(sketch, digest_size=16).digest()


def view_articles(location: str) -> dict[str, bytes]:
    """The view's articles in article-number order: id → the digest of its sketch."""
    with open_store(location, readonly=True) as seen:
        return read_consistently(seen, lambda snapshot: {doc_id: sketch_digest(sketch)
                                                         for _, doc_id, sketch in snapshot.scan()})
