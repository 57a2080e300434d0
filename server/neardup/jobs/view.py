"""The state of a store a whole-store job (`neardup pairs`, `neardup cluster`) reads while others may write to it.

An LMDB store keeps older states: the job reads its own snapshot in place. A Redis store keeps none, and a job
that reads every article's postings cannot start again whenever a write commits, so the job reads a copy: each
key space of the store (store.SketchStore.key_spaces: a Redis store's one, a cluster store's shards) is read
whole at one generation into a temporary LMDB store, a key space written during its read being read again
(COPY_ATTEMPTS in all). What the copy is and what follows from it: docs/commands/neardup-pairs.md.
"""
from __future__ import annotations

import dataclasses
import hashlib
import struct
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from ..core.errors import StoreChanged
from ..store import SketchStore, create_store, open_store, read_consistently
from .progress import Stage, progress

#: Reads of one key space, each begun again because a write committed in it meanwhile, before the job gives up.
COPY_ATTEMPTS = 5
_BATCH = 10_000
_RECORD = struct.Struct(">HI")  # an article in a spill file: id length, sketch length; then both


@dataclasses.dataclass
class View:
    """Where the job reads (the store itself, or its copy) and what state that is."""
    location: str
    generations: tuple[int, ...] | None = None  # of each key space read into the copy; None: read in place

    def describe(self) -> str:
        """How the summary line says what was read ("" for the store read in place)."""
        if self.generations is None:
            return ""
        if len(self.generations) == 1:
            return f"a copy of the store at generation {self.generations[0]:,}"
        shown = ", ".join(f"{generation:,}" for generation in self.generations)
        return (f"a copy of the store's {len(self.generations)} shards at generations {shown} "
                f"(sum {sum(self.generations):,})")


@contextmanager
def read_view(store: SketchStore, location: str) -> Iterator[View]:
    """The view of the store at `location` (open as `store`) a whole-store job reads: the store itself where it
    keeps older states, else a consistent copy in a temporary directory, removed on leaving."""
    if store.keeps_older_states:
        yield View(str(location))
        return
    store.require_postings()
    with tempfile.TemporaryDirectory(prefix="neardup-view-") as directory:
        yield _copy(store, Path(directory))


def _copy(store: SketchStore, directory: Path) -> View:
    """Each key space read whole into a spill file of its own, then the copy built from them in one pass."""
    path, generations = directory / "store", []
    with ExitStack() as files:
        spills = [files.enter_context(tempfile.TemporaryFile(dir=directory)) for _ in store.key_spaces()]
        with progress("copying", total=store.count(), unit=" articles") as bar:
            for space, spill in zip(store.key_spaces(), spills):
                generations.append(_read_whole(space, spill, bar))
        with progress("indexing the copy", unit=" parts") as stage:
            copy = create_store(path, store.config, store.stoplist, indexed=True, articles=_batches(spills),
                                postings_done=lambda part, parts: stage.update(part - stage.n))
    with copy:
        if store.threshold() is not None:
            copy.set_threshold(store.threshold())
    return View(str(path), tuple(generations))


def _read_whole(space: SketchStore, spill: BinaryIO, bar: Stage) -> int:
    """Writes every article of the key space to `spill`, all read at one generation (the store's generation is
    the same before and after the read, and no read of it saw another state): that generation."""
    for _ in range(COPY_ATTEMPTS):
        spill.seek(0)
        spill.truncate()
        read = 0
        try:
            before = space.generation()
            with space.snapshot() as snapshot:
                for _, doc_id, sketch in snapshot.scan():
                    key = doc_id.encode()
                    spill.write(_RECORD.pack(len(key), len(sketch)) + key + sketch)
                    read += 1
                    if read % 1000 == 0:
                        bar.update(1000)
            if space.generation() == before:
                bar.update(read % 1000)
                return before
        except StoreChanged:
            pass
        bar.update(-(read - read % 1000))
        bar.set_note(f"{space.location} written meanwhile: read again")
    raise StoreChanged(f"{space.location} was written during each of {COPY_ATTEMPTS} reads of it: writes come "
                       "faster than it can be read whole; run again when they are fewer (or, on a cluster store, "
                       "spread them over more shards)")


def _batches(spills: list[BinaryIO]) -> Iterator[list[tuple[str, bytes]]]:
    for spill in spills:
        end = spill.tell()
        spill.seek(0)
        batch = []
        while spill.tell() < end:
            key_length, sketch_length = _RECORD.unpack(spill.read(_RECORD.size))
            batch.append((spill.read(key_length).decode(), spill.read(sketch_length)))
            if len(batch) == _BATCH:
                yield batch
                batch = []
        if batch:
            yield batch


def sketch_digest(sketch: bytes | None) -> bytes:
    """A short digest of a sketch: what a job keeps of each article of its view, to tell a rewritten one."""
    return b"" if sketch is None else hashlib.blake2b(sketch, digest_size=16).digest()


def view_articles(location: str) -> tuple[list[str], list[bytes]]:
    """The ids of the view's articles in article-number order, and the digest of each one's sketch."""
    with open_store(location, readonly=True) as seen:
        def read(snapshot):
            ids, digests = [], []
            for _, doc_id, sketch in snapshot.scan():
                ids.append(doc_id)
                digests.append(sketch_digest(sketch))
            return ids, digests

        return read_consistently(seen, read)
