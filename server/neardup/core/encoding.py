"""Sketch bytes: a bottom-K sketch travels and is stored as little-endian uint32 values, ascending; a SimHash sketch
as one little-endian uint64 (or no bytes); an items sketch in core/fields.py's layout. Decoding and the checks
that the kernel's assumptions hold."""
from __future__ import annotations

import operator
import struct
from typing import Iterable

from . import fields as item_fields
from .errors import ConfigMismatch, InvalidArgument
from .sketch_config import SketchConfig
from .vocabulary import ITEMS, SIMHASH

#: Bytes of a SimHash sketch: one little-endian uint64.
SIMHASH_BYTES = 8

def encode_sketch(values: Iterable[int]) -> bytes:
    values = list(values)
    return struct.pack(f"<{len(values)}I", *values)


def decode_sketch(sketch: bytes) -> list[int]:
    if len(sketch) % 4:
        raise InvalidArgument(f"sketch bytes must be a multiple of 4 long (uint32 values), got {len(sketch)}")
    return list(struct.unpack(f"<{len(sketch) // 4}I", sketch))


def check_sketch(sketch: bytes, config: SketchConfig) -> bytes:
    """The sketch bytes as the store and the kernel take them under config, checked for its kind."""
    if config.kind == SIMHASH:
        return validate_simhash(sketch)
    if config.kind == ITEMS:
        item_fields.decode_item(sketch, config.fields)
        return bytes(sketch)
    return validate_sketch(sketch, config.k)


def validate_simhash(sketch: bytes) -> bytes:
    """A SimHash sketch: 8 bytes (a little-endian uint64 fingerprint), or none for a text without shingles."""
    if len(sketch) not in (0, SIMHASH_BYTES):
        raise InvalidArgument(f"a simhash sketch is {SIMHASH_BYTES} bytes (a little-endian uint64 fingerprint), or "
                              f"empty for a text without shingles; got {len(sketch)} bytes")
    return bytes(sketch)


def validate_sketch(sketch: bytes, k: int) -> bytes:
    """Checks what the kernel relies on: whole uint32 values, strictly ascending, at most K of them."""
    values = decode_sketch(sketch)
    if len(values) > k:
        raise ConfigMismatch(f"sketch has {len(values)} values but the store keeps K={k}; "
                             "it was made with another configuration")
    if not all(map(operator.lt, values, values[1:])):
        raise InvalidArgument("sketch values must be strictly ascending (sorted, no repeats)")
    return bytes(sketch)
