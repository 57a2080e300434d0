"""The compiled sketching path equals its pure-Python reference, bit for bit.

Sketches are compared with the stored ones, so a faster path must make exactly the sketches of the code before
it (tests/core/test_sketch_golden.py fixes some of them). Here the compiled parts are held equal to their
specifications on arbitrary text: the tokenizer (_shingle.stemmed_words) to the regex and str.lower of
sketcher.reference_words on every code point, the compiled stemmers (_stem.english, _stem.german) to NLTK's, and the
whole Sketcher to Sketcher(reference=True), which tokenizes with the regex, stems with NLTK's own stemmers, joins
shingles in Python and cuts a set of Python ints, for every unit, kind and language.
"""
from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup.core import _shingle, _stem, nltk_text
from neardup.core.encoding import decode_sketch
from neardup.core.language import LANGUAGES
from neardup.core.sketch_config import SketchConfig, stoplist_digest
from neardup.core.sketcher import Sketcher, reference_words

UNITS = ["word:1", "word:3", "word:5", "sentence", "para-sentence"]
LANGS = sorted(LANGUAGES)

# Letters where lowercasing, \w and UTF-8 are not what ASCII suggests: İ (lowercases to two code points), final
# sigma, ß and ẞ, Turkish dotless ı, digits and numerals of other scripts (alphanumeric: inside words), combining
# marks (not: they split a word), the apostrophes NLTK's English stemmer maps, underscores, letters outside the BMP.
TRICKY = "İıIiΣσςßẞ²٣Ⅻ①\u0301\u200d’‘‛'_-𝔘𐐀𐐨Ǆǅǆﬁ"
texts = st.text(st.characters(codec="utf-8") | st.sampled_from(TRICKY) | st.sampled_from(" .!?\n\n"), max_size=300)
ENGLISH_SUFFIXES = ["'s'", "'s", "'", "sses", "ied", "ies", "us", "ss", "s", "eedly", "ingly", "edly", "eed", "ing",
                    "ed", "at", "bl", "iz", "bb", "tt", "ization", "ational", "fulness", "ousness", "iveness", "tional",
                    "biliti", "lessli", "entli", "ation", "alism", "aliti", "ousli", "iviti", "fulli", "enci", "anci",
                    "abli", "izer", "ator", "alli", "bli", "ogi", "logi", "li", "alize", "icate", "iciti", "ative",
                    "ical", "ness", "ful", "ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism",
                    "ate", "iti", "ous", "ive", "ize", "ion", "sion", "tion", "al", "er", "ic", "e", "l", "ll", "y",
                    "Y"]


def compiled_words(text: str, min_len: int, memo) -> bytes:
    return _shingle.stemmed_words(text.lower(), min_len, memo)


def reference_bytes(text: str, min_len: int, stem) -> bytes:
    return " ".join(reference_words(text, min_len, stem)).encode("utf-8")


def nltk_or_error(stem, word: str):
    """A stem, or the type of the exception stemming raised (both implementations must raise alike)."""
    try:
        return stem(word)
    except Exception as error:  # noqa: BLE001 - the exception's type is the result compared
        return type(error)


# --- the tokenizer ----------------------------------------------------------------------------------------------

@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("separator", ["", " "])
def test_the_tokenizer_classes_every_code_point_as_the_regex_does(separator):
    """All of Unicode, each code point alone between spaces, and all of it run together."""
    text = separator.join(map(chr, range(0x110000)))
    assert compiled_words(text, 1, None) == reference_bytes(text, 1, str)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=400, deadline=None)
@given(text=texts, min_len=st.integers(0, 6))
@example(text="İstanbul ΟΔΟΣ x² ①② e\u0301t\u00e9 snake_case don’t", min_len=1)
def test_the_tokenizer_keeps_the_words_of_the_reference(text, min_len):
    assert compiled_words(text, min_len, None) == reference_bytes(text, min_len, str)


@settings(max_examples=150, deadline=None)
@given(text=texts, min_len=st.integers(0, 4), lang=st.sampled_from(LANGS))
def test_the_tokenizer_stems_through_the_memo_as_the_reference(text, min_len, lang):
    memo = nltk_text.stem_memo(lang)
    assert compiled_words(text, min_len, memo) == reference_bytes(text, min_len, nltk_text.stem_function(lang, False))


def test_a_memo_miss_is_stemmed_and_stored_and_a_full_memo_starts_over(monkeypatch):
    monkeypatch.setattr(nltk_text, "_MEMO_SIZE", 3)
    memo = nltk_text._StemMemo(str.upper)
    assert compiled_words("one two one three", 1, memo) == b"ONE TWO ONE THREE"
    assert memo == {"one": "ONE", "two": "TWO", "three": "THREE"}
    assert compiled_words("four", 1, memo) == b"FOUR"
    assert memo == {"four": "FOUR"}


def test_a_stem_that_is_no_str_is_refused():
    with pytest.raises(TypeError, match="a stem must be a str"):
        compiled_words("word", 1, {"word": b"word"})
    with pytest.raises(TypeError, match="memo must be a dict or None"):
        compiled_words("word", 1, ["word"])


# --- the compiled stemmers -------------------------------------------------------------------------------------

GERMAN_SUFFIXES = ["ern", "em", "er", "en", "es", "e", "s", "est", "st", "isch", "lich", "heit", "keit", "end", "ung",
                   "ig", "ik", "niss", "nisse", "ige", "erlich", "enheit", "lichkeit", "igkeit", "eig", "eend", "ß"]
#: language → (its compiled stemmer, the suffixes its steps look for, an alphabet of its vowels and consonants)
COMPILED = {
    "english": (_stem.english, ENGLISH_SUFFIXES, "aeiouybcdlmnprstwxgkzY'’"),
    "german": (_stem.german, GERMAN_SUFFIXES, "aeiouyäöüßbdfghklmnrtsczUY"),
}


def test_the_compiled_stemmers_are_in_use_and_the_references_are_nltks():
    assert set(nltk_text.COMPILED_STEMMERS) == set(COMPILED)
    for lang, (stem, _, _) in COMPILED.items():
        assert nltk_text.stem_memo(lang).stem is stem
        reference = nltk_text.stem_memo(lang, compiled=False).stem
        assert reference is not stem and type(reference.__self__).__module__ == "nltk.stem.snowball"


@pytest.mark.slow  # some 30,000 words through both stemmers: seconds
@pytest.mark.parametrize("lang", COMPILED)
def test_stems_equal_nltks_on_every_suffix_after_every_short_stem(lang):
    """Every stem of up to two letters of a small alphabet (vowels, consonants the steps name, an apostrophe) and
    prefixes with their own R1, before every suffix the steps look for and pairs of them."""
    stem, suffixes, _ = COMPILED[lang]
    nltk_stem = nltk_text.nltk_stemmer(lang)
    alphabet = "aeiyYbglst'" if lang == "english" else "aeiuyäbgklnst"
    stems = ["", "gener", "commun", "arsen", "'y", "ss"] + ["".join(letters) for size in (1, 2)
                                                            for letters in itertools.product(alphabet, repeat=size)]
    endings = [""] + suffixes + [a + b for a in suffixes[::4] for b in suffixes]
    differ = []
    for word in (prefix + ending for prefix in stems for ending in endings):
        expected, stemmed = nltk_or_error(nltk_stem, word), nltk_or_error(stem, word)
        if stemmed != expected:
            differ.append((word, expected, stemmed))
    assert differ == []


@pytest.mark.slow  # 600 examples a language: seconds
@pytest.mark.parametrize("lang", COMPILED)
@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_stems_equal_nltks_on_generated_words(lang, data):
    stem, suffixes, alphabet = COMPILED[lang]
    word = data.draw(st.text(st.sampled_from(alphabet) | st.sampled_from(TRICKY), max_size=10))
    word += "".join(data.draw(st.lists(st.sampled_from(suffixes), max_size=3)))
    assert nltk_or_error(stem, word) == nltk_or_error(nltk_text.nltk_stemmer(lang), word)


@pytest.mark.parametrize("lang", COMPILED)
@settings(max_examples=300, deadline=None)
@given(word=st.text(max_size=20))
@example(word="İLING")
@example(word="Sky")
@example(word="STRASSE")
@example(word="ẞ")
def test_stems_equal_nltks_on_arbitrary_text(lang, word):
    stem, _, _ = COMPILED[lang]
    assert nltk_or_error(stem, word) == nltk_or_error(nltk_text.nltk_stemmer(lang), word)


@pytest.mark.parametrize("lang", COMPILED)
def test_stems_of_the_golden_texts_words(lang):
    from test_sketch_golden import TEXTS  # noqa: PLC0415 - the golden texts, as another source of real words

    stem, _, _ = COMPILED[lang]
    for text in TEXTS.values():
        for word in re.findall(r"[^\W_]+", text.lower()):
            assert stem(word) == nltk_text.nltk_stemmer(lang)(word)


@pytest.mark.slow
@pytest.mark.unsanitized  # building the corpus imports every standard module, and crypt crashes under ASan (libcrypt)
def test_stems_equal_nltks_on_every_word_of_the_development_corpus():
    """Both splits of benchmarks' development corpus (news, encyclopedia, manual pages in nine languages...), every
    word through every compiled stemmer."""
    from benchmarks.lib import devcorpus  # noqa: PLC0415

    words = {word for split in devcorpus.SPLITS for doc in devcorpus.generate(split, devcorpus.DEFAULT_SIZE)
             for word in re.findall(r"[^\W_]+", doc.text.lower())}
    assert len(words) > 50_000
    for lang, (stem, _, _) in COMPILED.items():
        nltk_stem = nltk_text.nltk_stemmer(lang)
        assert [word for word in words if stem(word) != nltk_stem(word)] == [], lang


@pytest.mark.slow
@pytest.mark.parametrize("lang", COMPILED)
def test_stems_equal_nltks_on_many_seeded_random_words(lang):
    """A few hundred thousand words: a prefix of up to six letters (vowels and consonants mixed, so that R1 and R2
    start everywhere), up to three suffixes, now and then a letter outside ASCII."""
    stem, suffixes, alphabet = COMPILED[lang]
    nltk_stem = nltk_text.nltk_stemmer(lang)
    rng = random.Random(2)
    differ = []
    for _ in range(300_000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        word += "".join(rng.choice(suffixes) for _ in range(rng.randint(0, 3)))
        if rng.random() < 0.05:
            word += chr(rng.randint(0x80, 0x2FFFF))
        if nltk_or_error(stem, word) != nltk_or_error(nltk_stem, word):
            differ.append(word)
    assert differ == []


@pytest.mark.parametrize("stem", [_stem.english, _stem.german])
def test_a_compiled_stemmer_refuses_what_is_no_str(stem):
    with pytest.raises(TypeError):
        stem(b"word")


# --- the whole sketcher -----------------------------------------------------------------------------------------

def sketcher_pair(**config) -> tuple[Sketcher, Sketcher]:
    return Sketcher(SketchConfig(**config)), Sketcher(SketchConfig(**config), reference=True)


@pytest.mark.parametrize("unit", UNITS)
@settings(max_examples=60, deadline=None)
@given(text=texts, lang=st.sampled_from(LANGS), min_word_len=st.integers(1, 4))
def test_sketches_hashes_and_shingles_equal_the_references(unit, text, lang, min_word_len):
    compiled, reference = sketcher_pair(unit=unit, k=8, min_word_len=min_word_len)
    assert compiled.sketch(text, lang) == reference.sketch(text, lang)
    assert compiled.hashes(text, lang) == reference.hashes(text, lang)
    assert compiled.hash_counts(text, lang) == reference.hash_counts(text, lang)
    assert compiled.shingles(text, lang) == reference.shingles(text, lang)
    assert compiled.located_shingles(text, lang) == reference.located_shingles(text, lang)


@pytest.mark.parametrize("unit", ["word:2", "word:3", "sentence"])
@settings(max_examples=80, deadline=None)
@given(text=texts, lang=st.sampled_from(["english", "german", "none"]), data=st.data())
def test_sketches_without_the_stoplist_equal_the_references(unit, text, lang, data):
    """The compiled bottom-K cut (ngram_bottom_k) drops stop-listed values before the cut, as sketch_hashes does."""
    hashes = sorted(Sketcher(SketchConfig(unit=unit)).hashes(text, lang))
    stoplist = frozenset(data.draw(st.sets(st.sampled_from(hashes))) if hashes else ())
    k = data.draw(st.integers(1, 12))
    config = dict(unit=unit, k=k, stoplist_digest=stoplist_digest(stoplist))
    compiled, reference = Sketcher(SketchConfig(**config), stoplist), Sketcher(SketchConfig(**config), stoplist, True)
    sketch = compiled.sketch(text, lang)
    assert sketch == reference.sketch(text, lang)
    assert set(decode_sketch(sketch)) == set(sorted(set(hashes) - stoplist)[:k])


@pytest.mark.parametrize("unit", ["word:3", "sentence"])
@settings(max_examples=40, deadline=None)
@given(text=texts, lang=st.sampled_from(LANGS))
def test_simhash_sketches_equal_the_references(unit, text, lang):
    compiled, reference = sketcher_pair(unit=unit, kind="simhash")
    assert compiled.sketch(text, lang) == reference.sketch(text, lang)


def test_the_reference_sketches_the_golden_texts_as_the_compiled_path():
    from test_sketch_golden import K, SKETCHES, TEXTS  # noqa: PLC0415

    for lang, unit, min_word_len in SKETCHES:
        reference = Sketcher(SketchConfig(unit=unit, k=K, min_word_len=min_word_len, lang=lang), reference=True)
        assert decode_sketch(reference.sketch(TEXTS[lang])) == SKETCHES[lang, unit, min_word_len]
