"""The generated corpus of the corpus-search benchmarks (bench_similar_*.py, bench_cluster.py), made as shingle SETS
(uint32 values), so that neardup's sketches (the K = 128 smallest values of each set, sorted) and datasketch's MinHash
(128 permutations, over the whole set) come from the same documents:

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
chunk is one put_many batch of the store. MinHash signatures are datasketch's (its default scheme affine32, its
permutations of seed 1, hashfunc = the uint32 value itself, as for CRC32 shingle hashes), computed vectorized with
numpy and checked against MinHash.update_batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup.core.sketch_config import SketchConfig

SEED = 20261123
K = SketchConfig().k
NUM_PERM = 128
CHUNK = 50_000                 # articles per generated chunk and per put_many batch
COUNTER_BITS = 27              # value counters per chunk (a chunk uses < 2**27 values)
HOT_COUNTERS = 0xF000_0000     # hot values are fmix32 of counters from here: never another article's value
HOT_VALUES = 30
HOT_BELOW = 1 << 26            # hot values are small: in the K smallest of (nearly) every set holding them
HOT_SHARES = np.geomspace(0.01, 0.10, HOT_VALUES)
# shares of the articles, set sizes (inclusive ranges), copies
GROUPED_SHARE, SHORT_SHARE = 0.40, 0.15
BASE_SIZES, SINGLE_SIZES, SHORT_SIZES = (300, 1500), (100, 1500), (10, 60)
GROUP_P, GROUP_MAX = 0.25, 40  # grouped: 2 + geometric(GROUP_P) - 1 articles, at most GROUP_MAX
SHORT_GROUP = (2, 4)
EDIT, SHORT_EDIT = (0.0, 0.6), (0.0, 0.4)
TRUNCATE_P, TRUNCATE = 0.25, (0.3, 0.8)
GROUPED, SINGLE, SHORT = 0, 1, 2

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
    from datasketch import MinHash

    for article in (0, 1, len(sig) - 1):
        minhash = MinHash(num_perm=NUM_PERM, hashfunc=int, permutations=permutations, scheme="affine32")
        minhash.update_batch(chunk.set_of(article).tolist())
        if not np.array_equal(minhash.hashvalues, sig[article]):
            raise SystemExit("numpy MinHash signatures differ from datasketch's")
