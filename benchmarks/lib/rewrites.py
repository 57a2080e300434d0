"""Hand-like rewrites of short texts (the `short` family): synonyms (benchmarks/data/synonyms.txt), clauses and
sentences reordered, words dropped or added, until a share of the words in REWRITE_RATES has changed."""
from __future__ import annotations

import difflib
import random
import re
from pathlib import Path

from benchmarks.lib.edits import FILLERS, TOKEN, WORD_CORE, split_sentences
from benchmarks.lib.paths import DATA

#: The share of an original's words a rewrite changes (changed_share), drawn per rewrite.
REWRITE_RATES = (0.20, 0.50)
SYNONYMS_FILE = DATA / "synonyms.txt"


def synonym_table(path: Path = SYNONYMS_FILE) -> dict[str, list[str]]:
    """word → the other words of its sets (data/synonyms.txt); only one-word entries are looked up."""
    table: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            entries = [w.strip() for w in line.split(",") if w.strip()]
            for entry in entries:
                if " " not in entry:
                    table.setdefault(entry, []).extend(e for e in entries if e != entry)
    return table


def changed_share(original: str, rewrite: str) -> float:
    """The share of the original's words a rewrite does not keep in order (difflib's longest matching blocks
    over lowercased words): what 'x % of the words changed' means here."""
    a = [w.lower() for w in WORD_CORE.findall(original)]
    b = [w.lower() for w in WORD_CORE.findall(rewrite)]
    kept = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return 1 - kept / max(1, len(a))


def _reordered(text: str, rng: random.Random) -> str:
    """Two sentences swapped, and a sentence's clauses around its first comma swapped."""
    sentences = split_sentences(text)
    if len(sentences) >= 3:
        i = rng.randrange(len(sentences) - 1)
        sentences[i], sentences[i + 1] = sentences[i + 1], sentences[i]
    with_comma = [i for i, s in enumerate(sentences) if ", " in s[:-1]]
    if with_comma:
        i = rng.choice(with_comma)
        head, tail = sentences[i].rstrip(".!?").split(", ", 1)
        sentences[i] = tail[:1].upper() + tail[1:] + ", " + head[:1].lower() + head[1:] + "."
    return " ".join(sentences)


def rewritten(text: str, synonyms: dict[str, list[str]], rng: random.Random) -> tuple[str, float]:
    """A hand-like rewrite whose changed_share lies in REWRITE_RATES (drawn again on the rare overshoot)."""
    while True:
        rewrite, share = _rewrite(text, synonyms, rng.uniform(*REWRITE_RATES), rng)
        if REWRITE_RATES[0] <= share <= REWRITE_RATES[1]:
            return rewrite, share


def _rewrite(text: str, synonyms: dict[str, list[str]], target: float, rng: random.Random) -> tuple[str, float]:
    """Sometimes clauses reordered, then words replaced by synonyms (else dropped, or a small word added) at
    random places until changed_share reaches target."""
    base = _reordered(text, rng) if rng.random() < 0.5 else text
    if changed_share(text, base) > target:
        base = text
    tokens = TOKEN.findall(base)
    positions = [i for i, t in enumerate(tokens) if WORD_CORE.search(t)]
    rng.shuffle(positions)
    with_synonym = [i for i in positions if WORD_CORE.search(tokens[i]).group().lower() in synonyms]
    synonym_positions = set(with_synonym)
    order = with_synonym + [i for i in positions if i not in synonym_positions]
    share, start = changed_share(text, base), 0
    while share < target and start < len(order):
        # half the words still missing at a time, so the share ends just past the target
        step = max(1, round((target - share) * len(positions) / 2))
        batch, start = order[start:start + step], start + step
        for i in batch:
            match = WORD_CORE.search(tokens[i])
            core = match.group()
            choices = synonyms.get(core.lower())
            if choices:
                new = rng.choice(choices)
                new = new[:1].upper() + new[1:] if core[:1].isupper() else new
            elif rng.random() < 0.5:
                new = ""
            else:
                new = rng.choice(FILLERS["en"]) + " " + core
            tokens[i] = tokens[i][:match.start()] + new + tokens[i][match.end():]
        share = changed_share(text, re.sub(r"[^\S\n]{2,}", " ", "".join(tokens)))
    return re.sub(r"[^\S\n]{2,}", " ", "".join(tokens)).strip(), share
