"""`neardup pairs`: every near-duplicate pair of a store at a threshold, as JSON Lines on stdout or in a file.

Each article is searched against the articles of a larger docno only (SimilarSearch.similar_pairs), so every pair
comes out once; --workers N processes each take a contiguous docno range of one snapshot and send their pairs to
the parent, which writes them as they arrive. With a search index file each process maps it and catches up first.
What it writes and when it is exact: docs/commands/neardup-pairs.md.
"""
from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import sys
import time
from contextlib import ExitStack
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple

from ..core.candidates import DEFAULT_MAX_CANDIDATES
from ..core.errors import JobFailed, NearDupError
from ..runtime.search import base_file
from ..runtime.search.delta import catch_up
from ..runtime.params import Limits
from ..runtime.served_store import ServedStore
from ..runtime.similar_search import SimilarSearch
from ..store import SketchStore, open_store
from .progress import progress
from .view import View, read_view

#: A worker sends what it found at the latest after this many articles, bytes of output or seconds, so the bar
#: moves and the parent writes steadily while messages stay few.
_SEND_ARTICLES, _SEND_BYTES, _SEND_SECONDS = 512, 1 << 16, 0.25


class Batch(NamedTuple):
    articles: int   # articles searched
    pairs: int
    inexact: int    # articles whose search was not exact (more candidates than max_candidates)
    lines: bytes    # the pairs, JSON Lines in UTF-8


@dataclasses.dataclass
class PairsSummary:
    threshold: float
    metric: str
    max_candidates: int
    workers: int = 1
    articles: int = 0
    pairs: int = 0
    inexact: int = 0
    elapsed: float = 0.0
    search_file: str | None = None  # the index file searched, or None: the store's postings
    view: str = ""  # what state was read (View.describe)

    def add(self, batch: Batch) -> None:
        self.articles += batch.articles
        self.pairs += batch.pairs
        self.inexact += batch.inexact

    def format(self) -> str:
        rate = self.articles / self.elapsed if self.elapsed else 0
        return (f"pairs: {self.articles:,} articles, {self.pairs:,} pairs ({self.metric} >= {self.threshold}) in "
                f"{self.elapsed:.2f} s ({rate:,.0f} articles/s, {self.workers} worker"
                f"{'s' if self.workers > 1 else ''}"
                f"{f'; search index {self.search_file}' if self.search_file else ''}"
                f"{f'; read {self.view}' if self.view else ''})")

    def inexact_warning(self) -> str:
        articles = f"{self.inexact:,} article{'s' if self.inexact != 1 else ''}"
        return (f"neardup: {articles} had more than {self.max_candidates:,} candidates: only the "
                f"{self.max_candidates:,} most promising (sharing the most values; on a simhash store the nearest) "
                "were verified, so pairs may be missing (raise --max-candidates)")


def _searched(store: SketchStore, threshold: float, metric: str, max_candidates: int, start: int,
              stop: int | None, search_file: str | None) -> Iterator[tuple[str, list[tuple[str, float]], bool]]:
    """(id, [(id, similarity)] best first, exact) of each article numbered start <= docno < stop with the articles
    of larger numbers it reaches the threshold with: from the store's postings, or from the index file mapped and
    caught up with the store."""
    if search_file is None:
        search = SimilarSearch(ServedStore(store, Limits(max_candidates=max_candidates)))
        for doc_id, outcome in search.similar_pairs(threshold, metric, start, stop):
            yield doc_id, [(match.id, match.similarity) for match in outcome.matches], outcome.exact
        return
    mapped = base_file.open_mapped(Path(search_file), store)
    index = mapped.index
    catch_up(index, store, mapped.header["generation"], lambda _: None)
    for docno, doc_id, sketch in index.articles(start, stop):
        found = index.search(sketch, threshold, metric, above=docno, max_candidates=max_candidates)
        yield doc_id, sorted(found.matches, key=lambda match: (-match[1], match[0])), found.exact


def search_file_of(store_path: str | os.PathLike, given: str | None, use: str = "auto") -> str | None:
    """The index file pairs are searched in: `given`; with `use` auto, the store's own when it has one; None: the
    store's postings."""
    if use == "store":
        return None
    if given is not None:
        return str(given)
    path = base_file.default_path(store_path)
    if use == "shared" and path is None:
        base_file.resolve_path(store_path, None)  # says a Redis store needs one given
    if path is not None and (use == "shared" or path.exists()):
        return str(path)
    return None


def _batches(store: SketchStore, threshold: float, metric: str, max_candidates: int, start: int,
             stop: int | None, search_file: str | None = None) -> Iterator[Batch]:
    """The pairs of the articles numbered start <= docno < stop (to the end with None), in batches."""
    lines: list[str] = []
    articles = pairs = inexact = size = 0
    sent = time.monotonic()
    for doc_id, matches, exact in _searched(store, threshold, metric, max_candidates, start, stop, search_file):
        articles += 1
        inexact += not exact
        if matches:
            a = json.dumps(doc_id, ensure_ascii=False)
            for match_id, similarity in matches:
                line = f'{{"a": {a}, "b": {json.dumps(match_id, ensure_ascii=False)}, ' \
                       f'"similarity": {float(similarity)!r}}}\n'
                lines.append(line)
                size += len(line)
            pairs += len(matches)
        if articles >= _SEND_ARTICLES or size >= _SEND_BYTES or time.monotonic() - sent >= _SEND_SECONDS:
            yield Batch(articles, pairs, inexact, "".join(lines).encode("utf-8"))
            lines, articles, pairs, inexact, size, sent = [], 0, 0, 0, 0, time.monotonic()
    if articles:
        yield Batch(articles, pairs, inexact, "".join(lines).encode("utf-8"))


def _worker(conn: Connection, store_path: str, threshold: float, metric: str, max_candidates: int, start: int,
            stop: int | None, search_file: str | None = None) -> None:
    """One range in its own process: ("batch", Batch)..., then ("done",) or ("error", message)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the parent stops the workers
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        with open_store(store_path, readonly=True) as store:
            for batch in _batches(store, threshold, metric, max_candidates, start, stop, search_file):
                conn.send(("batch", batch))
        conn.send(("done",))
    except (BrokenPipeError, ConnectionResetError):  # the parent is gone
        pass
    except NearDupError as error:
        _send_quietly(conn, ("error", str(error)))
    except Exception as error:  # noqa: BLE001 - reported by the parent as one line
        _send_quietly(conn, ("error", f"{type(error).__name__}: {error}"))
    finally:
        conn.close()


def _send_quietly(conn: Connection, message: tuple) -> None:
    try:
        conn.send(message)
    except OSError:
        pass


def _ranges(limit: int, workers: int) -> list[tuple[int, int | None]]:
    """Contiguous docno ranges splitting [0, limit); the last is open-ended."""
    bounds = [limit * index // workers for index in range(workers)]
    return [(start, stop) for start, stop in zip(bounds, bounds[1:] + [None])]


def find_pairs(store_path: str | os.PathLike, out: BinaryIO, *, threshold: float | None = None,
               metric: str | None = None, workers: int = 1, max_candidates: int = DEFAULT_MAX_CANDIDATES,
               search_file: str | None = None,
               search_index: str = "auto") -> PairsSummary:
    """Writes every near-duplicate pair of the store to `out` as JSON Lines; threshold and metric default to the
    store's (by its sketch kind). A store without postings, or a metric of another sketch kind, raises
    ConfigMismatch before anything is written. `search_index` auto searches the index file (`search_file`, else
    the store's own) when there is one, shared always (an error without one), store never. Without an index file,
    a store that keeps no older states is searched in a consistent copy (jobs/view.py), so writers may go on."""
    search_file = search_file_of(store_path, search_file, search_index)
    started = time.monotonic()
    with ExitStack() as held:
        with open_store(store_path, readonly=True) as store:
            served = ServedStore(store)
            threshold = served.defaults.threshold if threshold is None else threshold
            metric = metric or served.defaults.metric
            served.check_metric(metric)
            # with an index file, each process catches up with the store itself: read in place
            view = View(str(store_path)) if search_file is not None else \
                held.enter_context(read_view(store, str(store_path)))
        summary = view_pairs(view, out, PairsSummary(threshold, metric, max_candidates), workers, search_file)
    summary.elapsed = time.monotonic() - started
    return summary


def view_pairs(view: View, out: BinaryIO, summary: PairsSummary, workers: int,
               search_file: str | None = None) -> PairsSummary:
    """The pairs of a view (`neardup cluster` reads its articles from the same one) into `summary`."""
    summary.view = view.describe()
    with open_store(view.location, readonly=True) as store:
        limit = SimilarSearch(ServedStore(store)).docno_limit()  # ConfigMismatch when the store keeps no postings
        if search_file is not None:  # a clear error now, not one per worker
            base_file.check_store(store)
            base_file.read_header(Path(search_file), store)
            summary.search_file = search_file
        total = store.count()
        summary.workers = max(1, min(workers, limit))
        if summary.workers == 1:
            with progress("pairs", total=total, unit=" articles") as bar:
                for batch in _batches(store, summary.threshold, summary.metric, summary.max_candidates, 0, None,
                                      search_file):
                    out.write(batch.lines)
                    summary.add(batch)
                    bar.update(batch.articles)
    if summary.workers > 1:
        _run_workers(view.location, out, summary, _ranges(limit, summary.workers), total, search_file)
    out.flush()
    return summary


def _run_workers(store_path: str, out: BinaryIO, summary: PairsSummary, ranges: list[tuple[int, int | None]],
                 total: int, search_file: str | None = None) -> None:
    context = multiprocessing.get_context()
    processes: list[multiprocessing.Process] = []
    readers: dict[Connection, int] = {}
    finished: set[int] = set()
    sys.stdout.flush()
    sys.stderr.flush()
    # Workers are started with Ctrl-C blocked, so that none is born able to die of it; it is delivered to the
    # parent (KeyboardInterrupt) once they run.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for start, stop in ranges:
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_worker, name=f"neardup-pairs-{len(processes) + 1}", daemon=True,
                                      args=(writer, store_path, summary.threshold, summary.metric,
                                            summary.max_candidates, start, stop, search_file))
            process.start()
            writer.close()  # the worker's end: the parent's reads end (EOFError) when the worker exits
            readers[reader] = len(processes)
            processes.append(process)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        with progress("pairs", total=total, unit=" articles") as bar:
            while readers:
                for reader in wait(list(readers)):
                    index = readers[reader]
                    try:
                        message = reader.recv()
                    except (EOFError, OSError):  # the worker exited (OSError: killed in the middle of a message)
                        del readers[reader]
                        reader.close()
                        if index not in finished:
                            processes[index].join(5)
                            raise JobFailed(f"pairs worker {index + 1} of {len(processes)} stopped before it "
                                                f"finished (exit code {processes[index].exitcode})") from None
                        continue
                    if message[0] == "batch":
                        batch = message[1]
                        out.write(batch.lines)
                        summary.add(batch)
                        bar.update(batch.articles)
                    elif message[0] == "done":
                        finished.add(index)
                    else:
                        raise JobFailed(message[1])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        for process in processes:
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join()
        for reader in readers:
            reader.close()


