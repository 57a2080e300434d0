"""Items with fields: the schema a store of kind "items" keeps (SketchConfig.fields and .rules), its match tokens and
super tokens, and the layout of an item sketch. Pure: no I/O.

Each field is compared on its own (seed 003), so the longest one does not dominate a pair's similarity; rules
become super tokens, so two items that share none are never compared nor found.
The layout and the rules: docs/fields.md ("The schema", "How two items are compared").
"""
from __future__ import annotations

import math
import re
import struct
import zlib
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Iterable, Mapping, NamedTuple, Sequence

from .errors import InvalidArgument
from .vocabulary import (CONTAINMENT, DEFAULT_UNIT, EXACT, FIELD_KINDS, FIELD_METRICS, LOCATION, TEXT, UNIT_HELP,
                         UNIT_PATTERN)

#: How an exact field's value becomes its one token: "text" casefolds and keeps words (minus the field's
#: drop_words, e.g. legal suffixes of organisations), "digits" keeps the last 9 digits (a phone number with or
#: without its country code or trunk 0), "url" drops scheme, www., query, fragment and trailing slash, and
#: lowercases the host.
NORMALIZERS = ("text", "digits", "url")
LOCATION_CELLS = 9
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_FIELDS = 32
MAX_TEXT_K = 1024


@dataclass(frozen=True)
class FieldSpec:
    """How one field of an item is sketched and weighed."""

    name: str
    kind: str = TEXT
    #: text: shingle unit (vocabulary.UNIT_PATTERN)
    unit: str = DEFAULT_UNIT
    #: text: bottom-K size of the field's sketch
    k: int = 64
    #: the field's weight in a pair's similarity
    weight: float = 1.0
    #: location: geohash precision (characters; 5 is a cell of ~4.9 km x 4.9 km at the equator)
    precision: int = 5
    #: exact: one of NORMALIZERS
    normalize: str = "text"
    #: exact, normalize "text": words left out before the value becomes a token
    drop_words: tuple[str, ...] = ()
    #: text: how many of its smallest values are its match tokens in super tokens
    rule_tokens: int = 4
    #: text, and exact with normalize "text": (word, the word it stands for) pairs, casefolded, applied before the
    #: text is sketched or the value becomes a token ("colour" -> "color", "gmbh" -> "ltd", "verkoper" -> "sales")
    synonyms: tuple[tuple[str, str], ...] = ()
    #: text: its similarity in a pair's weighted combination, one of vocabulary.FIELD_METRICS
    metric: str = CONTAINMENT

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _FIELD_NAME.match(self.name):
            raise InvalidArgument(f"field name {self.name!r}: use lowercase letters, digits and _ (a letter first, "
                                  "at most 40)")
        if self.kind not in FIELD_KINDS:
            raise InvalidArgument(f"field {self.name}: unknown kind {self.kind!r}; use {', '.join(FIELD_KINDS)}")
        if not UNIT_PATTERN.match(str(self.unit)):
            raise InvalidArgument(f"field {self.name}: unknown shingle unit {self.unit!r}; use {UNIT_HELP}")
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_TEXT_K:
            raise InvalidArgument(f"field {self.name}: k must be an integer in 1..{MAX_TEXT_K}, got {self.k!r}")
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) \
                or not math.isfinite(self.weight) or self.weight < 0:
            raise InvalidArgument(f"field {self.name}: weight must be a number >= 0, got {self.weight!r}")
        if not isinstance(self.precision, int) or not 1 <= self.precision <= 12:
            raise InvalidArgument(f"field {self.name}: precision must be an integer in 1..12, got {self.precision!r}")
        if self.normalize not in NORMALIZERS:
            raise InvalidArgument(f"field {self.name}: unknown normalize {self.normalize!r}; use "
                                  f"{', '.join(NORMALIZERS)}")
        if not isinstance(self.rule_tokens, int) or not 1 <= self.rule_tokens <= 64:
            raise InvalidArgument(f"field {self.name}: rule_tokens must be an integer in 1..64")
        if self.metric not in FIELD_METRICS:
            raise InvalidArgument(f"field {self.name}: metric must be {' or '.join(FIELD_METRICS)}, got "
                                  f"{self.metric!r}")
        object.__setattr__(self, "weight", float(self.weight))
        object.__setattr__(self, "drop_words", tuple(sorted({w.casefold() for w in self.drop_words})))
        object.__setattr__(self, "synonyms", self._checked_synonyms())

    def _checked_synonyms(self) -> tuple[tuple[str, str], ...]:
        pairs = self.synonyms.items() if isinstance(self.synonyms, Mapping) else self.synonyms
        try:
            pairs = [(str(word).casefold(), str(meant).casefold()) for word, meant in pairs]
        except (TypeError, ValueError):
            raise InvalidArgument(f"field {self.name}: synonyms are pairs of words (word, the word it stands for), "
                                  f"got {self.synonyms!r}") from None
        if pairs and (self.kind == LOCATION or (self.kind == EXACT and self.normalize != "text")):
            raise InvalidArgument(f"field {self.name}: synonyms apply to text fields and to exact fields normalised "
                                  "as text only")
        for word, meant in pairs:
            if not (_WORDS.fullmatch(word) and _WORDS.fullmatch(meant)) or word == meant:
                raise InvalidArgument(f"field {self.name}: synonym {word!r} -> {meant!r}: each is one word "
                                      "(letters and digits), and they differ")
        mapping = dict(pairs)
        if len(mapping) != len(pairs):
            raise InvalidArgument(f"field {self.name}: a word has more than one synonym")
        if set(mapping) & set(mapping.values()):
            raise InvalidArgument(f"field {self.name}: a synonym's target is itself mapped; map every word to the "
                                  "final one")
        return tuple(sorted(mapping.items()))

    @cached_property
    def _synonym_pattern(self) -> "re.Pattern | None":
        if not self.synonyms:
            return None
        return re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(word) for word, _ in self.synonyms) + r")(?![^\W_])",
                          re.IGNORECASE)

    def with_synonyms(self, text: str) -> str:
        """The text with each synonym's word replaced by the word it stands for (whole words, any case)."""
        pattern = self._synonym_pattern
        if pattern is None:
            return text
        mapping = dict(self.synonyms)
        return pattern.sub(lambda match: mapping.get(match.group(0).casefold(), match.group(0)), text)

    @classmethod
    def from_dict(cls, values: Mapping) -> "FieldSpec":
        if not isinstance(values, Mapping):
            raise InvalidArgument(f"a field must be an object (name, kind, ...), got {values!r}")
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown field settings: {', '.join(sorted(unknown))}; use "
                                  f"{', '.join(cls.__dataclass_fields__)}")
        return cls(**{**values, "drop_words": tuple(values.get("drop_words", ())),
                      "synonyms": values.get("synonyms", ())})

    def describe(self) -> str:
        """The field in its own terms: its kind and what of its settings applies to that kind, and its weight
        ("title: text word:3 k=64 containment, weight 2"); SketchConfig.describe lists these."""
        if self.kind == TEXT:
            how = f"text {self.unit} k={self.k} {self.metric}"
        elif self.kind == EXACT:
            how = f"exact ({self.normalize})"
        else:
            how = f"location (geohash precision {self.precision})"
        return f"{self.name}: {how}, weight {self.weight:g}"

    @property
    def columns(self) -> tuple[str, ...]:
        """Its feature columns (core/_items.c): containment and jaccard of a text field, one of any other."""
        if self.kind == TEXT:
            return (f"{self.name}.containment", f"{self.name}.jaccard")
        return (f"{self.name}.{'match' if self.kind == EXACT else 'cells'}",)


def check_schema(fields: Sequence[FieldSpec], rules: Sequence[Sequence[str]]) -> None:
    """Field names unique, at most MAX_FIELDS, some weight; every rule names known fields."""
    names = [spec.name for spec in fields]
    if not 1 <= len(fields) <= MAX_FIELDS:
        raise InvalidArgument(f"an item schema has 1 to {MAX_FIELDS} fields, got {len(fields)}")
    if len(set(names)) != len(names):
        raise InvalidArgument(f"field names must be unique, got {', '.join(names)}")
    if not any(spec.weight > 0 for spec in fields):
        raise InvalidArgument("at least one field needs a weight above 0")
    for rule in rules:
        if not rule or len(set(rule)) != len(rule):
            raise InvalidArgument(f"a rule lists one or more distinct field names, got {list(rule)!r}")
        unknown = [name for name in rule if name not in names]
        if unknown:
            raise InvalidArgument(f"rule {list(rule)} names unknown fields {', '.join(unknown)}; the schema has "
                                  f"{', '.join(names)}")


# --- values -------------------------------------------------------------------------------------------------

class ExactValue(str):
    """A value its sender marked exact (the proto's FieldValue.exact): refused for a text field."""


class GeoPoint(NamedTuple):
    lat: float
    lon: float


def geo_point(value, field: str) -> GeoPoint:
    """A latitude/longitude from a GeoPoint, a {"lat", "lon"} object or a pair; InvalidArgument says what to fix."""
    if isinstance(value, Mapping):
        lat, lon = value.get("lat"), value.get("lon")
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lat, lon = value
    else:
        raise InvalidArgument(f"field {field} is a location: give {{\"lat\": ..., \"lon\": ...}}, got {value!r}")
    for what, number, limit in (("latitude", lat, 90), ("longitude", lon, 180)):
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                or not -limit <= number <= limit:
            raise InvalidArgument(f"field {field}: {what} must be a number in [-{limit}, {limit}], got {number!r}")
    return GeoPoint(float(lat), float(lon))


_GEOHASH = "0123456789bcdefghjkmnpqrstuvwxyz"


def geohash(lat: float, lon: float, precision: int) -> str:
    """The standard geohash (Niemeyer) of a point."""
    lat_range, lon_range = [-90.0, 90.0], [-180.0, 180.0]
    chars, bits, value, even = [], 0, 0, True
    while len(chars) < precision:
        interval, x = (lon_range, lon) if even else (lat_range, lat)
        middle = (interval[0] + interval[1]) / 2
        value = value * 2 + (x >= middle)
        interval[0 if x >= middle else 1] = middle
        even = not even
        bits += 1
        if bits == 5:
            chars.append(_GEOHASH[value])
            bits = value = 0
    return "".join(chars)


def geohash_cells(point: GeoPoint, precision: int) -> list[str]:
    """The point's cell and its (up to) eight neighbours: the centres one cell width and height away, longitude
    wrapping round, latitude stopping at the poles."""
    bits = 5 * precision
    height, width = 180.0 / 2 ** (bits // 2), 360.0 / 2 ** (bits - bits // 2)
    cell = geohash(point.lat, point.lon, precision)
    # the centre of the point's cell, from its own geohash, so neighbours do not depend on where in it the point is
    lat_range, lon_range, even = [-90.0, 90.0], [-180.0, 180.0], True
    for char in cell:
        code = _GEOHASH.index(char)
        for shift in range(4, -1, -1):
            interval = lon_range if even else lat_range
            interval[0 if code >> shift & 1 else 1] = (interval[0] + interval[1]) / 2
            even = not even
    lat0, lon0 = sum(lat_range) / 2, sum(lon_range) / 2
    cells = []
    for dlat in (-1, 0, 1):
        lat = lat0 + dlat * height
        if not -90 < lat < 90:
            continue
        for dlon in (-1, 0, 1):
            lon = (lon0 + dlon * width + 180.0) % 360.0 - 180.0
            cells.append(geohash(lat, lon, precision))
    return sorted(set(cells))


_WORDS = re.compile(r"[^\W_]+")
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)


def normalized(spec: FieldSpec, value: str) -> str:
    """An exact field's value as its token is made of (NORMALIZERS); "" when nothing is left."""
    if spec.normalize == "digits":
        return "".join(filter(str.isdigit, value))[-9:]
    if spec.normalize == "url":
        rest = _URL.sub("", value.strip())
        rest = re.split(r"[?#]", rest, maxsplit=1)[0].rstrip("/")
        host, _, path = rest.partition("/")
        host = host.lower().removeprefix("www.")
        return f"{host}/{path}" if path else host
    synonyms = dict(spec.synonyms)
    words = (synonyms.get(w, w) for w in _WORDS.findall(value.casefold()))
    return " ".join(w for w in words if w not in spec.drop_words)


def crc32(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


# --- the layout ---------------------------------------------------------------------------------------------

_MASK64 = (1 << 64) - 1


def _mix(x: int) -> int:
    """splitmix64's output function, to combine match tokens into super tokens."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def match_tokens(spec: FieldSpec, values: Sequence[int]) -> Sequence[int]:
    """The values of a field that go into super tokens: a text field's rule_tokens smallest, any other's all."""
    return values[:spec.rule_tokens] if spec.kind == TEXT else values


def super_tokens(fields: Sequence[FieldSpec], rules: Sequence[Sequence[str]],
                 sections: Sequence[Sequence[int]]) -> list[int]:
    """The super tokens of an item whose field sections are given: per rule, every combination of one match
    token of each of its fields (none when the item lacks one of them), hashed with the rule's number."""
    position = {spec.name: i for i, spec in enumerate(fields)}
    tokens: set[int] = set()
    for number, rule in enumerate(rules or [[spec.name] for spec in fields]):
        partial = [_mix(number + 1)]
        for name in rule:
            index = position[name]
            values = match_tokens(fields[index], sections[index])
            partial = [_mix(h ^ (index << 32 | v)) for h in partial for v in values]
        tokens.update(h & 0xFFFFFFFF for h in partial)
    return sorted(tokens)


def encode_item(sections: Sequence[Sequence[int]]) -> bytes:
    """Counts, then values, of each section (the fields', then the super tokens)."""
    values = [v for section in sections for v in section]
    return struct.pack(f"<{1 + len(sections) + len(values)}I", len(sections), *map(len, sections), *values)


def item_super_tokens(sketch: bytes) -> bytes:
    """The super tokens section of an item sketch (little-endian uint32 bytes), found by its header alone."""
    sections = struct.unpack_from("<I", sketch)[0]
    counts = struct.unpack_from(f"<{sections}I", sketch, 4)
    start = 4 * (1 + sections + sum(counts[:-1]))
    return sketch[start:start + 4 * counts[-1]]


def decode_item(sketch: bytes, fields: Sequence[FieldSpec]) -> list[list[int]]:
    """The sections of an item sketch, checked: InvalidArgument says what is wrong."""
    count = len(fields) + 1
    if len(sketch) % 4 or len(sketch) < 4 * (1 + count):
        raise InvalidArgument(f"an item sketch is little-endian uint32 words: {count}, then {count} counts (one per "
                              f"field and the super tokens); got {len(sketch)} bytes")
    words = struct.unpack(f"<{len(sketch) // 4}I", sketch)
    if words[0] != count:
        raise InvalidArgument(f"an item sketch of this store has {count} sections, this one {words[0]}: it was "
                              "made for another schema")
    counts, at, sections = words[1:1 + count], 1 + count, []
    if sum(counts) != len(words) - 1 - count:
        raise InvalidArgument(f"an item sketch's counts add up to {sum(counts)} values, its bytes hold "
                              f"{len(words) - 1 - count}")
    for index, size in enumerate(counts):
        section = list(words[at:at + size])
        at += size
        name = fields[index].name if index < len(fields) else "super tokens"
        if any(a >= b for a, b in zip(section, section[1:])):
            raise InvalidArgument(f"item sketch section {name}: values must be strictly ascending")
        if index < len(fields):
            limit = {TEXT: fields[index].k, EXACT: 1, LOCATION: LOCATION_CELLS}[fields[index].kind]
            if size > limit:
                raise InvalidArgument(f"item sketch field {name} holds {size} values, at most {limit}")
        sections.append(section)
    return sections


def present_fields(values: Mapping, fields: Sequence[FieldSpec]) -> dict:
    """The item's field values, checked against the schema: unknown names and wrong types are InvalidArgument."""
    if not isinstance(values, Mapping):
        raise InvalidArgument(f"fields must be an object of field name to value, got {type(values).__name__}")
    known = {spec.name: spec for spec in fields}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidArgument(f"unknown field {', '.join(map(repr, unknown))}; this store's fields are "
                              f"{', '.join(known)}")
    checked = {}
    for name, value in values.items():
        spec = known[name]
        if value is None:
            continue
        if spec.kind == LOCATION:
            if isinstance(value, str):
                raise InvalidArgument(f"field {name} is a location: give a latitude and longitude, not a string")
            checked[name] = geo_point(value, name)
        elif spec.kind == TEXT and isinstance(value, ExactValue):
            raise InvalidArgument(f"field {name} is a text field: send its value as text, not exact")
        elif isinstance(value, str):
            checked[name] = value
        else:
            raise InvalidArgument(f"field {name} is {spec.kind}: give a string, got {type(value).__name__}")
    return checked


def field_values(spec: FieldSpec, value) -> list[int]:
    """The sorted values of an exact or location field (text fields are sketched by sketch.Sketcher)."""
    if spec.kind == LOCATION:
        return sorted({crc32(cell) for cell in geohash_cells(value, spec.precision)})
    token = normalized(spec, value)
    return [crc32(token)] if token else []


def schema_columns(fields: Iterable[FieldSpec]) -> list[str]:
    """The feature columns of a schema, in the compiled pair features' order."""
    return [column for spec in fields for column in spec.columns]


def weighted_by_hand(fields: Sequence[FieldSpec]) -> bool:
    """Whether a schema sets any field's weight (a store then never learns its fields' weights)."""
    return any(spec.weight != 1.0 for spec in fields)


def with_weights(fields: Sequence[FieldSpec], weights: Mapping[str, float]) -> tuple[FieldSpec, ...]:
    """The fields, each weighing as `weights` says by name (a store's learned weights; others keep theirs)."""
    return tuple(replace(spec, weight=float(weights.get(spec.name, spec.weight))) for spec in fields)
