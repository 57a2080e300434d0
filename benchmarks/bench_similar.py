"""Corpus search at 100K and 1M stored articles, against datasketch MinHashLSH on the same corpus, in one run.

    python benchmarks/bench_similar.py [--quick] [--sizes 100000 1000000] [--queries 100] [--out DIR] [--dir DIR]

The corpus is made as shingle SETS (uint32 values), so that neardup's sketches (the K = 128 smallest values of
each set, sorted) and datasketch's MinHash (128 permutations, over the whole set) come from the same documents:

  * groups of near-duplicates: a base set of 300-1500 values and copies of it, each keeping every base value
    with some probability and replacing a share of them with new values (edit 0-60 %); a quarter of the copies
    are also truncated to 30-80 % of the base (containment stays high, Jaccard falls);
  * singletons of 100-1500 values; short documents of 10-60 values (half alone, half in groups of 2-4);
  * 30 hot values held by 1 % ... 10 % of all articles (site boilerplate: the few long postings that make an
    inverted index's tail, issue 11's PostgreSQL GIN example). They are drawn small, so they fall in the sketch
    of nearly every article holding them: their postings are 1-10 % of the corpus, the worst case.

Every value is fmix32 (MurmurHash3's finalizer, a bijection on uint32) of a distinct counter, so two sets share a
value only when one is copied from the other or it is a hot value: the exact Jaccard of any two full sets is known
without a scan (same group: intersect the sets; otherwise: the hot values both hold). Seeded, generated in chunks
of CHUNK articles (a group never spans chunks), so the 100K corpus is the first two chunks of the 1M one. Each
chunk is one put_many batch of the store.

Measured at each size, on the store holding that many articles:
  * Upsert rate: put_many of each batch, with postings (indexed=True) and, on the first 100K, without;
  * index bytes: disk_usage's pages of the index (docnos, ids, postings) per article and against the sketches';
  * FindSimilar for a stored id, through a real `neardup serve` (one worker) and NearDupClient, one call at a
    time, in blocks alternating with the same server's empty health Check (load.sequential): p50 and p99 and their
    ratios, once with --search-index store and once with --search-index memory (a server of its own); the engine
    in process (Deduplicator.find_similar, no gRPC), per kind of query, over the store and from the memory index
    (built in process as a worker builds it: its build time, arrays and anonymous RSS grown);
  * recall of the top 10 against an exhaustive scan (kernel.similar over every stored sketch, top 10 by
    similarity then id) at the default metric and threshold; queries drawn alike from grouped, singleton,
    short and hot-value articles (each query holding at least 3 hot values);
  * `neardup pairs` rate: Deduplicator.similar_pairs over a range of article numbers, articles/s;
  * datasketch MinHashLSH (in memory, num_perm 128, the same threshold, Jaccard): build time, memory (the
    process's anonymous RSS grown while inserting), LSH.query latency (in process, in turns with FindSimilar
    metric=jaccard in process, over the store and from the memory index), recall and precision against the
    truth = exact Jaccard of the full sets >= the threshold; and FindSimilar metric=jaccard's recall (both paths)
    against the same truth. MinHash signatures are datasketch's (its default scheme affine32, its permutations
    of seed 1, hashfunc = the uint32 value itself, as for CRC32 shingle hashes), computed vectorized with numpy
    and checked against MinHash.update_batch.

Writes bench_similar.json and bench_similar.md in --out (also printed). Goals (issue 11), reported, never
asserted: at 1M, FindSimilar p99 <= 3x the Check's p99; top-10 recall >= 0.99; index <= 2x the sketch bytes;
FindSimilar faster than MinHashLSH.query at equal or better recall.
"""
from __future__ import annotations

import argparse
import gc
import math
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import load  # noqa: E402  (puts benchmarks/ and tests/ on sys.path)
import measure  # noqa: E402
from bench_store import article_id  # noqa: E402
from datasketch import LeanMinHash, MinHash, MinHashLSH  # noqa: E402
from neardup.core import kernel  # noqa: E402
from neardup.core.vocabulary import DEFAULT_METRIC, DEFAULT_THRESHOLD
from neardup.core.vocabulary import JACCARD
from neardup.core.sketch_config import SketchConfig
from neardup.core.candidates import HOT_POSTINGS
from neardup.runtime.deduplicator import Deduplicator, SimilarParams
from neardup.store import create_store  # noqa: E402
from neardup.runtime.view import LiveView
from neardup_client import NearDupClient  # noqa: E402
from report import save, table  # noqa: E402
from serverproc import Server, free_port  # noqa: E402

HERE = Path(__file__).resolve().parent
SEED = 20261123
K = SketchConfig().k
NUM_PERM = 128
CHUNK = 50_000                 # articles per generated chunk and per put_many batch
COUNTER_BITS = 27              # value counters per chunk (a chunk uses < 2**27 values)
HOT_COUNTERS = 0xF000_0000     # hot values are fmix32 of counters from here: never another article's value
HOT_VALUES = 30
HOT_BELOW = 1 << 26            # hot values are small: in the K smallest of (nearly) every set holding them
HOT_SHARES = np.geomspace(0.01, 0.10, HOT_VALUES)
HOT_QUERY = 3                  # a hot-value query holds at least this many hot values
# shares of the articles, set sizes (inclusive ranges), copies
GROUPED_SHARE, SHORT_SHARE = 0.40, 0.15
BASE_SIZES, SINGLE_SIZES, SHORT_SIZES = (300, 1500), (100, 1500), (10, 60)
GROUP_P, GROUP_MAX = 0.25, 40  # grouped: 2 + geometric(GROUP_P) - 1 articles, at most GROUP_MAX
SHORT_GROUP = (2, 4)
EDIT, SHORT_EDIT = (0.0, 0.6), (0.0, 0.4)
TRUNCATE_P, TRUNCATE = 0.25, (0.3, 0.8)
GROUPED, SINGLE, SHORT = 0, 1, 2
KINDS = ("grouped", "singleton", "short", "hot")
TOP = 10
MEMORY_JACCARD = "FindSimilar jaccard (memory index, in process)"
JACCARD_TOP_K = 1_000          # FindSimilar's top_k when its whole answer is compared with the Jaccard truth
PAIRS_SAMPLE = 2_000           # articles of the similar_pairs range
LSH_BYTES_PER_ARTICLE = 10_000  # what MinHashLSH needs (measured ~8 KB): skipped when the machine lacks it
# Issue 11's goals
GOAL_P99_RATIO, GOAL_RECALL, GOAL_INDEX_RATIO = 3.0, 0.99, 2.0

_M1, _M2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)


def fmix32(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer: a bijection on uint32 (datasketch's affine schemes pre-mix with it too)."""
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x *= _M1
    x ^= x >> np.uint32(13)
    x *= _M2
    x ^= x >> np.uint32(16)
    return x


def hot_values() -> np.ndarray:
    """HOT_VALUES distinct values below HOT_BELOW, images of counters no other value uses."""
    counters = np.arange(HOT_COUNTERS, HOT_COUNTERS + (1 << 16), dtype=np.uint64)
    images = fmix32(counters)
    return images[images < HOT_BELOW][:HOT_VALUES]


# --- the corpus ---------------------------------------------------------------------------------------------------

@dataclass
class Chunk:
    """CHUNK articles: their full shingle sets (values article by article) and what the generator made them."""

    values: np.ndarray      # uint32
    offsets: np.ndarray     # int64, one more than articles
    kind: np.ndarray        # uint8: GROUPED, SINGLE, SHORT
    group: np.ndarray       # int64: articles copied from one base share it (a singleton is a group of one)
    group_size: np.ndarray  # int32
    hot: np.ndarray         # uint32: bit j set when the set holds hot value j

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def set_of(self, article: int) -> np.ndarray:
        return self.values[self.offsets[article]:self.offsets[article + 1]]


def _uniform_int(rng: np.random.Generator, bounds: tuple[int, int], count: int) -> np.ndarray:
    return rng.integers(bounds[0], bounds[1] + 1, count)


def _group_sizes(rng: np.random.Generator, total: int, sizes) -> np.ndarray:
    """Group sizes drawn by `sizes(count)` until they cover `total` articles; the last one cut to fit."""
    drawn = sizes(total)
    ends = np.cumsum(drawn)
    last = int(np.searchsorted(ends, total))
    out = drawn[:last + 1].copy()
    out[-1] = total - (ends[last - 1] if last else 0)
    return out[out > 0]


def generate_chunk(seed: int, index: int, size: int, hot: np.ndarray) -> Chunk:
    rng = np.random.default_rng([seed, index])
    counter = np.uint64(index) << np.uint64(COUNTER_BITS)
    grouped, short = round(size * GROUPED_SHARE), round(size * SHORT_SHARE)
    short_grouped = short // 2
    singles = size - grouped - short
    group_sizes = [
        _group_sizes(rng, grouped, lambda n: np.minimum(1 + rng.geometric(GROUP_P, n), GROUP_MAX)),
        _group_sizes(rng, short_grouped, lambda n: _uniform_int(rng, SHORT_GROUP, n)),
        np.ones(singles, np.int64), np.ones(short - short_grouped, np.int64)]
    group_kind = np.concatenate([np.full(len(g), kind) for g, kind in
                                 zip(group_sizes, (GROUPED, SHORT, SINGLE, SHORT))]).astype(np.uint8)
    base_size = np.concatenate([_uniform_int(rng, BASE_SIZES, len(group_sizes[0])),
                                _uniform_int(rng, SHORT_SIZES, len(group_sizes[1])),
                                _uniform_int(rng, SINGLE_SIZES, len(group_sizes[2])),
                                _uniform_int(rng, SHORT_SIZES, len(group_sizes[3]))])
    group_sizes = np.concatenate(group_sizes)
    groups = len(group_sizes)
    base_start = np.concatenate([[0], np.cumsum(base_size)[:-1]])
    base_values = fmix32(counter + np.arange(base_size.sum(), dtype=np.uint64))
    # members: the first of each group is its base, the others edited copies; in random article order, so
    # that copies are not neighbours in article numbers
    member_group = np.repeat(np.arange(groups), group_sizes)
    members = len(member_group)
    is_copy = np.ones(members, bool)
    is_copy[np.concatenate([[0], np.cumsum(group_sizes)[:-1]])] = False
    order = rng.permutation(members)
    member_group, is_copy = member_group[order], is_copy[order]
    short_member = group_kind[member_group] == SHORT
    keep = np.where(is_copy & ~short_member & (rng.random(members) < TRUNCATE_P),
                    rng.uniform(*TRUNCATE, members), 1.0)
    edit = np.where(short_member, rng.uniform(*SHORT_EDIT, members), rng.uniform(*EDIT, members)) * is_copy
    # a copy holds each base value with probability keep; of those, a share `edit` is replaced by a new value
    msize = base_size[member_group]
    expanded = np.concatenate([[0], np.cumsum(msize)])
    values = base_values[np.repeat((base_start[member_group] - expanded[:-1]).astype(np.int32), msize)
                         + np.arange(expanded[-1], dtype=np.int32)]
    draw = rng.random(expanded[-1], dtype=np.float32)
    present = draw < np.repeat(keep.astype(np.float32), msize)
    replaced = present & (draw >= np.repeat((keep * (1 - edit)).astype(np.float32), msize))
    del draw
    first_new = np.uint64(base_size.sum())
    new_count = int(replaced.sum())
    if int(first_new) + new_count >= 1 << COUNTER_BITS:
        raise SystemExit(f"chunk {index} needs more than 2**{COUNTER_BITS} values")
    values[replaced] = fmix32(counter + first_new + np.arange(new_count, dtype=np.uint64))
    lengths = np.add.reduceat(present, expanded[:-1]).astype(np.int64)
    values = values[present]
    del present, replaced
    # hot values, appended to the sets holding them
    held = rng.random((members, HOT_VALUES)) < HOT_SHARES
    hot_owner, hot_index = np.nonzero(held)
    hot_bits = (held * (np.uint32(1) << np.arange(HOT_VALUES, dtype=np.uint32))).sum(axis=1, dtype=np.uint32)
    ends = np.cumsum(lengths)
    values = np.insert(values, ends[hot_owner], hot[hot_index])
    lengths += np.bincount(hot_owner, minlength=members)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    group = (np.int64(index) << 32) + member_group
    return Chunk(values, offsets, group_kind[member_group], group,
                 group_sizes[member_group].astype(np.int32), hot_bits)


def bottom_k(chunk: Chunk) -> list[bytes]:
    """Each set's K smallest values, sorted, as little-endian bytes: the sketch neardup stores.

    Only values below 2K/n of the range are sorted (n the set's size: about 2K of them, never fewer than K
    but with a vanishing chance, which is checked and falls back to the whole set)."""
    lengths = chunk.lengths
    n = len(lengths)
    cut = np.where(lengths <= 2 * K, 2**32 - 1, np.minimum(2**32 - 1, (2.0 * K / np.maximum(lengths, 1)) * 2**32))
    article = np.repeat(np.arange(n, dtype=np.uint64), lengths)
    below = chunk.values <= np.repeat(cut.astype(np.uint32), lengths)
    counts = np.bincount(article[below].astype(np.int64), minlength=n)
    short = np.nonzero(counts < np.minimum(lengths, K))[0]
    if len(short):  # never seen: take those sets whole
        below |= np.isin(article, short.astype(np.uint64))
        counts = np.bincount(article[below].astype(np.int64), minlength=n)
    keys = (article[below] << np.uint64(32)) | chunk.values[below]
    keys.sort()
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    taken = np.minimum(counts, K)
    ends = np.cumsum(taken)
    at = np.repeat(starts - (ends - taken), taken) + np.arange(ends[-1])
    data = (keys[at] & np.uint64(0xFFFF_FFFF)).astype("<u4").tobytes()
    bounds = (np.concatenate([[0], ends]) * 4).tolist()
    return [data[bounds[i]:bounds[i + 1]] for i in range(n)]


def signatures(chunk: Chunk, permutations: np.ndarray, block: int = 16_384) -> np.ndarray:
    """datasketch MinHash hashvalues (scheme affine32, hashfunc = the value) of each set, as an (n, 128) array:
    fmix32 of the value, then a * h + b (mod 2**32) per permutation, the minimum over the set."""
    a, b = (p.astype(np.uint32)[:, None] for p in permutations)
    mixed = fmix32(chunk.values)
    offsets = chunk.offsets
    n = len(offsets) - 1
    out = np.empty((n, len(permutations[0])), np.uint32)
    buffer = np.empty((len(permutations[0]), block + 2 * BASE_SIZES[1] + 2 * HOT_VALUES), np.uint32)
    first = 0
    while first < n:
        last = max(first + 1, int(np.searchsorted(offsets, offsets[first] + block, side="right")) - 1)
        last = min(last, n)
        start, stop = offsets[first], offsets[last]
        if stop - start > buffer.shape[1]:
            buffer = np.empty((buffer.shape[0], stop - start), np.uint32)
        view = buffer[:, :stop - start]
        np.multiply(a, mixed[None, start:stop], out=view)
        view += b
        out[first:last] = np.minimum.reduceat(view, offsets[first:last] - start, axis=1).T
        first = last
    return out


def check_signatures(chunk: Chunk, sig: np.ndarray, permutations) -> None:
    """The numpy signatures equal datasketch MinHash.update_batch's on a few sets."""
    for article in (0, 1, len(sig) - 1):
        minhash = MinHash(num_perm=NUM_PERM, hashfunc=int, permutations=permutations, scheme="affine32")
        minhash.update_batch(chunk.set_of(article).tolist())
        if not np.array_equal(minhash.hashvalues, sig[article]):
            raise SystemExit("numpy MinHash signatures differ from datasketch's")


# --- queries and their truth ---------------------------------------------------------------------------------------

@dataclass
class Query:
    article: int            # article number (store docno, position in the corpus)
    kind: str               # one of KINDS
    members: dict           # article number -> full set, for every article of its group (itself included)


def pick_queries(chunk: Chunk, first: int, per_kind: int, rng: np.random.Generator) -> list[Query]:
    """per_kind articles of each kind from this chunk (numbered from `first`), with their groups' sets."""
    hot_count = np.bitwise_count(chunk.hot)
    pools = {"hot": hot_count >= HOT_QUERY}
    ordinary = ~pools["hot"]
    pools["grouped"] = ordinary & (chunk.kind == GROUPED) & (chunk.group_size > 1)
    pools["singleton"] = ordinary & (chunk.kind == SINGLE)
    pools["short"] = ordinary & (chunk.kind == SHORT)
    queries = []
    for kind in KINDS:
        pool = np.nonzero(pools[kind])[0]
        for local in rng.choice(pool, min(per_kind, len(pool)), replace=False).tolist():
            mates = np.nonzero(chunk.group == chunk.group[local])[0]
            queries.append(Query(first + local, kind,
                                 {first + int(m): np.sort(chunk.set_of(int(m))) for m in mates}))
    return queries


class Corpus:
    """What is kept of every generated article: its sketch, set size, group and hot values (not its full set)."""

    def __init__(self):
        self.sketches: list[bytes] = []
        self.ids: list[str] = []
        self.lengths, self.groups, self.hot, self.kinds = [], [], [], []

    def add(self, chunk: Chunk, sketches: list[bytes]) -> None:
        first = len(self.sketches)
        self.sketches += sketches
        self.ids += [article_id(number) for number in range(first, first + len(sketches))]
        self.lengths.append(chunk.lengths)
        self.groups.append(chunk.group)
        self.hot.append(chunk.hot)
        self.kinds.append(chunk.kind)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.concatenate(self.lengths), np.concatenate(self.groups), np.concatenate(self.hot)


def jaccard_truth(query: Query, size: int, lengths: np.ndarray, groups: np.ndarray, hot: np.ndarray,
                  threshold: float) -> set[int]:
    """Articles (numbers < size) whose full set has exact Jaccard >= threshold with the query's, itself left out.
    Within its group by intersecting the sets; any other article shares only the hot values both hold."""
    mine = query.members[query.article]
    truth = set()
    for article, values in query.members.items():
        if article != query.article and article < size:
            shared = len(np.intersect1d(mine, values, assume_unique=True))
            if shared and shared / (len(mine) + len(values) - shared) >= threshold:
                truth.add(article)
    shared = np.bitwise_count(hot[:size] & hot[query.article]).astype(np.int64)
    jaccard = shared / (len(mine) + lengths[:size] - shared)
    others = np.nonzero((shared > 0) & (jaccard >= threshold) & (groups[:size] != groups[query.article]))[0]
    return truth | set(others.tolist())


def check_truth(chunks: list[Chunk], queries: list[Query], lengths, groups, hot, threshold: float) -> int:
    """jaccard_truth against a scan of every full set (the quick run): the generator's promise, checked."""
    values = np.concatenate([c.values for c in chunks])
    sizes = np.concatenate([c.lengths for c in chunks])
    order = np.argsort(values, kind="stable")
    owner = np.repeat(np.arange(len(sizes)), sizes)[order]
    values = values[order]
    for query in queries:
        mine = query.members[query.article]
        low, high = np.searchsorted(values, mine, "left"), np.searchsorted(values, mine, "right")
        holders = np.concatenate([owner[a:b] for a, b in zip(low.tolist(), high.tolist())])
        shared = np.bincount(holders, minlength=len(sizes))
        jaccard = shared / (len(mine) + sizes - shared)
        scanned = set(np.nonzero(jaccard >= threshold)[0].tolist()) - {query.article}
        if scanned != jaccard_truth(query, len(sizes), lengths, groups, hot, threshold):
            raise SystemExit(f"the Jaccard truth of article {query.article} differs from a full scan")
    return len(queries)


# --- measurements ---------------------------------------------------------------------------------------------------

def rss_anon() -> int:
    """Bytes of this process's anonymous resident memory (heap, not mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def process_memory(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def percentiles_us(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50_us": float(np.percentile(ordered, 50, method="higher")),
            "p99_us": float(np.percentile(ordered, 99, method="higher")), "calls": len(ordered)}


def top(pairs: list[tuple[str, float]]) -> list[str]:
    return [doc_id for doc_id, _ in sorted(pairs, key=lambda p: (-p[1], p[0]))[:TOP]]


def recall_vs_scan(search, corpus: Corpus, size: int, queries: list[Query], threshold: float, metric: str) -> dict:
    """FindSimilar's top 10 (search(doc_id, params): Deduplicator.find_similar over the store or the memory index)
    against the top 10 of kernel.similar over every stored sketch, per kind of query."""
    sketches, ids = corpus.sketches[:size], corpus.ids[:size]
    found = relevant = 0
    inexact = 0
    per_kind = {kind: [0, 0] for kind in KINDS}
    misses = []
    began = time.perf_counter()
    for query in queries:
        sketch = corpus.sketches[query.article]
        scanned = kernel.similar(sketch, sketches, K, threshold, metric)
        expected = top([(ids[i], s) for i, s in scanned if i != query.article])
        outcome = search(ids[query.article], SimilarParams(TOP, threshold, metric))
        got = {match.id for match in outcome.matches}
        inexact += not outcome.exact
        hit = len(got & set(expected))
        found, relevant = found + hit, relevant + len(expected)
        per_kind[query.kind][0] += hit
        per_kind[query.kind][1] += len(expected)
        if hit < len(expected):
            misses.append({"article": query.article, "kind": query.kind, "expected": len(expected), "found": hit})
    return {"metric": metric, "threshold": threshold, "queries": len(queries),
            "relevant": relevant,
            "recall": found / relevant if relevant else 1.0,
            "per_kind": {kind: (f / r if r else None) for kind, (f, r) in per_kind.items()},
            "relevant_per_kind": {kind: r for kind, (_, r) in per_kind.items()},
            "inexact_answers": inexact, "misses": misses[:20], "seconds": time.perf_counter() - began}


def engine_latency(search, corpus: Corpus, queries: list[Query], params: SimilarParams, rounds: int) -> dict:
    """search(doc_id, params) in process (no gRPC), per kind of query and over all of them."""
    samples = measure.time_calls(lambda doc_id: search(doc_id, params),
                                 [(corpus.ids[q.article],) for q in queries], rounds)
    rows = {kind: percentiles_us([t for q, times in zip(queries, samples) if q.kind == kind for t in times])
            for kind in KINDS if any(q.kind == kind for q in queries)}
    rows["all"] = percentiles_us([t for times in samples for t in times])
    return rows


def server_latency(store_path: Path, corpus: Corpus, queries: list[Query], calls: int,
                   threshold: float, search_index: str) -> dict:
    """FindSimilar through NearDupClient against the empty health Check, one server (`--search-index
    search_index`), one run, in turns."""
    if not hasattr(NearDupClient, "find_similar"):
        return {"skipped": "this neardup_client has no find_similar (the FindSimilar RPC is not installed)"}
    import grpc
    began = time.perf_counter()
    server = Server(store_path, *load.CACHE_OFF, "--search-index", search_index, workers=1, port=free_port())
    try:
        server.wait_ready(900)
        ready_seconds = time.perf_counter() - began
        ids = [corpus.ids[q.article] for q in queries]
        with NearDupClient(server.target, timeout=10) as client, grpc.insecure_channel(server.target) as channel:
            check = channel.unary_unary(load.HEALTH_PATH)
            for doc_id in ids:  # every query once: the server's pages of them are warm, as the engine's were
                client.find_similar(doc_id, top_k=TOP, metric=DEFAULT_METRIC, threshold=threshold)
            kinds = {
                "FindSimilar (stored id), NearDupClient":
                    lambda i: bool(client.find_similar(ids[i % len(ids)], top_k=TOP, metric=DEFAULT_METRIC,
                                                       threshold=threshold)) and False,
                f"FindSimilar jaccard {threshold}, NearDupClient":
                    lambda i: bool(client.find_similar(ids[i % len(ids)], metric=JACCARD, threshold=threshold,
                                                       top_k=JACCARD_TOP_K)) and False,
                "health Check (empty call)": lambda i: check(load.HEALTH_REQUEST) and False,
            }
            result = load.sequential(server, kinds, calls)
        result["server_memory"] = {str(pid): process_memory(pid) for pid in measure.worker_pids(server.process.pid)}
        result["ready_seconds"] = ready_seconds
        result["search_index"] = search_index
    finally:
        result_stop = load.stop_server(server)
    result["server"] = result_stop
    floor = result["kinds"]["health Check (empty call)"]["latency_ms"]
    for row in result["kinds"].values():
        row["p50_ratio"] = row["latency_ms"]["p50"] / floor["p50"]
        row["p99_ratio"] = row["latency_ms"]["p99"] / floor["p99"]
    return result


def pairs_rate(engine: Deduplicator, threshold: float, metric: str) -> dict:
    limit = engine.docno_limit()
    start = max(0, limit // 2 - PAIRS_SAMPLE // 2)
    stop = min(limit, start + PAIRS_SAMPLE)
    began = time.perf_counter()
    articles = pairs = 0
    for _, outcome in engine.similar_pairs(threshold, metric, start, stop):
        articles += 1
        pairs += len(outcome.matches)
    seconds = time.perf_counter() - began
    return {"start": start, "stop": stop, "articles": articles, "pairs": pairs, "seconds": seconds,
            "articles_per_s": articles / seconds, "store_seconds_one_process": limit / (articles / seconds)}


class Lsh:
    """datasketch MinHashLSH grown with the corpus: build time and memory summed over the inserts."""

    def __init__(self, threshold: float):
        self.lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self.count = 0
        self.seconds = 0.0
        self.memory = 0

    def insert(self, ids: list[str], sig: np.ndarray) -> None:
        gc.collect()
        before = rss_anon()
        began = time.perf_counter()
        with self.lsh.insertion_session() as session:
            for doc_id, values in zip(ids, sig):
                session.insert(doc_id, LeanMinHash(seed=1, hashvalues=values, scheme="affine32"),
                               check_duplication=False)
        self.seconds += time.perf_counter() - began
        self.memory += rss_anon() - before
        self.count += len(ids)


def lsh_comparison(lsh: Lsh, engine: Deduplicator, in_memory, corpus: Corpus, sig: np.ndarray, size: int,
                   queries: list[Query], threshold: float, rounds: int) -> dict:
    """MinHashLSH.query and FindSimilar metric=jaccard (over the store, and from the memory index: in_memory(doc_id,
    params)) on the same queries: latency in turns, recall against the exact Jaccard of the full sets."""
    lengths, groups, hot = corpus.arrays()
    number = {doc_id: n for n, doc_id in enumerate(corpus.ids[:size])}
    params = SimilarParams(JACCARD_TOP_K, threshold, JACCARD)
    minhashes = [LeanMinHash(seed=1, hashvalues=sig[q.article], scheme="affine32") for q in queries]
    ids = [corpus.ids[q.article] for q in queries]

    def verified(position: int) -> list[int]:
        """LSH candidates kept when their MinHash Jaccard estimate reaches the threshold (what a caller does)."""
        found = [number[c] for c in lsh.lsh.query(minhashes[position])]
        found = np.array([c for c in found if c != queries[position].article], np.int64)
        if not len(found):
            return []
        estimate = (sig[found] == sig[queries[position].article]).mean(axis=1)
        return found[estimate >= threshold].tolist()

    timings = measure.interleaved_us({
        "MinHashLSH.query": (lambda i: lsh.lsh.query(minhashes[i]), [(i,) for i in range(len(queries))]),
        "MinHashLSH.query + MinHash verification": (verified, [(i,) for i in range(len(queries))]),
        "FindSimilar jaccard (engine, in process)": (lambda doc_id: engine.find_similar(doc_id, params),
                                                     [(doc_id,) for doc_id in ids]),
        MEMORY_JACCARD: (lambda doc_id: in_memory(doc_id, params), [(doc_id,) for doc_id in ids]),
    }, rounds)
    tallies = {name: {"found": 0, "returned": 0}
               for name in ("lsh_candidates", "lsh_verified", "findsimilar", "findsimilar_memory")}
    relevant = 0
    for position, query in enumerate(queries):
        truth = jaccard_truth(query, size, lengths, groups, hot, threshold)
        relevant += len(truth)
        answers = {
            "lsh_candidates": {number[c] for c in lsh.lsh.query(minhashes[position])} - {query.article},
            "lsh_verified": set(verified(position)),
            "findsimilar": {number[m.id] for m in engine.find_similar(ids[position], params).matches},
            "findsimilar_memory": {number[m.id] for m in in_memory(ids[position], params).matches},
        }
        for name, answer in answers.items():
            tallies[name]["found"] += len(answer & truth)
            tallies[name]["returned"] += len(answer)
    quality = {name: {"recall": t["found"] / relevant if relevant else 1.0,
                      "precision": t["found"] / t["returned"] if t["returned"] else 1.0, **t}
               for name, t in tallies.items()}
    return {"threshold": threshold, "articles": lsh.count, "bands": lsh.lsh.b, "rows": lsh.lsh.r,
            "build_seconds": lsh.seconds, "build_articles_per_s": lsh.count / lsh.seconds,
            "memory_bytes": lsh.memory, "memory_bytes_per_article": lsh.memory / lsh.count,
            "relevant": relevant, "latency_us": timings, "quality": quality}


def measure_size(size: int, store, store_path: Path, corpus: Corpus, queries: list[Query],
                 lsh_queries: list[Query], sig, lsh: Lsh | None, args, plain_usage: dict | None) -> dict:
    row: dict = {"articles": size, "phases": {}}

    def phase(name: str, began: float) -> None:
        row["phases"][name] = time.perf_counter() - began
        print(f"  {size:,}: {name} {row['phases'][name]:.1f} s", flush=True)

    gc.collect()
    gc.freeze()  # the corpus and MinHashLSH's millions of objects: no collector pass over them while timing
    usage = store.disk_usage()
    row["disk_usage"] = usage
    row["data_mdb_bytes"] = (store_path / "data.mdb").stat().st_size
    sketch_bytes = sum(map(len, corpus.sketches[:size]))
    row["sketch_payload_bytes_per_article"] = sketch_bytes / size
    row["index_bytes_per_article"] = usage["index"] / size
    row["sketches_bytes_per_article"] = usage["sketches"] / size
    row["index_to_sketches"] = usage["index"] / usage["sketches"]
    if plain_usage:
        row["without_postings_disk_usage"] = plain_usage
    values = np.frombuffer(b"".join(corpus.sketches[:size]), "<u4")
    row["postings_entries"] = int(len(values))
    small = values[values < HOT_BELOW]
    postings = np.array([int((small == v).sum()) for v in hot_values()])
    row["hot_postings"] = {"longest": int(postings.max()), "shortest": int(postings.min()),
                           "over_HOT_POSTINGS": int((postings > HOT_POSTINGS).sum()), "HOT_POSTINGS": HOT_POSTINGS}
    del values, small
    engine = Deduplicator(store)
    threshold = args.threshold

    def from_store(doc_id, params):
        return engine.find_similar(doc_id, params)

    began = time.perf_counter()
    for q in queries:  # warm: every query's pages once, as a serving process would have them
        engine.find_similar(corpus.ids[q.article], SimilarParams(TOP, threshold, DEFAULT_METRIC))
    row["engine"] = {DEFAULT_METRIC: engine_latency(from_store, corpus, queries,
                                                    SimilarParams(TOP, threshold, DEFAULT_METRIC), 3)}
    row["engine"][JACCARD] = engine_latency(from_store, corpus, queries, SimilarParams(JACCARD_TOP_K, threshold,
                                                                                       JACCARD), 3)
    phase("engine in process", began)

    # the in-memory index, as a `--search-index memory` worker builds it, and searched as it searches
    gc.collect()
    before = rss_anon()
    began = time.perf_counter()
    view = LiveView(store, cache_size=0, search_index=True)
    row["memory_index"] = {**view.search_index.stats(), "rss_anon_bytes": rss_anon() - before}
    row["memory_index"]["rss_anon_bytes_per_article"] = row["memory_index"]["rss_anon_bytes"] / size
    phase("memory index build", began)

    def from_memory(doc_id, params):
        return engine.find_similar(doc_id, params, view.read())

    began = time.perf_counter()
    row["engine_memory"] = {metric: engine_latency(from_memory, corpus, queries, SimilarParams(top_k, threshold,
                                                                                               metric), 3)
                            for metric, top_k in ((DEFAULT_METRIC, TOP), (JACCARD, JACCARD_TOP_K))}
    phase("memory index in process", began)

    began = time.perf_counter()
    row["recall"] = recall_vs_scan(from_store, corpus, size, queries, threshold, DEFAULT_METRIC)
    row["recall_memory"] = recall_vs_scan(from_memory, corpus, size, queries, threshold, DEFAULT_METRIC)
    phase("recall against the exhaustive scan", began)

    began = time.perf_counter()
    row["pairs"] = pairs_rate(engine, threshold, DEFAULT_METRIC)
    phase("similar_pairs", began)

    if lsh is not None:
        began = time.perf_counter()
        row["lsh"] = lsh_comparison(lsh, engine, from_memory, corpus, sig, size, lsh_queries, threshold, 3)
        phase("MinHashLSH comparison (queries and truth)", began)
    else:
        row["lsh"] = {"skipped": args.lsh_skipped.get(size, "not run at this size")}
    view = None  # the in-process index is freed before the servers build theirs
    gc.collect()

    for search_index, key in (("store", "server"), ("memory", "server_memory")):
        began = time.perf_counter()
        row[key] = server_latency(store_path, corpus, queries, args.calls, threshold, search_index)
        phase(f"server (--search-index {search_index}): FindSimilar against the health Check", began)
    return row


# --- the run --------------------------------------------------------------------------------------------------------

def run(args, work: Path) -> dict:
    sizes = sorted(set(args.sizes))
    largest = sizes[-1]
    chunks = math.ceil(largest / CHUNK)
    if chunks > (HOT_COUNTERS >> COUNTER_BITS):
        raise SystemExit(f"at most {(HOT_COUNTERS >> COUNTER_BITS) * CHUNK:,} articles")
    hot = hot_values()
    permutations = MinHash(num_perm=NUM_PERM, seed=1).permutations
    available = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemAvailable:"))) * 1024
    lsh_size = max([s for s in sizes if s <= args.lsh_max and s * LSH_BYTES_PER_ARTICLE < 0.7 * available],
                   default=0)
    args.lsh_skipped = {s: (f"MinHashLSH needs ~{s * LSH_BYTES_PER_ARTICLE / 1e9:.0f} GB; "
                            f"{available / 1e9:.0f} GB available" if s <= args.lsh_max else "--lsh-max")
                        for s in sizes if s > lsh_size}
    plain_size = min(largest, args.plain)
    indexed_path, plain_path = work / "store", work / "store-plain"
    store = create_store(indexed_path, SketchConfig(), [], indexed=True)
    plain = create_store(plain_path, SketchConfig(), [], indexed=False) if plain_size else None
    corpus = Corpus()
    sig = np.empty((lsh_size, NUM_PERM), np.uint32) if lsh_size else None
    lsh = Lsh(args.threshold) if lsh_size else None
    queries: dict[int, list[Query]] = {size: [] for size in sizes}
    lsh_queries: dict[int, list[Query]] = {size: [] for size in sizes}
    qrng = np.random.default_rng([SEED, 1])
    phases = {"generate": 0.0, "sketch": 0.0, "minhash": 0.0, "lsh_insert": 0.0}
    writes, plain_writes, rows = [], [], []
    kept_chunks: list[Chunk] = []
    plain_usage = None
    for index in range(chunks):
        first = index * CHUNK
        count = min(CHUNK, largest - first)
        began = time.perf_counter()
        chunk = generate_chunk(SEED, index, count, hot)
        phases["generate"] += time.perf_counter() - began
        began = time.perf_counter()
        sketches = bottom_k(chunk)
        phases["sketch"] += time.perf_counter() - began
        corpus.add(chunk, sketches)
        items = list(zip(corpus.ids[first:first + count], sketches))
        began = time.perf_counter()
        store.put_many(items)
        seconds = time.perf_counter() - began
        writes.append({"before": first, "articles": count, "seconds": seconds, "articles_per_s": count / seconds})
        if plain is not None and first < plain_size:
            began = time.perf_counter()
            plain.put_many(items)
            seconds = time.perf_counter() - began
            plain_writes.append({"before": first, "articles": count, "seconds": seconds,
                                 "articles_per_s": count / seconds})
            if first + count >= plain_size:
                plain_usage = plain.disk_usage()
                plain.close()
                plain = None
                shutil.rmtree(plain_path)
        if first < lsh_size:
            began = time.perf_counter()
            sig[first:first + count] = signatures(chunk, permutations)
            if index == 0:
                check_signatures(chunk, sig[:count], permutations)
            phases["minhash"] += time.perf_counter() - began
            began = time.perf_counter()
            lsh.insert(corpus.ids[first:first + count], sig[first:first + count])
            phases["lsh_insert"] += time.perf_counter() - began
        for size in sizes:  # queries spread over the chunks of the size
            if first < size:
                queries[size] += pick_queries(chunk, first, max(1, round(args.queries * CHUNK / size)), qrng)
                if size <= lsh_size:
                    lsh_queries[size] += pick_queries(chunk, first, max(1, round(args.lsh_queries * CHUNK / size)),
                                                      qrng)
        if args.quick:
            kept_chunks.append(chunk)
        del chunk, items
        print(f"chunk {index + 1}/{chunks}: {first + count:,} articles; put_many {writes[-1]['seconds']:.1f} s",
              flush=True)
        done = first + count
        if done in sizes:
            lengths, groups, hot_bits = corpus.arrays()
            if args.quick:
                began = time.perf_counter()
                checked = check_truth(kept_chunks, lsh_queries[done], lengths, groups, hot_bits, args.threshold)
                print(f"  Jaccard truth equals a full scan for {checked} queries "
                      f"({time.perf_counter() - began:.1f} s)")
            row = measure_size(done, store, indexed_path, corpus, queries[done], lsh_queries[done],
                               sig, lsh if done <= lsh_size else None, args,
                               plain_usage if done == plain_size else None)
            row["queries_per_kind"] = {k: sum(q.kind == k for q in queries[done]) for k in KINDS}
            row["lsh_queries_per_kind"] = {k: sum(q.kind == k for q in lsh_queries[done]) for k in KINDS}
            row["writes"] = [w for w in writes if w["before"] < done]
            rows.append(row)
        if lsh is not None and done >= lsh_size:
            del lsh
            lsh = None
            gc.collect()
    store.close()
    all_kinds = np.concatenate(corpus.kinds)
    kinds = {name: int((all_kinds == code).sum())
             for name, code in (("grouped", GROUPED), ("singleton", SINGLE), ("short", SHORT))}
    lengths, groups, hot_bits = corpus.arrays()
    return {"sizes": sizes, "rows": rows, "writes": writes, "plain_writes": plain_writes, "phases": phases,
            "corpus": {"articles": largest, "by_kind": kinds, "mean_set_size": float(lengths.mean()),
                       "mean_sketch_values": sum(map(len, corpus.sketches)) / 4 / largest,
                       "mean_hot_values_per_article": float(np.bitwise_count(hot_bits).mean()),
                       "groups": int(len(np.unique(groups)))},
            "lsh_size": lsh_size, "lsh_skipped": args.lsh_skipped}


# --- the report -------------------------------------------------------------------------------------------------------

SEARCH_PATHS = (("store", "server", "engine", "recall", "FindSimilar jaccard (engine, in process)", "findsimilar"),
                ("memory", "server_memory", "engine_memory", "recall_memory", MEMORY_JACCARD, "findsimilar_memory"))


def goals(results: dict) -> list[dict]:
    rows = []
    for row in results["rows"]:
        size = f"{row['articles']:,}"
        for path, server_key, _, recall_key, lsh_name, quality_key in SEARCH_PATHS:
            server = row.get(server_key, {})
            if "kinds" in server:
                name = "FindSimilar (stored id), NearDupClient"
                ratio = server["kinds"][name]["p99_ratio"]
                rows.append({"goal": f"{size}: FindSimilar p99 <= {GOAL_P99_RATIO:g} x health Check p99 "
                                     f"(sequential, --search-index {path})",
                             "measured": f"{server['kinds'][name]['latency_ms']['p99']:.2f} ms vs "
                                         f"{server['kinds']['health Check (empty call)']['latency_ms']['p99']:.2f}"
                                         f" ms = {ratio:.2f} x", "met": ratio <= GOAL_P99_RATIO})
            recall = row[recall_key]["recall"]
            rows.append({"goal": f"{size}: top-{TOP} recall >= {GOAL_RECALL} against the exhaustive scan "
                                 f"({row[recall_key]['metric']} {row[recall_key]['threshold']}; {path})",
                         "measured": f"{recall:.4f}", "met": recall >= GOAL_RECALL})
            lsh = row["lsh"]
            if "quality" in lsh:
                ours, theirs = lsh["latency_us"][lsh_name], lsh["latency_us"]["MinHashLSH.query"]
                recall_ours = lsh["quality"][quality_key]["recall"]
                recall_theirs = lsh["quality"]["lsh_candidates"]["recall"]
                rows.append({"goal": f"{size}: FindSimilar (jaccard, in process, {path}) faster than "
                                     "MinHashLSH.query at equal or better recall",
                             "measured": f"median {ours['median_us']:.0f} vs {theirs['median_us']:.0f} µs, p99 "
                                         f"{ours['p99_us']:.0f} vs {theirs['p99_us']:.0f} µs; recall "
                                         f"{recall_ours:.4f} vs {recall_theirs:.4f}",
                             "met": ours["median_us"] < theirs["median_us"] and ours["p99_us"] < theirs["p99_us"]
                             and recall_ours >= recall_theirs})
        ratio = row["index_to_sketches"]
        rows.append({"goal": f"{size}: index <= {GOAL_INDEX_RATIO:g} x the sketches' bytes",
                     "measured": f"{row['index_bytes_per_article']:.0f} vs {row['sketches_bytes_per_article']:.0f}"
                                 f" bytes/article = {ratio:.2f} x", "met": ratio <= GOAL_INDEX_RATIO})
    return rows


def _f(value, digits=2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def markdown(results: dict) -> str:
    m = results["machine"]
    corpus = results["corpus"]
    lines = [f"## Corpus search: FindSimilar, pairs and MinHashLSH ({m['date']}, commit {m['commit']})", "",
             f"`{results['command']}`: {m['nproc']} × {m['cpu']}, Python {m['python']}, grpcio {m['grpcio']}; "
             f"{results['seconds']:.0f} s. Generated corpus (seed {results['seed']}): "
             f"{corpus['by_kind']['grouped']:,} grouped, {corpus['by_kind']['singleton']:,} singleton and "
             f"{corpus['by_kind']['short']:,} short articles in {corpus['groups']:,} groups; sets of "
             f"{corpus['mean_set_size']:.0f} values on average, sketches of {corpus['mean_sketch_values']:.1f}, "
             f"{corpus['mean_hot_values_per_article']:.2f} hot values per article. Threshold "
             f"{results['threshold']}, written in batches of {CHUNK:,}.", ""]
    lines += table(["goal", "measured", "met"],
                   [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]])
    lines += ["", "### FindSimilar through the server (one worker, sequential NearDupClient, in turns with the "
                  "empty health Check)", ""]
    rows = []
    for row in results["rows"]:
        for path, server_key, *_ in SEARCH_PATHS:
            server = row[server_key]
            if "kinds" not in server:
                rows.append([f"{row['articles']:,}", path, server.get("skipped", "—"), "", "", "", "", "", ""])
                continue
            for name, kind in server["kinds"].items():
                lat = kind["latency_ms"]
                rows.append([f"{row['articles']:,}", path, name, _f(lat["p50"]), _f(lat["p99"]),
                             _f(kind["p50_ratio"]), _f(kind["p99_ratio"]), str(kind["calls"]), str(kind["errors"])])
    lines += table(["articles", "--search-index", "call", "p50 ms", "p99 ms", "p50 / Check", "p99 / Check", "calls",
                    "errors"], rows)
    lines += ["", "### FindSimilar in process (Deduplicator.find_similar, no gRPC; µs per query kind)", ""]
    rows = []
    for row in results["rows"]:
        for path, _, engine_key, *_ in SEARCH_PATHS:
            for metric, kinds in row[engine_key].items():
                for kind, lat in kinds.items():
                    rows.append([f"{row['articles']:,}", path, metric, kind, _f(lat["p50_us"], 0),
                                 _f(lat["p99_us"], 0), str(lat["calls"])])
    lines += table(["articles", "search", "metric", "queries", "p50 µs", "p99 µs", "calls"], rows)
    lines += ["", "### The memory index (built in process as a `--search-index memory` worker builds it)", ""]
    rows = []
    for row in results["rows"]:
        memory = row["memory_index"]
        workers = row["server_memory"].get("server_memory", {})
        worker_rss = max((w.get("RssAnon", 0) for w in workers.values()), default=0)
        rows.append([f"{row['articles']:,}", f"{memory['build_seconds']:.1f}",
                     f"{row['server_memory'].get('ready_seconds', 0):.1f}", f"{memory['base_entries']:,}",
                     _f(memory["bytes"] / 1e6, 0), _f(memory["rss_anon_bytes"] / 1e6, 0),
                     _f(memory["rss_anon_bytes_per_article"], 0), _f(worker_rss / 1e6, 0)])
    lines += table(["articles", "build s (in process)", "server ready s", "postings", "arrays MB",
                    "RssAnon grown MB", "bytes/article", "worker RssAnon MB"], rows)
    lines += ["", "### Recall, index size, writes, pairs", ""]
    rows = []
    for row in results["rows"]:
        recall = row["recall"]
        per_kind = ", ".join(f"{k} {_f(v, 3)}" for k, v in recall["per_kind"].items())
        rows.append([f"{row['articles']:,}", f"{recall['recall']:.4f} ({per_kind}); {recall['relevant']} expected, "
                     f"{recall['inexact_answers']} inexact answers; memory index "
                     f"{row['recall_memory']['recall']:.4f}",
                     _f(row["sketches_bytes_per_article"], 0), _f(row["index_bytes_per_article"], 0),
                     _f(row["index_to_sketches"]), f"{row['hot_postings']['shortest']:,}–"
                     f"{row['hot_postings']['longest']:,}", _f(row["pairs"]["articles_per_s"], 0)])
    lines += table(["articles", f"top-{TOP} recall vs exhaustive scan", "sketches bytes/article",
                    "index bytes/article", "index / sketches", "hot postings (articles)", "pairs articles/s"], rows)
    lines += ["", "Upsert (put_many batches of 50,000 articles):", ""]
    rows = [["postings on", f"{w['before']:,}", f"{w['seconds']:.1f}", _f(w["articles_per_s"], 0)]
            for w in results["writes"]]
    rows += [["postings off", f"{w['before']:,}", f"{w['seconds']:.1f}", _f(w["articles_per_s"], 0)]
             for w in results["plain_writes"]]
    lines += table(["store", "articles before the batch", "seconds", "articles/s"], rows)
    lines += ["", "### datasketch MinHashLSH on the same corpus (in process, Jaccard)", ""]
    rows = []
    for row in results["rows"]:
        lsh = row["lsh"]
        if "quality" not in lsh:
            rows.append([f"{row['articles']:,}", f"skipped: {lsh['skipped']}", "", "", "", "", ""])
            continue
        for name, label in (("MinHashLSH.query", "lsh_candidates"),
                            ("MinHashLSH.query + MinHash verification", "lsh_verified"),
                            ("FindSimilar jaccard (engine, in process)", "findsimilar"),
                            (MEMORY_JACCARD, "findsimilar_memory")):
            lat, quality = lsh["latency_us"][name], lsh["quality"][label]
            rows.append([f"{row['articles']:,}", name, _f(lat["median_us"], 0), _f(lat["p99_us"], 0),
                         _f(quality["recall"], 4), _f(quality["precision"], 4), str(lsh["relevant"])])
    lines += table(["articles", "query", "median µs", "p99 µs", "recall", "precision", "true pairs"], rows)
    for row in results["rows"]:
        lsh = row["lsh"]
        if "quality" in lsh:
            lines += ["", f"MinHashLSH at {row['articles']:,}: b = {lsh['bands']} bands of r = {lsh['rows']}; built "
                          f"in {lsh['build_seconds']:.0f} s ({lsh['build_articles_per_s']:,.0f} articles/s, "
                          "signatures given), "
                          f"{lsh['memory_bytes'] / 1e9:.2f} GB ({lsh['memory_bytes_per_article']:,.0f} bytes/article)"
                          f"; neardup's store: {row['data_mdb_bytes'] / 1e9:.2f} GB on disk."]
    lines += ["", "### Phases (seconds)", ""]
    phases = [[name, f"{seconds:.1f}"] for name, seconds in results["phases"].items()]
    for row in results["rows"]:
        phases += [[f"{row['articles']:,}: {name}", f"{seconds:.1f}"] for name, seconds in row["phases"].items()]
    lines += table(["phase", "seconds"], phases)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100,000 articles, 25 queries per kind")
    parser.add_argument("--sizes", type=int, nargs="+", help="stored articles to measure at, multiples of "
                        f"{CHUNK:,} (default 100000 1000000)")
    parser.add_argument("--queries", type=int, help="queries per kind (grouped, singleton, short, hot; default 100)")
    parser.add_argument("--lsh-queries", type=int,
                        help="queries per kind of the MinHashLSH comparison (default 500)")
    parser.add_argument("--calls", type=int, help="sequential calls per kind against the server (default 2000)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="for both metrics")
    parser.add_argument("--lsh-max", type=int, default=1_000_000, help="largest size MinHashLSH is built at")
    parser.add_argument("--plain", type=int, default=100_000,
                        help="articles also written to a store without postings")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="where the results are written")
    parser.add_argument("--dir", type=Path, help="where the stores are built (default: a temporary directory)")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or ([100_000] if args.quick else [100_000, 1_000_000])
    if any(size % CHUNK for size in args.sizes):
        parser.error(f"sizes must be multiples of {CHUNK:,}")
    args.queries = args.queries or (25 if args.quick else 100)
    args.lsh_queries = args.lsh_queries or (100 if args.quick else 500)
    args.calls = args.calls or (400 if args.quick else 2000)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    command = "python benchmarks/bench_similar.py" + (" --quick" if args.quick else "")
    if sorted(args.sizes) != ([100_000] if args.quick else [100_000, 1_000_000]):
        command += " --sizes " + " ".join(map(str, sorted(args.sizes)))
    started = time.perf_counter()
    results = {"command": command, "machine": measure.machine(), "seed": SEED, "threshold": args.threshold,
               "chunk": CHUNK, "k": K}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-similar-", dir=args.dir) as scratch:
        results.update(run(args, Path(scratch)))
    results["goals"] = goals(results)
    results["seconds"] = time.perf_counter() - started
    text = markdown(results)
    save(args.out, "bench_similar", results, text)
    print(text)
    print(f"wrote {args.out / 'bench_similar.json'}, bench_similar.md ({results['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
