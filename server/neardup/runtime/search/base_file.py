"""The search index file: one base of a bottom-K store's corpus search (postings, sketches and ids, in the layout
core/_search_file.c documents), which every process of a host maps read-only and searches in place, so the page
cache holds one copy for all of them and for their restarts. Whoever maps it catches up with the store first
(delta.py), so a replaced or deleted article is never answered from the file; a file is written whole and renamed
into place, and checked whole when mapped. The format and why: docs/design.md ("One search index per host").
"""
from __future__ import annotations

import mmap
import os
import time
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

import numpy as np

from ...core import _search, candidates
from ...core.errors import ConfigMismatch, StoreUnavailable
from ...core.postings_index import PostingsIndex
from ...store import is_redis
from ...store.base import SketchStore, Snapshot, read_consistently
from .delta import PROGRESS_EVERY, check_servable

#: The file's name inside an LMDB store's directory, where it is looked for unless a path is given.
FILE_NAME = "search-index"
#: The steps of a build (BuildProgress).
READING, POSTINGS = "reading articles", "building the postings"
#: Postings built in memory at a time before they go to the file (0: _search.build_file's own, 384 MB).
BUILD_WINDOW = 0

#: What a build says as it goes: a step ("reading articles", "building the postings") and its count of articles so
#: far; the caller shows it (a bar, a summary line, a log line: jobs/progress.counted_steps, serve's log).
BuildProgress = Callable[[str, int], None]


def default_path(location: str | os.PathLike) -> Path | None:
    """Where a store's index file is unless given: inside an LMDB store's directory; None for Redis."""
    return None if is_redis(str(location)) else Path(location) / FILE_NAME


def resolve_path(location: str | os.PathLike, given: str | os.PathLike | None) -> Path:
    """The index file of the store at `location`: `given`, else the default; a Redis store needs one given."""
    if given is not None:
        return Path(given)
    path = default_path(location)
    if path is None:
        raise ConfigMismatch(f"a Redis store keeps no files: give its search index file's path "
                             f"(--search-index-file PATH) for store {location}")
    return path


def rebuild_command(location: str, path: Path) -> str:
    given = "" if default_path(location) == path else f" --file {path}"
    return f"`neardup search-index --store {location}{given}`"


def check_store(store: SketchStore) -> None:
    """Refuses a store an index file cannot serve, naming the fix."""
    check_servable(store, "a search index file")


class Identity(NamedTuple):
    """Which file a path names (a new file renamed over it is another)."""
    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> "Identity":
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def identity(path: Path) -> Identity | None:
    try:
        return Identity.of(os.stat(path))
    except OSError:
        return None


class Mapped(NamedTuple):
    index: PostingsIndex
    header: dict
    identity: Identity


#: Page tables filled when the file is mapped (Linux): the checksum then reads it at memory speed, where taking a
#: fault per few pages cost more than the reading.
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def map_file(path: Path) -> tuple[mmap.mmap, Identity]:
    """The file mapped read-only and shared (every process's pages are the page cache's), and which file it is."""
    try:
        with open(path, "rb") as file:
            stat = os.fstat(file.fileno())
            if stat.st_size == 0:
                raise ValueError("damaged: the file is empty")
            mapped = mmap.mmap(file.fileno(), 0, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ)
            return mapped, Identity.of(stat)
    except OSError as error:
        raise StoreUnavailable(f"cannot read search index file {path}: {error.strerror}") from None


def read_header(path: Path, store: SketchStore) -> dict:
    """The file's header, checked (format version, counts, sections, the store's configuration), not yet its
    checksum (mapping it checks that): what `serve` checks once before its workers start."""
    mapped, _ = map_file(path) if path.exists() else (None, None)
    if mapped is None:
        raise StoreUnavailable(f"no search index file {path}: build it with "
                               f"{rebuild_command(store.location, path)}")
    try:
        header = _search.header(mapped)
    except ValueError as error:
        raise _refused(path, store, error) from None
    finally:
        mapped.close()
    _check_config(path, header, store)
    return header


def open_mapped(path: Path, store: SketchStore) -> Mapped:
    """The file mapped and checked whole (its checksum, every count and offset): an index searching it in place,
    not yet caught up with the store (delta.catch_up)."""
    mapped, ident = map_file(path)
    try:
        header = _search.header(mapped)
        _check_config(path, header, store)
        index = PostingsIndex(store.config.k, file=mapped)
    except ValueError as error:
        mapped.close()
        raise _refused(path, store, error) from None
    except BaseException:
        mapped.close()
        raise
    return Mapped(index, header, ident)


def _check_config(path: Path, header: dict, store: SketchStore) -> None:
    if header["config"] != store.config.digest() or header["k"] != store.config.k:
        raise ConfigMismatch(f"search index file {path} was built for sketch configuration {header['config']!r}, "
                             f"store {store.location} has {store.config.digest()!r}: rebuild it with "
                             f"{rebuild_command(store.location, path)}")


def _refused(path: Path, store: SketchStore, error: ValueError) -> StoreUnavailable:
    return StoreUnavailable(f"search index file {path} cannot be used ({error}): rebuild it with "
                            f"{rebuild_command(store.location, path)}")


# --- writing a file -----------------------------------------------------------------------------------------------

def write_file(path: Path, export, generation: int, store: SketchStore, hot_postings: int | None = None) -> dict:
    """A new file from an index's export (PostingsIndex.export) at `generation`, renamed over `path` once whole and
    synced; its header."""
    hot = candidates.HOT_POSTINGS if hot_postings is None else hot_postings
    limit, articles, pool_values, id_bytes = export.sizes()

    def fill(file, mapped: mmap.mmap) -> None:
        _search.init_header(mapped, store.config.k, hot, generation, store.config.digest(), limit, articles,
                            pool_values, id_bytes, int(time.time()))
        export.write(mapped)

    return _write(path, (limit, articles, pool_values, id_bytes), hot, fill)


def _write(path: Path, sizes: tuple[int, int, int, int], hot: int, fill) -> dict:
    """The steps every file goes through: room for it under a temporary name, fill(file, mapping) writes the
    header and the pool, ids and offsets, build_file the postings; sealed, cut to size, synced, renamed."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w+b") as file:
            file.truncate(_search.file_size(*sizes, hot))
            with mmap.mmap(file.fileno(), 0) as mapped:
                fill(file, mapped)
                size = _search.build_file(mapped, BUILD_WINDOW)
                _search.seal(mapped, size)
                mapped.flush()
                header = _search.header(memoryview(mapped)[:size])
            file.truncate(size)
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _sync_directory(path.parent)
    return header


def _sync_directory(path: Path) -> None:
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


class Built(NamedTuple):
    path: Path
    header: dict
    seconds: float

    def summary(self) -> str:
        """The line `neardup search-index` and `neardup index --search-index` print."""
        header = self.header
        return (f"search index {self.path}: {header['articles']:,} articles, {header['pool_values']:,} postings at "
                f"generation {header['generation']:,}, {header['file_bytes']:,} bytes, built in {self.seconds:.1f} s")


def build_store_file(store: SketchStore, given: str | os.PathLike | None = None,
                     progress: BuildProgress = lambda *_: None) -> Built:
    """The store's search index file built from it, at `given` or else its default place (resolve_path): what
    `neardup search-index`, `neardup index --search-index` and `neardup serve --search-index shared` (when there is
    none yet) run, each showing `progress` its own way (jobs/progress.counted_steps, serve's log)."""
    check_store(store)
    return build(store, resolve_path(store.location, given), progress)


class Checked(NamedTuple):
    """A search index file checked whole against its store (`neardup search-index --check`)."""
    path: Path
    header: dict
    store_generation: int
    changed: "set[str] | None"  # the ids written since the file's generation; None: the change log no longer reaches


def check_store_file(store: SketchStore, given: str | os.PathLike | None = None) -> Checked:
    """The store's search index file (at `given`, else its default place) mapped and checked whole, and how far
    behind the store it is."""
    path = resolve_path(store.location, given)
    header = open_mapped(path, store).header
    return Checked(path, header, store.generation(), store.changed_since(header["generation"]))


def build(store: SketchStore, path: Path, progress: BuildProgress = lambda *_: None,
          hot_postings: int | None = None) -> Built:
    """A file from the store: one scan of its articles in docno order (the sketches stream into the file), then
    the postings built in the file; at the generation read before the scan (those written during it are in the
    change log that whoever maps the file catches up from)."""
    check_store(store)
    began = time.perf_counter()

    def attempt(snapshot: Snapshot, generation: int) -> dict:
        limit = snapshot.docno_limit()
        return write_articles(path, snapshot.scan(0, limit), limit, store.config.k, store.config.digest(),
                              generation, progress, hot_postings)

    header = read_consistently(store, attempt, with_generation=True)
    return Built(Path(path), header, time.perf_counter() - began)


def write_articles(path: Path, articles: Iterable[tuple[int, str, bytes]], limit: int, k: int, config: str,
                   generation: int, progress: BuildProgress = lambda *_: None,
                   hot_postings: int | None = None) -> dict:
    """A file of `articles` ((docno, id, sketch) in docno order, every docno below `limit`), sketches of K = k
    and configuration digest `config`, at `generation`: the sketches stream into a scratch file beside it, then
    into the file, whose postings are built in place. Its header."""
    hot = candidates.HOT_POSTINGS if hot_postings is None else hot_postings
    path = Path(path)
    lengths = np.zeros(limit + 1, np.uint64)
    id_lengths = np.zeros(limit + 1, np.uint64)
    ids = bytearray()
    temporary = path.with_name(f".{path.name}.{os.getpid()}.pool")
    try:
        with open(temporary, "w+b") as pool:
            chunk: list[bytes] = []
            count = 0
            for count, (docno, doc_id, sketch) in enumerate(articles, 1):
                key = doc_id.encode()
                lengths[docno + 1] = len(sketch) // 4
                id_lengths[docno + 1] = len(key)
                ids += key
                chunk.append(sketch)
                if len(chunk) >= 4096:
                    pool.write(b"".join(chunk))
                    chunk = []
                if count % PROGRESS_EVERY == 0:
                    progress(READING, count)
            progress(READING, count)
            pool.write(b"".join(chunk))
            pool.flush()
            pool_values = int(lengths.sum())
            pool_offsets = np.cumsum(lengths, dtype=np.uint64)
            id_offsets = np.cumsum(id_lengths, dtype=np.uint64)

            def fill(file, mapped: mmap.mmap) -> None:
                offsets = _search.init_header(mapped, k, hot, generation, config, limit, count, pool_values,
                                              len(ids), int(time.time()))
                pool.seek(0)
                at = offsets["pool"]
                while block := pool.read(1 << 24):
                    mapped[at:at + len(block)] = block
                    at += len(block)
                for name, array in (("pool_offsets", pool_offsets), ("id_offsets", id_offsets)):
                    data = array.astype("<u8").tobytes()
                    mapped[offsets[name]:offsets[name] + len(data)] = data
                mapped[offsets["ids"]:offsets["ids"] + len(ids)] = ids
                progress(POSTINGS, count)

            return _write(path, (limit, count, pool_values, len(ids)), hot, fill)
    finally:
        temporary.unlink(missing_ok=True)
