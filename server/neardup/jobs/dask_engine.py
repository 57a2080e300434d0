"""`neardup index --engine dask`: the offline stage's passes on a Dask distributed cluster (DaskEngine).

One task per partition (a JSON Lines byte range holding the lines that start in it, or a Parquet row group); each
worker reads the corpus itself, and only (line, id, error, lang) of each record comes back. The stop-list is a
sharded reduction on the workers. Batches are atomic whoever writes them (this process in write order, or the
workers into a store that takes parallel writers), so a dead worker loses only task results. Dask is imported
here only. How, and its memory: docs/dask.md, docs/design.md ("The offline stage's engines"), docs/OPERATING.md.
"""
from __future__ import annotations

import operator
import os
import socket
from typing import Iterator, NamedTuple

import numpy as np

from ..core.errors import EngineUnavailable, InvalidArgument, install_line
from ..core.sketcher import Sketcher
from ..core.stoplist import Frequencies, Sample, frequent, merged, split, summed
from ..store import open_store
from . import parquet
from .index import DEFAULT_CONNECT_TIMEOUT, MAX_PARTITION_BYTES, MIN_PARTITION_BYTES, PARTITIONS_PER_WORKER
from .progress import progress
from .records import (LineSketcher, RecordCollector, final_sketch, kept_payloads, located, numbered_lines,
                      partition_frequencies, partition_sample)


def partition_bytes_for(size: int, workers: int) -> int:
    """The bytes of a corpus partition when none are asked for: about PARTITIONS_PER_WORKER partitions per worker,
    within [MIN_PARTITION_BYTES, MAX_PARTITION_BYTES]."""
    wanted = -(-size // (PARTITIONS_PER_WORKER * max(1, workers)))
    return min(MAX_PARTITION_BYTES, max(MIN_PARTITION_BYTES, wanted))


def byte_ranges(size: int, partition_bytes: int) -> list[tuple[int, int]]:
    """[start, end) ranges of partition_bytes covering size bytes (one, empty, for an empty corpus)."""
    return [(start, min(start + partition_bytes, size)) for start in range(0, size, partition_bytes)] or [(0, 0)]


def partition_lines(url: str, start: int, end: int) -> Iterator[bytes]:
    """The lines of the file at url whose first byte lies in [start, end)."""
    import fsspec
    with fsspec.open(url, "rb") as stream:
        if start:
            stream.seek(start - 1)
            stream.readline()  # the end of the line before start: only its "\n" when a line starts at start
        while stream.tell() < end:
            line = stream.readline()
            if not line:
                break
            yield line


class Pass1(NamedTuple):
    """Pass 1 of one partition, kept by the worker that made it."""

    lines: int                                         # lines read, blank ones included
    records: list[tuple[int, str | None, str | None, str]]  # (line in the partition, id, error, lang) of each
    payloads: list[bytes]                                   # the well-formed records', in order


def _sketched(numbered: Iterator[tuple[int, bytes | dict]], line_sketcher: LineSketcher, url: str):
    """(records, payloads) of Pass1 for these numbered lines or rows."""
    records, payloads = [], []
    try:
        for result in map(line_sketcher, numbered):
            records.append((result.line, result.doc_id, result.error, result.lang))
            if result.error is None:
                payloads.append(result.payload)
    except OSError as error:
        raise InvalidArgument(f"cannot read corpus {url} on a worker: {error}") from None
    return records, payloads


def sketch_partition(url: str, start: int, end: int, line_sketcher: LineSketcher) -> Pass1:
    """Pass 1 of the JSON Lines that start in [start, end)."""
    lines = 0

    def counted() -> Iterator[bytes]:
        nonlocal lines
        for line in partition_lines(url, start, end):
            lines += 1
            yield line

    records, payloads = _sketched(numbered_lines(counted()), line_sketcher, url)
    return Pass1(lines, records, payloads)  # lines counted once every line was read


def sketch_row_group(url: str, group: int, line_sketcher: LineSketcher) -> Pass1:
    """Pass 1 of one row group of a Parquet corpus."""
    rows = parquet.rows(url, group)
    return Pass1(len(rows), *_sketched(enumerate(rows, 1), line_sketcher, url))


def _records(pass1: Pass1) -> tuple[int, list[tuple[int, str | None, str | None, str]]]:
    return pass1.lines, pass1.records


def _frequency_shards(pass1: Pass1, kept: np.ndarray | None, kind: str, shards: int) -> list[Frequencies]:
    return split(partition_frequencies(pass1.payloads, kept, kind), shards)


def _frequent_shard(parts: list[Frequencies], cut: float) -> Frequencies:
    return frequent(summed(parts), cut)


def _sample(pass1: Pass1, kept: np.ndarray | None, kind: str, candidates: np.ndarray) -> Sample:
    return partition_sample(pass1.payloads, kept, kind, candidates)


def _final_sketches(pass1: Pass1, kept: np.ndarray | None, sketcher: Sketcher | None) -> list[bytes]:
    """The final sketch of each kept record of the partition, in index order."""
    return [final_sketch(payload, sketcher) for payload in kept_payloads(pass1.payloads, kept)]


def _write_partition(pass1: Pass1, kept: np.ndarray | None, sketcher: Sketcher | None, location: str,
                     batch_size: int) -> tuple[int, int]:
    """Pass 2 of one partition written by its worker into the store at location, in atomic batches (put_many):
    (documents, sketch bytes) written. Made again on another worker, it writes the same sketches again."""
    ids = [doc_id for _, doc_id, error, _ in pass1.records if error is None]  # a payload's id
    indices = range(len(ids)) if kept is None else kept.tolist()
    documents = sketch_bytes = 0
    with open_store(location) as store:
        for start in range(0, len(indices), batch_size):
            batch = [(ids[index], final_sketch(pass1.payloads[index], sketcher))
                     for index in indices[start:start + batch_size]]
            store.put_many(batch)
            documents += len(batch)
            sketch_bytes += sum(len(sketch) for _, sketch in batch)
    return documents, sketch_bytes


def _first_line(error: Exception) -> str:
    """What a Dask error says, on one line (some say more on the lines after)."""
    return str(error).splitlines()[0] if str(error) else type(error).__name__


class DaskEngine:
    """Pass 1, the stop-list's counts and pass 2 on the Dask cluster whose scheduler is at `scheduler`; the
    workers write a store that allows parallel writers (Redis) themselves."""

    writes_from_workers = True

    def __init__(self, scheduler: str, partition_bytes: int | None = None,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT):
        """partition_bytes: corpus bytes per task; None sizes them by the corpus and the cluster (partition_bytes_for)."""
        self._scheduler, self._partition_bytes, self._connect_timeout = scheduler, partition_bytes, connect_timeout
        self._client = None
        self._pass1: list = []
        self._partitions = 0
        self._wrote = False  # the workers wrote the store (write)

    def __enter__(self) -> "DaskEngine":
        try:
            from distributed import Client
        except ImportError:
            raise EngineUnavailable(f"--engine dask needs Dask distributed: {install_line('dask')}") from None
        self._probe()
        try:
            self._client = Client(self._scheduler, timeout=self._connect_timeout, set_as_default=False)
        except (OSError, ValueError) as error:
            raise self._unreachable(error) from None
        return self

    def __exit__(self, *exc) -> None:
        self._pass1 = []
        if self._client is not None:
            self._client.close()

    def _probe(self) -> None:
        """A TCP address that refuses or does not answer fails here, at once: a Client that cannot connect takes
        its whole timeout and more to give up, and writes a traceback when it is collected."""
        from distributed.comm import parse_address, parse_host_port
        try:
            scheme, location = parse_address(self._scheduler)
            if scheme not in ("tcp", "tls"):
                return
            with socket.create_connection(parse_host_port(location), timeout=self._connect_timeout):
                pass
        except (OSError, ValueError) as error:
            raise self._unreachable(error) from None

    def _unreachable(self, error: Exception) -> EngineUnavailable:
        return EngineUnavailable(f"cannot reach the Dask scheduler at {self._scheduler} ({_first_line(error)}): is a "
                                 f"Dask scheduler running at {self._scheduler}?")

    def _result(self, future):
        from distributed import KilledWorker
        try:
            return future.result()
        except KilledWorker as error:
            raise EngineUnavailable(f"the Dask cluster at {self._scheduler} gave up on a task: "
                                    f"{_first_line(error)}") from None

    def sketch(self, corpus: str, line_sketcher: LineSketcher, collector: RecordCollector) -> None:
        import fsspec.core
        url = corpus if "://" in corpus else os.path.abspath(corpus)
        try:
            filesystem, path = fsspec.core.url_to_fs(url)
            size = filesystem.size(path)
        except (OSError, ValueError, ImportError) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise InvalidArgument(f"cannot read corpus {corpus}: {why}") from None
        if parquet.is_parquet(corpus):  # a row group a task
            tasks = [(sketch_row_group, url, group) for group in range(len(parquet.row_groups(url)))]
        else:
            partition_bytes = self._partition_bytes or partition_bytes_for(size, len(self._client.nthreads()))
            tasks = [(sketch_partition, url, start, end) for start, end in byte_ranges(size, partition_bytes)]
        client = self._client
        # line_sketcher goes with each task rather than scattered: a task made again on a new worker needs it
        self._pass1 = [client.submit(*task, line_sketcher, pure=False) for task in tasks]
        self._partitions = len(self._pass1)
        records = [client.submit(_records, pass1, pure=False) for pass1 in self._pass1]
        first_line = 0
        with progress("sketching", unit=collector.unit) as bar:
            for partition in range(len(records)):
                lines, partition_records = self._result(records[partition])
                records[partition] = None
                collector.partition(first_line)
                for record in partition_records:
                    collector.add(*record)
                first_line += lines
                bar.update(len(partition_records))
                bar.set_note(collector.described())

    def frequent(self, kept: list[np.ndarray | None], kind: str, cut: float) -> Frequencies:
        client = self._client
        shards = max(1, len(client.nthreads()))
        counted = [client.submit(_frequency_shards, pass1, mine, kind, shards, pure=False)
                   for pass1, mine in zip(self._pass1, kept)]
        reduced = [client.submit(_frequent_shard, [client.submit(operator.getitem, part, shard, pure=False)
                                                   for part in counted], cut, pure=False)
                   for shard in range(shards)]
        return summed(self._result(future) for future in reduced)

    def sample(self, kept: list[np.ndarray | None], kind: str, candidates: np.ndarray) -> Sample:
        client = self._client
        [shared] = client.scatter([candidates], broadcast=True)
        parts = [client.submit(_sample, pass1, mine, kind, shared, pure=False)
                 for pass1, mine in zip(self._pass1, kept)]
        return merged(self._result(future) for future in parts)

    def sketches(self, chosen: dict[str, int], kept: list[np.ndarray | None],
                 sketcher: Sketcher | None) -> Iterator[tuple[str, bytes]]:
        client = self._client
        finals = [client.submit(_final_sketches, pass1, mine, sketcher, pure=False)
                  for pass1, mine in zip(self._pass1, kept)]
        held: dict[int, dict[int, bytes]] = {}  # partition → payload index → sketch, of partitions being written
        for doc_id, where in chosen.items():
            partition, index = located(where)
            if partition not in held:
                sketches = self._result(finals[partition])
                # pass 1 stays held until the engine closes: rule 8 may write the store again from it
                # (jobs/index.py), and a worker lost meanwhile takes results Dask makes again from the held tasks
                finals[partition] = None
                mine = kept[partition]
                held[partition] = dict(zip(range(len(sketches)) if mine is None else mine.tolist(), sketches))
            unwritten = held[partition]
            yield doc_id, unwritten.pop(index)
            if not unwritten:
                del held[partition]

    def write(self, location: str, kept: list[np.ndarray | None], sketcher: Sketcher | None,
              batch_size: int) -> Iterator[tuple[int, int]]:
        """Pass 2 written by the workers, each its partitions' batches: (documents, sketch bytes) per partition as
        it is done. Only into a store with parallel writers (a worker opens it by its location: a Redis store's
        password is in the workers' $NEARDUP_REDIS_PASSWORD)."""
        from distributed import as_completed

        client = self._client
        written = [client.submit(_write_partition, pass1, mine, sketcher, location, batch_size, pure=False)
                   for pass1, mine in zip(self._pass1, kept)]
        for future in as_completed(written, loop=client.loop):
            yield self._result(future)
        self._wrote = True

    def describe(self) -> str:
        workers = len(self._client.nthreads()) if self._client is not None else 0
        wrote = "; the workers wrote the store" if self._wrote else ""
        return f"dask at {self._scheduler} ({workers} workers, {self._partitions:,} partitions{wrote})"
