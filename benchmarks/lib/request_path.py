"""The Dedup handler in process, without gRPC, built as `serve` builds it (NearDupServicer.for_store): timed whole
and stage by stage (wire reader, view, store, kernel, engine, encoder), and the result set whose cost is the median
(the one body h2load posts)."""
from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.lib import measure
from neardup.runtime.cache import DEFAULT_MAXSIZE, DEFAULT_TTL
from neardup.core import kernel
from neardup.runtime.params import DedupParams, Limits
from neardup.service import converters
from neardup.service.servicer import NearDupServicer
from neardup.store import open_store
from neardup.runtime.view import LiveView
from neardup_client.v1 import neardup_pb2 as pb


def request_path(store_path: Path, bodies: list[bytes], rounds: int) -> dict:
    """The server's Dedup handler without gRPC, whole and stage by stage, built as `serve` builds it
    (NearDupServicer.for_store); the in-memory view and the cache are warm, as in a serving worker."""
    with open_store(store_path, readonly=True) as store:
        uncached = NearDupServicer.for_store(store, Limits(), 0, 0)
        cached = NearDupServicer.for_store(store, Limits(), DEFAULT_MAXSIZE, DEFAULT_TTL)
        reading = LiveView(store).read()
        params = DedupParams()

        def decode(body: bytes) -> list[str]:
            """The servicer's read of a plain request: the compiled wire reader, else the protobuf runtime."""
            plain = converters.plain_dedup_request(body)
            return plain[0] if plain is not None else list(pb.DedupRequest.FromString(body).ids)

        ids = [decode(body) for body in bodies]
        sketches = [reading.get_many(i) for i in ids]
        outcomes = [uncached.deduplicator.dedup_ids(i, params) for i in ids]
        for body in bodies:
            cached.Dedup(body, None)
        stages = {
            "handler, uncached (servicer.Dedup)": (lambda b: uncached.Dedup(b, None), [(b,) for b in bodies]),
            "handler, cache hit": (lambda b: cached.Dedup(b, None), [(b,) for b in bodies]),
            "view catch-up (LiveView.read: store.generation)": (uncached.view.read, [()] * len(bodies)),
            "request decode (wire reader: ids, tag, key)": (decode, [(b,) for b in bodies]),
            "sketch gather, in-memory view (warm)": (reading.get_many, [(i,) for i in ids]),
            "sketch gather, store.get_many (LMDB: a view miss)": (store.get_many, [(i,) for i in ids]),
            "kernel.dedup": (lambda s: kernel.dedup(s, store.config.k, params.threshold), [(s,) for s in sketches]),
            "engine.dedup_ids (checks, gather, kernel)": (lambda i: uncached.deduplicator.dedup_ids(i, params, reading),
                                                          [(i,) for i in ids]),
            "response encode (converters.dedup_response: wire bytes)":
                (lambda o: converters.dedup_response(o, params), [(o,) for o in outcomes]),
        }
        return {"stages": measure.interleaved_us(stages, rounds)}


def representative(store_path: Path, bodies: list[bytes]) -> int:
    """The result set whose in-process handler cost is the median: h2load posts one body per run."""
    with open_store(store_path, readonly=True) as store:
        servicer = NearDupServicer.for_store(store, Limits(), 0, 0)
        samples = measure.time_calls(lambda b: servicer.Dedup(b, None), [(b,) for b in bodies], 9)
    costs = [statistics.median(times) for times in samples]
    return sorted(range(len(bodies)), key=costs.__getitem__)[len(bodies) // 2]
