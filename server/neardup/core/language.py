"""The languages neardup stems, and which of them a text is written in (a store of language "auto", py3langid).

A text without a Snowball stemmer for its language, or of fewer than MIN_LETTERS letters, is stemmed "none"; the
identifier is part of a store's configuration (SketchConfig.lang_identifier), so a sketcher of another one refuses
the store. A query text without its lang is stemmed by query_language.
The rules: docs/commands/neardup-index.md ("Language").
"""
from __future__ import annotations

import functools
import re
from importlib import metadata
from typing import Collection, NamedTuple

from .errors import InvalidArgument

LANG_ALIASES = {
    "en": "english", "nl": "dutch", "ru": "russian", "de": "german", "fr": "french", "es": "spanish",
    "it": "italian", "pt": "portuguese", "sv": "swedish", "da": "danish", "no": "norwegian",
    "fi": "finnish", "hu": "hungarian", "ro": "romanian", "ar": "arabic",
}
#: NLTK's SnowballStemmer.languages in the pinned 3.10 series; nltk_text._nltk() refuses an NLTK that has others.
SNOWBALL_LANGUAGES = ("arabic", "danish", "dutch", "english", "finnish", "french", "german", "hungarian",
                      "italian", "norwegian", "porter", "portuguese", "romanian", "russian", "spanish", "swedish")
#: "none" keeps words unstemmed.
NONE = "none"
LANGUAGES = frozenset(SNOWBALL_LANGUAGES) - {"porter"} | {NONE}
#: A store language: each text stemmed in the language identified from it.
AUTO = "auto"

#: The identifier's codes for the languages above besides LANG_ALIASES: both written forms of Norwegian.
_IDENTIFIED_ALIASES = {"nb": "norwegian", "nn": "norwegian"}
#: Fewer letters than this (about four words) and a text is stemmed "none" without being identified.
MIN_LETTERS = 20
#: How much of a text is read to identify it: the start of a long text tells its language as well as all of it,
#: and identifying costs in proportion to what is read.
IDENTIFIED_CHARS = 4000
#: The rules above (which text is identified, how a code maps to a stemmer); bump when any of them changes.
RULES_VERSION = 1
#: Matches at a text's start when it has at least MIN_LETTERS letters.
_ENOUGH_LETTERS = re.compile(rf"(?:[\W\d_]*[^\W\d_]){{{MIN_LETTERS}}}")


def canonical_lang(lang: str) -> str:
    """Maps 'en', 'EN', 'english' to 'english'; refuses languages without a stemmer, and "auto", which names no
    language of one text but a store's rule (canonical_store_lang)."""
    name = LANG_ALIASES.get(lang.strip().lower(), lang.strip().lower())
    if name == AUTO:
        raise InvalidArgument("lang 'auto' is a store's language (neardup index --lang auto): a document's lang "
                              "names its own language, or is left out to be identified in an auto store")
    if name not in LANGUAGES:
        raise InvalidArgument(f"unknown language {lang!r}; use one of {', '.join(sorted(LANGUAGES))} "
                              f"or a code such as {', '.join(sorted(LANG_ALIASES))}")
    return name


def canonical_store_lang(lang: str) -> str:
    """A store's language: one canonical_lang accepts, or "auto"."""
    return AUTO if lang.strip().lower() == AUTO else canonical_lang(lang)


def lang_identifier(store_lang: str) -> str:
    """What a store of this (canonical) language records as its identifier: identifier_name() for "auto", ""
    for a fixed language, whose sketches no identifier decides."""
    return identifier_name() if store_lang == AUTO else ""


def stemmer_language(code: str) -> str:
    """The stemmer language of an identified ISO 639-1 code: its Snowball stemmer, or "none" without one."""
    code = code.lower()
    return LANG_ALIASES.get(code) or _IDENTIFIED_ALIASES.get(code) or NONE


@functools.lru_cache(maxsize=None)
def identifier_name() -> str:
    """What identifies texts, with its version and these rules' (an auto store records it): 'py3langid 0.4.0/1'."""
    return f"py3langid {metadata.version('py3langid')}/{RULES_VERSION}"


@functools.lru_cache(maxsize=None)
def _classify():
    """py3langid's classify, its model loaded: once per process, at the first call."""
    import py3langid

    py3langid.classify("")  # the model loads at the first classification
    return py3langid.classify


def load_identifier() -> None:
    """Loads the identifier's model now (a sketcher of an auto store does so when made) rather than in the first
    request that sketches a text."""
    _classify()


def identify(text: str) -> str:
    """The stemmer language of a text (a LANGUAGES name): that of its identified language, or "none" for a
    language without a stemmer or a text of fewer than MIN_LETTERS letters. The same text gets the same answer in
    every process: the identifier is a fixed model and no sampling."""
    head = text[:IDENTIFIED_CHARS]
    if not _ENOUGH_LETTERS.match(head):
        return NONE
    return stemmer_language(_classify()(head)[0])


#: How a query text's stemmer language was chosen (FindSimilarResponse.lang_source): the document's own lang,
#: identified from the text, or the store's language.
GIVEN, IDENTIFIED, STORE = "given", "identified", "store"


class QueryLanguage(NamedTuple):
    lang: str    # a LANGUAGES name
    source: str  # GIVEN, IDENTIFIED or STORE


def query_language(text: str, lang: str | None, store_lang: str, held: Collection[str]) -> QueryLanguage:
    """The stemmer language a query text is sketched in, and how it was chosen: its own `lang` when given; in an
    auto store the identified one; in a store of one language whose texts carried others (`held`, the store's
    languages), the identified one when the store holds texts of it, else the store's; else the store's. A store
    of one language alone never identifies: its texts and queries are stemmed alike, however short."""
    if lang:
        return QueryLanguage(canonical_lang(lang), GIVEN)
    if store_lang == AUTO:
        return QueryLanguage(identify(text), IDENTIFIED)
    if set(held) - {store_lang}:
        found = identify(text)
        if found in held or found == store_lang:
            return QueryLanguage(found, IDENTIFIED)
    return QueryLanguage(store_lang, STORE)
