"""The compiled grouping of a Redis Cluster store's ids by shard (store/_shards.c), held to zlib's CRC-32: the rule
docs/fleet.md states and stores made before it was compiled follow."""
from __future__ import annotations

import random
import zlib

import pytest

from neardup.store._shards import positions_by_shard


def test_ids_are_grouped_by_the_crc32_of_their_utf8_key_modulo_the_shards():
    """The compiled grouping of the request path against zlib's CRC-32, over keys of every length around its
    8-byte steps, any bytes, and shard counts from 1 up."""
    rng = random.Random(41)
    for _ in range(500):
        keys = [rng.randbytes(rng.randrange(0, 40)) for _ in range(rng.randrange(0, 120))]
        keys += [f"article-{rng.random()}-ü€𝄞".encode() for _ in range(5)]
        shards = rng.randrange(1, 70)
        expected: dict[int, list[int]] = {}
        for position, key in enumerate(keys):
            expected.setdefault(zlib.crc32(key) % shards, []).append(position)
        assert positions_by_shard(keys, shards) == expected
    with pytest.raises(TypeError):
        positions_by_shard(["text, not its key"], 4)
    with pytest.raises(ValueError):
        positions_by_shard([b"a"], 0)
