"""Kinds of real text no split of the development corpus reads, each built as the development family of its kind
is (benchmarks/heldout.py): what a reviewer's texts would be, measured and never tuned on.

  licences   the SPDX License List's texts, as `derived` (families.held_out_licence_texts);
  templates  reference pages of templates no split reads, in three languages, as `template`;
  rewrites   passages of the Bible in two English translations made by hand centuries apart, as `short`.

Each builder takes a seed (the test split's own where None) and returns a families.Corpus of split "held-out".
"""
from __future__ import annotations

import functools
import random

from benchmarks.lib import devcorpus, sources
from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.families import (MAN_ROOT, SAME_PAGE, SHORT_SOURCES, SHORT_WORDS, SPLIT_SEEDS, TEMPLATE_OTHERS,
                                     Corpus, derived_corpus, family_doc, held_out_licence_texts, page_sources,
                                     rewrites_corpus, template_corpus, template_pages)
from benchmarks.lib.rewrites import changed_share
from benchmarks.lib.sources import Source, stable_hash, words

#: The pages of no template beside the held-out templates: the other pages of their languages (no split reads them).
OTHER_PAGES = ("pt/man*/*.gz", "sv/man*/*.gz")
#: Books that retell one another's passages in their own words (the gospels, the histories of the kings): a topic
#: each, so their look-alike passages meet in one result set as distinct texts.
RETOLD = {"Matthew": "gospels", "Mark": "gospels", "Luke": "gospels", "John": "gospels",
          "I Samuel": "kings", "II Samuel": "kings", "I Kings": "kings", "II Kings": "kings",
          "I Chronicles": "kings", "II Chronicles": "kings"}
#: The held-out rewrites' scopes: bands of how much of the wording a rewrite changed.
REWRITE_BANDS = ((0.0, 0.25), (0.25, 0.35), (0.35, 1.0))


def _rng(kind: str, seed: int | None) -> random.Random:
    return random.Random(f"{kind}:{SPLIT_SEEDS['test'] if seed is None else seed}")


def licences(seed: int | None = None, known: bool = False) -> Corpus:
    """The `derived` family built from the held-out licences (families.held_out_licence_texts)."""
    return derived_corpus("held-out", held_out_licence_texts(known), _rng("held-out", seed))


def templates(seed: int | None = None) -> Corpus:
    """The `template` family built from reference pages no split reads (families.json's "held-out" templates:
    OpenSSL's provider pages, dpkg's file-format and command pages in Portuguese and Swedish); the other pages are
    those two languages' pages of no template (OTHER_PAGES)."""
    pages = template_pages("held-out")
    templated = {page.key for _, _, page in pages}
    paths = sorted({p.resolve() for pattern in OTHER_PAGES for p in MAN_ROOT.glob(pattern) if p.is_file()},
                   key=lambda path: (stable_hash(path.name), str(path)))
    others = [page for page in page_sources(paths) if 80 <= words(page.text) <= 6000 and page.key not in templated]
    others = devcorpus.distinct(devcorpus.distinct(others, SAME_PAGE), against=[page for _, _, page in pages])
    return template_corpus("held-out", pages, others[:TEMPLATE_OTHERS], _rng("held-out-template", seed),
                           labels_language=False)


@functools.lru_cache(maxsize=1)
def bible_passages() -> tuple[tuple[Source, Source], ...]:
    """Runs of a chapter's consecutive verses of SHORT_WORDS words in both translations (sources.bible_verses),
    each as (King James, World English) Sources; a book's passages share its topic (RETOLD's where it has one)."""
    kjv, web = sources.bible_verses("kjv"), sources.bible_verses("web")
    passages, run = [], []

    def close() -> None:
        if run:
            texts = [" ".join(verses[key] for key in run) for verses in (kjv, web)]
            if all(SHORT_WORDS[0] <= words(text) <= SHORT_WORDS[1] for text in texts):
                book, chapter, first = run[0]
                key = f"{book} {chapter}:{first}-{run[-1][2]}"
                passages.append(tuple(Source("bible", key, "en", text, RETOLD.get(book, book)) for text in texts))
        run.clear()

    for key in kjv:
        if key not in web or (run and key[:2] != run[-1][:2]):
            close()
        if key in web:
            run.append(key)
            if words(" ".join(kjv[verse] for verse in run)) >= SHORT_WORDS[0]:
                close()
    close()
    return tuple(passages)


def rewrites(seed: int | None = None) -> Corpus:
    """The `short` family built from texts rewritten by hand: SHORT_SOURCES passages, each in one translation and,
    for two in three, the other one too (a rewrite: the same passage reworded by people centuries apart); the
    passages of a book (of books retelling one another: RETOLD) are the negatives on one topic. Scopes: overall
    and by how much of the wording the rewrite changed (changed_share)."""
    rng = _rng("held-out-rewrites", seed)
    docs: list[Doc] = []
    for number, pair in enumerate(rng.sample(bible_passages(), SHORT_SOURCES)):
        original, rewrite = pair if rng.random() < 0.5 else pair[::-1]
        group = f"held-out-r{number:05d}"
        docs.append(family_doc(original.text, original, group, "original"))
        if rng.choice([False, True, True]):
            docs.append(family_doc(rewrite.text, original, group, "rewrite",
                                   rate=changed_share(original.text, rewrite.text)))
    return rewrites_corpus("held-out", docs, REWRITE_BANDS, rng)
