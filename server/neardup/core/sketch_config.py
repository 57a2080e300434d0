"""Everything that decides a sketch's values (SketchConfig), saved in a store, and the sketcher versions this code
makes sketches by."""
from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import asdict, dataclass
from typing import Iterable

from . import fields as item_fields, language
from .errors import ConfigMismatch, InvalidArgument
from .fields import FieldSpec
from .language import AUTO, canonical_store_lang
from .vocabulary import (BOTTOMK, DEFAULT_K, DEFAULT_UNIT, ITEMS, KINDS, LOG_TF, MAX_K, SIMHASH, UNIT, UNIT_HELP,
                         UNIT_PATTERN)

#: The version of the sketching rules (tokenization, sentence splitting, stemming, normalization, hashing) whose
#: sketches this code makes. Bump it whenever any sketch value for the same text and configuration could change
#: (tests/core/test_sketch_golden.py fails then): a store records it, and one made by another version is refused.
#: It is the version of bottom-K sketches; SimHash sketches have their own (SIMHASH_WEIGHTING).
SKETCHER_VERSION = 2
#: The sketcher versions of SimHash sketches this code makes, each with how its fingerprints weigh a shingle
#: (reference.shingle_weight): version 2 (the rules of SKETCHER_VERSION 2, every distinct shingle weighing 1) is
#: that of simhash stores made before weights, and is still made for them, so their query texts are sketched as
#: their stored fingerprints were; version 3 weighs a shingle 1 + ln of its count in the text (chosen on the tune
#: split: benchmarks/QUALITY.md) and is what a new simhash store gets. The highest is the current one.
SIMHASH_WEIGHTING = {2: UNIT, 3: LOG_TF}
#: The sketcher versions this code sketches by, per sketch kind; a new configuration gets the last.
SKETCHER_VERSIONS = {BOTTOMK: (SKETCHER_VERSION,), SIMHASH: tuple(sorted(SIMHASH_WEIGHTING)),
                     ITEMS: (SKETCHER_VERSION,)}
_CURRENT_VERSION = object()  # SketchConfig's default sketcher_version: the current one of its kind


def sketcher_versions_text(kind: str) -> str:
    """'version 2', 'versions 2 and 3': the sketcher versions this code makes sketches of the kind by."""
    versions = SKETCHER_VERSIONS[kind]
    if len(versions) == 1:
        return f"version {versions[0]}"
    return "versions " + ", ".join(map(str, versions[:-1])) + f" and {versions[-1]}"


@dataclass(frozen=True)
class SketchConfig:
    """Everything that decides a sketch's values. Saved in the store; sketches compare only under equal configs."""

    #: The shingle unit (vocabulary.UNIT_PATTERN); see DEFAULT_UNIT for why word 3-grams.
    unit: str = DEFAULT_UNIT
    #: The bottom-K sketch's size; a simhash configuration keeps the default, which it does not use.
    k: int = DEFAULT_K
    min_word_len: int = 1
    #: The stemmer language of texts sent without their own, or "auto": each such text's identified language
    #: (core/language.py), by the identifier lang_identifier names.
    lang: str = "english"
    hash: str = "crc32"
    stoplist_digest: str = ""
    #: Which sketching rules made the sketches; they compare only under equal versions (see SKETCHER_VERSION and
    #: SIMHASH_WEIGHTING). Left out, the current version of the kind: 2 for bottomk, 3 for simhash.
    sketcher_version: int = _CURRENT_VERSION  # type: ignore[assignment]
    #: "bottomk" (the K smallest shingle hashes) or "simhash" (one 64-bit fingerprint of them); a configuration
    #: saved before kinds existed is bottomk.
    kind: str = BOTTOMK
    #: An items store's schema (core/fields.py): how each field is sketched and weighed; empty for other kinds.
    fields: tuple[FieldSpec, ...] = ()
    #: An items store's rules: each a tuple of field names an item pair must all match on (super tokens).
    rules: tuple[tuple[str, ...], ...] = ()
    #: An auto store's language identifier and its version (language.identifier_name()): texts stemmed by
    #: another identifier's choices would differ, so a sketcher of another one refuses the store. Left out for
    #: lang "auto", the installed one; "" for any other lang.
    lang_identifier: str = _CURRENT_VERSION  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgument(f"unknown sketch kind {self.kind!r}; use {' or '.join(map(repr, KINDS))}")
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "rules", tuple(tuple(rule) for rule in self.rules))
        if self.kind == ITEMS:
            item_fields.check_schema(self.fields, self.rules)
        elif self.fields or self.rules:
            raise InvalidArgument(f"fields and rules belong to an items store, not to a {self.kind} one")
        if self.sketcher_version is _CURRENT_VERSION:
            object.__setattr__(self, "sketcher_version", SKETCHER_VERSIONS[self.kind][-1])
        if self.kind == SIMHASH and self.k != DEFAULT_K:
            raise InvalidArgument(f"k sets the size of a bottom-K sketch; a simhash sketch is one 64-bit "
                                  f"fingerprint: leave k at its default ({DEFAULT_K})")
        if not UNIT_PATTERN.match(self.unit):
            raise InvalidArgument(f"unknown shingle unit {self.unit!r}; use {UNIT_HELP}")
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise InvalidArgument(f"k must be an integer in 1..{MAX_K}, got {self.k!r}")
        if not isinstance(self.min_word_len, int) or not 0 <= self.min_word_len <= 50:
            raise InvalidArgument(f"min_word_len must be an integer in 0..50, got {self.min_word_len!r}")
        if self.hash != "crc32":
            raise InvalidArgument(f"unknown shingle hash {self.hash!r}; only 'crc32' is supported")
        if not isinstance(self.sketcher_version, int) or self.sketcher_version < 1:
            raise InvalidArgument(f"sketcher_version must be an integer >= 1, got {self.sketcher_version!r}")
        object.__setattr__(self, "lang", canonical_store_lang(self.lang))
        if self.lang_identifier is _CURRENT_VERSION:
            object.__setattr__(self, "lang_identifier", language.lang_identifier(self.lang))
        if (self.lang == AUTO) != bool(self.lang_identifier):
            raise InvalidArgument(f"lang_identifier names the language identifier of a store of lang 'auto' and only "
                                  f"of one; got lang {self.lang!r} with lang_identifier {self.lang_identifier!r}")

    @property
    def weighting(self) -> str | None:
        """How a simhash sketch of this configuration weighs a shingle by its count (vocabulary.WEIGHTINGS): the
        rule of its sketcher version (SIMHASH_WEIGHTING); None for bottomk, which keeps distinct values, and for
        a version this code does not sketch by."""
        return SIMHASH_WEIGHTING.get(self.sketcher_version) if self.kind == SIMHASH else None

    def describe(self, fields: Iterable[FieldSpec] | None = None) -> str:
        """The store's configuration in the terms of its kind, one line: what `neardup index` prints, Info's
        description (`neardup info`) and the page's header show. A store of texts: its shingle unit, sketch size,
        language and shortest word kept ("bottomk: unit=word:3 k=128 lang=english min_word_len=1"); an items store:
        its fields (each with its unit, weight...: FieldSpec.describe) and the rules a pair must match on. `fields`:
        an items store's fields as weighed when served (its learned weights: fields.with_weights), if not as the
        schema weighs them."""
        if self.kind == ITEMS:
            fields = self.fields if fields is None else tuple(fields)
            rules = " | ".join("+".join(rule) for rule in self.rules) or "one per field"
            return (f"items: {len(fields)} field{'' if len(fields) == 1 else 's'} ("
                    + "; ".join(spec.describe() for spec in fields) + f"); rules: {rules}")
        size = "sketch=simhash" if self.kind == SIMHASH else f"k={self.k}"
        return f"{self.kind}: unit={self.unit} {size} lang={self.lang} min_word_len={self.min_word_len}"

    @property
    def word_ngram(self) -> int | None:
        """N for the `word:N` unit, None for the sentence units."""
        match = UNIT_PATTERN.match(self.unit)
        return int(match.group(2)) if match.group(2) else None

    def to_dict(self) -> dict:
        """Its values; fields and rules only for an items store, so other stores save what they always did."""
        values = asdict(self)
        if self.kind != ITEMS:
            del values["fields"], values["rules"]
        if not self.lang_identifier:
            del values["lang_identifier"]  # as stores made before auto saved it (and their models' digests)
        for spec in values.get("fields", ()):
            if not spec["synonyms"]:
                del spec["synonyms"]  # as stores made before synonyms saved it (and their models' digests)
        return values

    def digest(self) -> str:
        """A short name of the whole configuration (a trained model is tied to it)."""
        return hashlib.blake2b(json.dumps(self.to_dict(), sort_keys=True).encode(), digest_size=8).hexdigest()

    @classmethod
    def from_dict(cls, values: dict) -> "SketchConfig":
        """The configuration saved as to_dict() had it. One saved before sketcher versions existed (no
        sketcher_version key) was made by version 1's rules, never by the current version's; one saved before
        sketch kinds existed (no kind key) is bottomk. A simhash one of version 2 weighs every shingle 1."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown sketch configuration fields: {', '.join(sorted(unknown))}")
        values = dict(values)
        if "fields" in values:
            values["fields"] = tuple(FieldSpec.from_dict(spec) for spec in values["fields"])
        if "rules" in values:
            values["rules"] = tuple(tuple(rule) for rule in values["rules"])
        return cls(**{"sketcher_version": 1, **values})

    def require_equal(self, other: "SketchConfig", what: str = "sketch") -> None:
        """Refuses to mix sketches made under different configurations."""
        if other != self:
            diff = ", ".join(f"{name}={getattr(other, name)!r} (store: {getattr(self, name)!r})"
                             for name in self.__dataclass_fields__ if getattr(other, name) != getattr(self, name))
            if other.sketcher_version != self.sketcher_version:
                diff += (f"; the sketches were made by another sketcher version and must be re-made by "
                         f"version {self.sketcher_version}")
            raise ConfigMismatch(f"{what} configuration differs from the store's: {diff}")


def stoplist_digest(stoplist: Iterable[int]) -> str:
    """A short, order-independent name for a stop-list, kept in the configuration."""
    values = sorted(set(stoplist))
    if not values:
        return ""
    return hashlib.blake2b(struct.pack(f"<{len(values)}I", *values), digest_size=8).hexdigest()
