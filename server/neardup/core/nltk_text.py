"""NLTK's sentence splitter (Punkt, untrained, walked by a faster loop that answers as it does) and Snowball
stemmers, as the sketcher uses them: imported at first use and memoized."""
from __future__ import annotations

import functools
import importlib.abc
import re
import sys
import threading

from . import _stem
from .language import SNOWBALL_LANGUAGES

# NLTK (Snowball stemmers, Punkt) takes a while to import; only sketching text needs it, so it is imported at its
# first use (_nltk), not with this module: `neardup --help`, `dedup` and `info` never load it, and `neardup serve`
# loads it before its workers start (load_nltk).


class _WithoutScipy(importlib.abc.MetaPathFinder):
    """Refuses scipy to one thread while it imports NLTK. NLTK's package imports every module it has, and a few of
    them (collocation statistics, sentence alignment, a parser) take scipy where it is installed, as the `cluster`
    extra installs it: most of NLTK's import time, in every process that sketches, for code neardup never calls.
    Each of those imports falls back where scipy is missing (those functions then say so); other threads, and later
    imports, get scipy as ever."""

    def __init__(self):
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        if (name == "scipy" or name.startswith("scipy.")) and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"neardup imports NLTK without {name}", name=name)
        return None


@functools.lru_cache(maxsize=None)
def _nltk():
    """NLTK's classes the sketcher uses, imported on first call: (SnowballStemmer, PunktParameters, _FastPunkt)."""
    finder = _WithoutScipy()
    sys.meta_path.insert(0, finder)
    try:
        from nltk.stem.snowball import SnowballStemmer
        from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    finally:
        sys.meta_path.remove(finder)

    if tuple(SnowballStemmer.languages) != SNOWBALL_LANGUAGES:
        raise ImportError(f"this NLTK stems {SnowballStemmer.languages}, not the languages neardup was made with "
                          f"{SNOWBALL_LANGUAGES}; install the NLTK version pyproject.toml pins")
    fast_punkt = type("_FastPunkt", (_FastPunktMixin, PunktSentenceTokenizer), {"__doc__": _FastPunktMixin.__doc__})
    return SnowballStemmer, PunktParameters, fast_punkt


def load_nltk() -> None:
    """Imports NLTK now rather than at the first text sketched (a server does so before taking calls)."""
    _nltk()

# Punkt runs untrained (no download, no model file): these abbreviations keep "Dr. Smith" in one sentence.
_ABBREVIATIONS = {
    "english": "mr mrs ms dr prof sr jr st inc ltd co corp vs etc e.g i.e u.s u.k no jan feb mar apr jun jul aug "
               "sep sept oct nov dec gov sen rep gen col lt mt ave",
    "dutch": "dhr mevr mr dr drs ir prof bijv enz o.a nr blz m.b.t i.p.v t.a.v z.g.a.n ca",
    "german": "dr prof nr z.b bzw usw ca str hr fr d.h u.a evtl ggf inkl",
    "french": "m mme mlle dr prof etc p.ex cf av bd st ste",
    "spanish": "sr sra srta dr dra prof etc pág ud uds av",
    "russian": "г гг т.е т.д т.п ул им проф др с м",
}


_BLOCK_CHARS = 20_000
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def bounded_pieces(block: str) -> list[str]:
    """Cuts a huge block at sentence ends into pieces of at most ~_BLOCK_CHARS characters. NLTK runs each
    regex under a wall-clock limit (5 s in nltk.redos), which one multi-megabyte paragraph can exceed on a
    busy machine; typical articles are one piece and unchanged."""
    pieces = []
    while len(block) > _BLOCK_CHARS:
        ends = [m.end() for m in _SENTENCE_END.finditer(block, _BLOCK_CHARS // 2, _BLOCK_CHARS)]
        cut = ends[-1] if ends else (block.rfind(" ", 0, _BLOCK_CHARS) + 1 or _BLOCK_CHARS)
        pieces.append(block[:cut])
        block = block[cut:]
    pieces.append(block)
    return pieces


_MEMO_SIZE = 200_000


class _FastPunktMixin:
    """NLTK's Punkt, answering exactly as PunktSentenceTokenizer.tokenize does, several times faster.

    A mixin, so that this module does not import NLTK: _nltk() makes the class _FastPunkt(this,
    PunktSentenceTokenizer) at NLTK's first use.

    Punkt finds candidate ends ('said. The'), asks text_contains_sentbreak whether each breaks a sentence, and
    realigns closing quotes and brackets; tests/core/test_sketch.py holds this class equal to it on generated and
    real text. What changes is only the cost:
    * the walk over candidates (_match_potential_end_contexts, _slices_from_text, _realign_boundaries) is one
      loop over NLTK's own regexes instead of a chain of generators, which cost more than the decisions;
    * a block with no candidate (a headline, a one-sentence paragraph: a final stop has no next token) is one
      sentence;
    * the commonest candidate is decided without tokenizing its context: a word of letters followed by ? or !,
      or by a period when the word is no abbreviation and longer than an initial, is one token that Punkt's
      first pass marks a break and its second pass, with untrained parameters, leaves one;
    * every other decision is NLTK's, memoized by context string (it depends on nothing else).
    """

    def __init__(self, params):
        super().__init__(params)
        # The second pass looks beyond the word only through learned collocations, sentence starters and
        # orthographic contexts; the plain-word rule holds while there are none.
        self._plain_words_break = not (params.collocations or params.sent_starters or params.ortho_context)
        self._decisions: dict[str, bool] = {}
        # The compiled patterns themselves: nltk.redos wraps them in a per-call time limit, which costs more
        # than the match on the bounded pieces sketching passes in (bounded_pieces)
        self._candidates = _unwrapped(self._lang_vars.period_context_re())
        self._closing = _unwrapped(self._lang_vars.re_boundary_realignment)

    def _breaks(self, text: str, match, word_start: int) -> bool:
        """Whether the candidate `match`, after the word from word_start, ends a sentence."""
        word = text[word_start:match.start()]
        if self._plain_words_break and word.isalpha() and (
                match.group() != "." or (len(word) > 1 and word.lower() not in self._params.abbrev_types)):
            return True
        context = word + match.group() + match.group("after_tok")
        try:
            return self._decisions[context]
        except KeyError:
            if len(self._decisions) >= _MEMO_SIZE:
                self._decisions.clear()
            decision = self._decisions[context] = self.text_contains_sentbreak(context)
            return decision

    def tokenize(self, text: str, realign_boundaries: bool = True) -> list[str]:
        if not realign_boundaries:
            return super().tokenize(text, realign_boundaries)
        # candidates, each with where its previous word starts; one whose word overlaps the next one's is dropped
        candidates = []
        previous, previous_start, previous_stop = None, 0, 0
        for match in self._candidates.finditer(text):
            space = _last_whitespace(text, previous_stop, match.start())
            word_start = space + 1 if space > previous_stop else previous_start
            if previous is not None and previous_stop <= word_start:
                candidates.append((previous, previous_start))
            previous, previous_start, previous_stop = match, word_start, match.start()
        if previous is None:
            end = len(text.rstrip())
            return [text[:end]] if end else []
        candidates.append((previous, previous_start))
        # sentence slices
        bounds, last_break = [], 0
        for match, word_start in candidates:
            if self._breaks(text, match, word_start):
                bounds.append((last_break, match.end()))
                last_break = match.start("next_tok") if match.group("next_tok") else match.end()
        bounds.append((last_break, len(text.rstrip())))
        # closing punctuation after a break joins the sentence before it
        sentences, realign = [], 0
        for (start, stop), following in zip(bounds, bounds[1:] + [None]):
            start += realign
            realign = 0
            if following is not None:
                closing = self._closing.match(text, following[0], following[1])
                if closing:
                    sentences.append(text[start:following[0] + len(closing.group(0).rstrip())])
                    realign = closing.end() - following[0]
                    continue
            if stop > start:
                sentences.append(text[start:stop])
        return sentences


def _unwrapped(pattern):
    """The compiled pattern inside an nltk.redos time-limit wrapper (newer NLTK releases), or the pattern itself."""
    return getattr(pattern, "_rx", pattern)


def _last_whitespace(text: str, start: int, stop: int) -> int:
    """The index of the last whitespace character in text[start:stop] (string.whitespace, as Punkt's
    _get_last_whitespace_index has it), -1 when there is none."""
    rfind = text.rfind
    return max(rfind(" ", start, stop), rfind("\n", start, stop), rfind("\t", start, stop),
               rfind("\r", start, stop), rfind("\x0b", start, stop), rfind("\x0c", start, stop))


@functools.lru_cache(maxsize=None)
def sentence_splitter(lang: str):
    """The _FastPunkt (a PunktSentenceTokenizer) of a language."""
    _, punkt_parameters, fast_punkt = _nltk()
    params = punkt_parameters()
    params.abbrev_types = set(_ABBREVIATIONS.get(lang, "").split())
    return fast_punkt(params)


class _StemMemo(dict):
    """word → stem, stemmed on first sight. Word frequencies are Zipfian, so most words are looked up, not
    stemmed, and a dict's own lookup (map(memo.__getitem__, words)) costs half an lru_cache call. It starts
    over once it holds _MEMO_SIZE words, so memory stays bounded."""

    def __init__(self, stem):
        super().__init__()
        self.stem = stem

    def __missing__(self, word: str) -> str:
        if len(self) >= _MEMO_SIZE:
            self.clear()
        stem = self[word] = self.stem(word)
        return stem


#: Compiled stemmers that give NLTK's stems of every word (tests/core/test_sketch_compiled.py holds each equal to
#: NLTK's on the benchmark corpora's words and generated ones). PyStemmer (Snowball's own C) is no such stemmer: its
#: newer algorithms stem ordinary words otherwise in every language but Spanish and Arabic ("added": NLTK "ad",
#: PyStemmer "add"), which would change sketch values.
COMPILED_STEMMERS = {"english": _stem.english, "german": _stem.german}


@functools.lru_cache(maxsize=None)
def stem_memo(lang: str, compiled: bool = True) -> _StemMemo | None:
    """The word → stem memo of a language (the compiled tokenizer reads it, _shingle.stemmed_words), None for
    "none", whose words are kept as they are. Its stemmer is the compiled one where there is one (COMPILED_STEMMERS),
    else NLTK's; compiled=False, NLTK's always (the reference)."""
    if lang == "none":
        return None
    if compiled and lang in COMPILED_STEMMERS:
        return _StemMemo(COMPILED_STEMMERS[lang])
    return _StemMemo(nltk_stemmer(lang))


def nltk_stemmer(lang: str):
    """NLTK's Snowball stemmer of a language (its stem method), unmemoized: the specification of every stem."""
    snowball_stemmer, _, _ = _nltk()
    return snowball_stemmer(lang).stem


def stem_function(lang: str, compiled: bool = True):
    """The memoized stemmer of a language: a function of one word, sharing stem_memo(lang, compiled)."""
    memo = stem_memo(lang, compiled)
    return _unchanged if memo is None else memo.__getitem__


def _unchanged(word: str) -> str:
    return word


def forget_memos() -> None:
    """Drops the memoized stems and sentence decisions, so a benchmark round measures a cold pass over a corpus."""
    sentence_splitter.cache_clear()
    stem_memo.cache_clear()
