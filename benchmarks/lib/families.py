"""Development-corpus families for issues 25 and 38: the kinds of text one stop-list rule and one threshold get wrong.

Six families, each a corpus of its own (one store each) with a `tune` and a `test` split built from different
real texts (devcorpus.in_split: a stable hash of the source key or topic; licences by a stable hash of their
family; templates and licence lineages as families.json assigns them) and with different seeds:

  popular       stories republished POPULAR_COPIES times (50 to 500) among 1,000-2,000 other articles; each copy
                gets another site's header and footer or a headline, a shortened ending, 1-5 % of its words
                edited, and a fifth lose their punctuation. Other stories have 1-5 copies (ordinary duplication).
  shared        distinct documents that share long clauses or sections: licences with the same disclaimer
                appended (variants of one licence, another holder or year, a clause added, light edits, ARE
                duplicates; different licences are not), the manual pages of one package (the same REPORTING
                BUGS / COPYRIGHT / SEE ALSO sections: distinct pages are not duplicates; copies are re-rendered at
                another width and lightly edited), and the pages of sites with a long header, navigation and
                footer (distinct articles are not duplicates; the same article again is).
  short         texts of 100-300 words with 1-4 hand-like rewrites each (rewrites.py): synonyms, clauses and
                sentences reordered, words dropped, 20-50 % of the words changed; sections of one Wikipedia article
                are the negatives on the same topic.
  multilingual  manual pages in de, fr, nl, ru (and pl, it, es, uk in the test split) and English news and
                encyclopedia texts (Bulgarian Wikipedia in the test split) with devcorpus's edited copies; the
                records written for the store carry no `lang` (Corpus.records).
  template      manual pages made from one template (the character sets' pages, each the same description and its
                own table; PostgreSQL's ALTER, DROP and transaction commands; OpenSSL's algorithm pages), which
                share 20-95 % of their text and are NOT duplicates of each other; copies of some (re-rendered at
                another width, cut, lightly edited, a new headline) ARE; other pages of section 7 mixed in.
  derived       licence texts derived from one another: versions (GPL-1/2/3, LGPL-2/2.1/3, GFDL-1.2/1.3, MPL-1.1/2.0)
                and the notices of Debian's copyright files that amend one (BSD with a clause added or dropped, MIT
                and X11, GPL with an exception); versions and variants are NOT duplicates (they differ by a clause,
                CLAUSE_WORDS), a project's copy (its copyright line, re-wrapped, lightly edited) IS. Licences of no
                lineage are mixed in.

Documents are devcorpus.Doc: `group` names the near-duplicates, `family` what a document is within its family
(original, copy, rewrite), `site` what it shares with documents that are not its duplicates (a site, a package,
a licence disclaimer, a template, a licence lineage), `topic` a subject it shares. Each corpus comes with its
labelled result sets of ~100 ids in rank order, per scope (see Corpus.result_sets; family_sets.py draws them).
The sites' towns, menus and headlines, the licences' disclaimer, clauses and holders, the templates' pages and
the licence lineages are in benchmarks/data/families.json.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import random
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Sequence

from benchmarks.lib import devcorpus, edits, sources
from benchmarks.lib.data import load_json
from benchmarks.lib.devcorpus import Doc, length_bucket
from benchmarks.lib.edits import Site
from benchmarks.lib.family_sets import RESULT_SET_SIZE, draw_set, filled, length_scopes, shuffle_numbered
from benchmarks.lib.rewrites import rewritten, synonym_table
from benchmarks.lib.sources import Source, SourceMissing, stable_hash, words

FAMILIES = ("popular", "shared", "short", "multilingual", "template", "derived")
#: Other seeds than devcorpus.SPLIT_SEEDS, so no edit here repeats one drawn there.
SPLIT_SEEDS = {"tune": 2501, "test": 2599}
#: How often each popular story of a split is republished (one story per count).
POPULAR_COPIES = (50, 120, 300, 500)
#: The other articles a popular corpus holds, at most (all the split has when fewer).
POPULAR_OTHERS = 1200
POPULAR_EDIT_RATES = (0.01, 0.02, 0.03, 0.05)
SHORT_WORDS = (100, 300)
SHORT_SOURCES = 600
#: Pages of one package sharing more than this of their word 5-grams with another are left out (a page that is
#: all boilerplate, as `true` and `false` are, is neither a duplicate of the other nor distinct from it).
SHARED_PAGE_CONTAINMENT = 0.5
#: Packages whose English manual pages share their closing sections.
PACKAGES = ("coreutils", "util-linux", "e2fsprogs", "procps", "man-db", "dpkg", "apt")
#: Licences whose texts share passages go to one split together.
LICENSE_FAMILIES = {"GPL-2": "gpl2", "LGPL-2.1": "gpl2", "GPL-3": "gpl3", "LGPL-3": "gpl3", "MPL-1.1": "mpl",
                    "MPL-2.0": "mpl"}
#: A page of a template sharing no more than this of its word 5-grams with every other page of it is left out
#: (its template is too thin to make it a hard negative).
TEMPLATE_SHARE = 0.2
#: Pages sharing more than this are one page under two names (an include, an alias): the later one is left out.
SAME_PAGE = 0.95
#: Pages of section 7 of no template mixed into a template corpus, at most.
TEMPLATE_OTHERS = 150
#: Two licence texts are versions of one another only when one adds, drops or replaces a run of this many words (a
#: clause); texts that differ by less (a holder's name, "or any later version") are one text.
CLAUSE_WORDS = 12
MULTILINGUAL_MAN = {lang: sources.MAN_LANGUAGES[lang] for lang in ("de", "fr", "nl", "ru", "pl", "it", "es", "uk")}

_DATA = load_json("families.json")
#: What every page of a long-navigation site carries: a menu of these, and a few of the headlines.
_NAVIGATION: list[str] = _DATA["navigation"]
_HEADLINES: list[str] = _DATA["headlines"]
#: split (and "held-out": pages no split reads) → template → the Debian package and the pages (globs under
#: /usr/share/man) made from it.
_TEMPLATES: dict[str, dict[str, dict]] = _DATA["templates"]
#: split → lineage → the licence texts derived from one another: common-licenses files and copyright-file names.
_LINEAGES: dict[str, dict[str, dict[str, list[str]]]] = _DATA["lineages"]
MAN_ROOT = Path("/usr/share/man")


@dataclasses.dataclass
class Corpus:
    """One family's documents of one split, and its result sets (document indexes in rank order) per scope."""

    family: str
    split: str
    docs: list[Doc]
    result_sets: dict[str, list[list[int]]] = dataclasses.field(default_factory=dict)
    #: Whether the records written for the store carry each document's language.
    labels_language: bool = True

    def records(self) -> Iterator[dict]:
        """What `neardup index` reads: id and text, and lang only where the family labels languages."""
        for doc in self.docs:
            yield {"id": doc.id, "text": doc.text, **({"lang": doc.lang} if self.labels_language else {})}

    def write_jsonl(self, path: Path) -> Path:
        """The records, as the JSON Lines file `neardup index` reads; its path."""
        with path.open("w", encoding="utf-8") as out:
            for record in self.records():
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path


# --- the split's real texts --------------------------------------------------------------------------------

def in_split(source: Source, split: str) -> bool:
    """devcorpus's rule (a stable hash of topic or key), with licences split by the family of texts they share
    passages with, so GPL-2 and LGPL-2.1 never sit on both sides."""
    if source.collection == "licenses":
        key = LICENSE_FAMILIES.get(source.key, source.key)
        return devcorpus.SPLITS[stable_hash("licence:" + key) % 2] == split
    return devcorpus.in_split(source, split)


def _chunks(source: Source, low: int) -> Iterator[Source]:
    """Consecutive paragraphs of a text gathered into pieces of at least `low` words (the rest dropped)."""
    current: list[str] = []
    number = 0
    for para in edits.split_paragraphs(source.text):
        current.append(para)
        if words("\n\n".join(current)) >= low:
            yield Source(source.collection, f"{source.key}/{number}", source.lang, "\n\n".join(current),
                         source.topic)
            current, number = [], number + 1


@functools.lru_cache(maxsize=1)
def _all_articles() -> tuple[Source, ...]:
    """Every English news story and piece of a Wikipedia article, texts that repeat another (the Lee corpus holds
    a few stories twice, under two keys) dropped before the split, so no text is on both sides."""
    wiki = sources._wiki("encyclopedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
                         "en", 100)
    texts = list(sources.news()) + [piece for s in wiki for piece in _chunks(s, 80)]
    return tuple(devcorpus.distinct(texts))


def articles(split: str) -> list[Source]:
    """The split's news stories and pieces of Wikipedia articles (80+ words; pieces of one article share a
    topic)."""
    return [s for s in _all_articles() if in_split(s, split)]


def _sites(rng: random.Random, count: int, long_navigation: bool = False) -> list[Site]:
    """English news sites: devcorpus's header and footer with each site's name and sections; with
    long_navigation a menu, a list of the site's most read headlines and a longer footer (150+ words of text
    every page of the site carries)."""
    towns, kinds = _DATA["towns"], _DATA["paper_kinds"]
    names = sorted({f"The {town} {kind}" for town in towns for kind in kinds})
    header, footer = edits.BOILERPLATE["en"]
    sites = []
    for name in rng.sample(names, count):
        sections = " | ".join(rng.sample(edits.SECTIONS["en"], 6))
        fill = lambda line: line.format(name=name, sections=sections)  # noqa: E731
        head, foot = list(map(fill, header)), list(map(fill, footer))
        if long_navigation:
            topics = rng.sample(_NAVIGATION, 14)
            head.insert(1, "Menu: " + " | ".join(topics))
            head.insert(2, "Trending: " + " · ".join(rng.sample(_HEADLINES, 4)))
            foot[1:1] = ["Most read on " + name + ":", *(f"{i + 1}. {h}" for i, h in
                                                          enumerate(rng.sample(_HEADLINES, 6)))]
            foot.append(f"About {name} | Contact us | Advertise with us | Careers | Terms of use | Privacy policy | "
                        f"Cookie settings | Accessibility | Corrections | Newsletters | Archive | Sitemap")
            foot.append(f"{name} is published by {rng.choice(towns)} Media Group Ltd, registered in England and "
                        f"Wales, company number {rng.randint(1000000, 9999999)}. Registered office: "
                        f"{rng.randint(1, 99)} {rng.choice(towns)} Road.")
        sites.append(Site(name, "en", tuple(head), tuple(foot)))
    return sites


# --- popular -----------------------------------------------------------------------------------------------

def _republished(text: str, site: Site, rng: random.Random) -> tuple[str, float]:
    """A popular story's copy: a shortened ending, 1-5 % of its words edited, a fifth without punctuation, under
    another site's header and footer or a new headline."""
    text = edits.cut_text(text, rng.uniform(0.7, 1.0)) if rng.random() < 0.7 else text
    text, rate = edits.edited(text, "en", rng.choice(POPULAR_EDIT_RATES), rng)
    if rng.random() < 0.2:
        text = edits.unpunctuated(text, rng)
    if rng.random() < 0.75:
        return edits.with_boilerplate(text, site, rng), rate
    return edits.with_headline(text, "en", rng), rate


def popular(split: str, rng: random.Random) -> Corpus:
    texts = articles(split)
    stories = [s for s in texts if s.collection == "news" and 120 <= words(s.text) <= 400]
    chosen = rng.sample(stories, len(POPULAR_COPIES))
    others = [s for s in texts if s not in chosen]
    others = rng.sample(others, min(POPULAR_OTHERS, len(others)))
    sites = _sites(rng, 40)
    docs: list[Doc] = []
    for story, copies in zip(chosen, POPULAR_COPIES):
        group = f"{split}-popular{copies}"
        docs.append(family_doc(story.text, story, group, "original"))
        for _ in range(copies):
            site = rng.choice(sites)
            text, rate = _republished(story.text, site, rng)
            docs.append(family_doc(text, story, group, "copy", rate=rate, site=site.name))
    for number, other in enumerate(others):
        group = f"{split}-p{number:05d}"
        home = rng.choice(sites) if other.collection == "news" and rng.random() < 0.5 else None
        text = edits.with_boilerplate(other.text, home, rng) if home else other.text
        docs.append(family_doc(text, other, group, "original", site=home.name if home else ""))
        for _ in range(rng.randint(1, 4) if rng.random() < 0.2 else 0):
            site = rng.choice(sites)
            copy, rate = _republished(other.text, site, rng)
            docs.append(family_doc(copy, other, group, "copy", rate=rate, site=site.name))
    groups = shuffle_numbered(docs, split, rng)
    corpus = Corpus("popular", split, docs)
    popular_groups = {copies: f"{split}-popular{copies}" for copies in POPULAR_COPIES}
    ordinary = [members for name, members in groups.items() if len(members) > 1 and name not in
                popular_groups.values()]
    fill = [members[0] for name, members in groups.items() if name not in popular_groups.values()]
    sets: dict[str, list[list[int]]] = {}
    for copies, name in popular_groups.items():
        members = groups[name]
        only = [filled(rng.sample(members, min(RESULT_SET_SIZE, len(members))), fill, rng) for _ in range(4)]
        mixed = [draw_set(rng, docs, ordinary, fill, first=rng.sample(members, min(len(members), rng.randint(30, 70))))
                 for _ in range(4)]
        sets[f"copies {copies}"] = only + mixed
    sets["ordinary"] = [draw_set(rng, docs, ordinary, fill) for _ in range(8)]
    sets |= length_scopes(docs, rng, ordinary, fill)
    sets["overall"] = [s for scope in [f"copies {c}" for c in POPULAR_COPIES] + ["ordinary"] for s in sets[scope]]
    corpus.result_sets = sets
    return corpus


# --- shared --------------------------------------------------------------------------------------------------

#: The disclaimer every licence of the `shared` family carries at its end (as a project's LICENSE file adds one).
_DISCLAIMER: str = _DATA["disclaimer"]
#: Clauses a project adds to a licence (its variant stays a duplicate of the licence).
_ADDED_CLAUSES: list[str] = _DATA["added_clauses"]
_HOLDERS: list[str] = _DATA["holders"]


def _rewrapped(text: str, widths: tuple[int, int], rng: random.Random) -> str:
    """Each paragraph hard-wrapped at a width drawn from `widths`, as another terminal or editor renders it."""
    return "\n\n".join(edits.wrap_text(" ".join(p.split()), rng.randint(*widths)) for p in edits.split_paragraphs(text))


def _licence_copy(text: str, rng: random.Random, amended: bool = True) -> str:
    """A project's licence file: a copyright line of its own holder and years, some re-wrapped or lightly edited;
    when `amended` (the shared family's variants) sometimes a clause added and the disclaimer at the end."""
    years = f"{rng.randint(1995, 2020)}" + (f"-{rng.randint(2021, 2026)}" if rng.random() < 0.5 else "")
    body = text
    if amended and rng.random() < 0.3:
        paragraphs = edits.split_paragraphs(body)
        paragraphs.insert(rng.randint(len(paragraphs) // 2, len(paragraphs)), rng.choice(_ADDED_CLAUSES))
        body = "\n\n".join(paragraphs)
    if rng.random() < 0.3:
        body = _rewrapped(body, (60, 78), rng)
    if rng.random() < 0.4:
        body, _ = edits.edited(body, "en", rng.choice((0.01, 0.02)), rng)
    return f"Copyright (C) {years} {rng.choice(_HOLDERS)}\n\n{body}" + (f"\n\n{_DISCLAIMER}" if amended else "")


def _page_copy(text: str, rng: random.Random) -> tuple[str, float]:
    """A manual page republished: sometimes its end cut, 1-5 % of its words edited, half re-rendered at another
    width; and the share of its words edited."""
    copy = edits.cut_text(text, rng.uniform(0.8, 1.0)) if rng.random() < 0.3 else text
    copy, rate = edits.edited(copy, "en", rng.choice((0.01, 0.02, 0.05)), rng)
    if rng.random() < 0.5:
        copy = _rewrapped(copy, (60, 100), rng)
    return copy, rate


def _package_pages(split: str) -> list[tuple[str, Source]]:
    """(package, page) for the English manual pages of PACKAGES in the split, pages sharing more than
    SHARED_PAGE_CONTAINMENT of their text with another page of their package left out."""
    pages = []
    for package in PACKAGES:
        listing = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout.split()
        paths = sorted(Path(p) for p in listing if re.match(r"/usr/share/man/man[158]/[^/]+\.gz$", p))
        texts = [Source("manpages", f"en/{path.name}", "en", sources._render_man(path), topic="")
                 for path in paths if path.is_file() and not path.is_symlink()]
        texts = [s for s in texts if 80 <= words(s.text) <= 6000 and in_split(s, split)]
        pages += [(package, s) for s in devcorpus.distinct(texts, SHARED_PAGE_CONTAINMENT)]
    return pages


def shared(split: str, rng: random.Random) -> Corpus:
    docs: list[Doc] = []
    groups_of: dict[str, str] = {}  # a result-set kind per group: licenses, manpages, site
    licences = [s for s in sources.licenses() if in_split(s, split)]
    for licence in licences:
        group = f"{split}-lic-{licence.key}"
        for number in range(rng.randint(3, 6)):
            docs.append(family_doc(_licence_copy(licence.text, rng), licence, group,
                                   "original" if number == 0 else "copy", site="disclaimer"))
        groups_of[group] = "licenses"
    for package, page in _package_pages(split):
        group = f"{split}-man-{page.key}"
        docs.append(family_doc(page.text, page, group, "original", site=f"package {package}"))
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            copy, rate = _page_copy(page.text, rng)
            docs.append(family_doc(copy, page, group, "copy", rate=rate, site=f"package {package}"))
        groups_of[group] = "manpages"
    texts = articles(split)
    rng.shuffle(texts)
    sites = _sites(rng, 3, long_navigation=True)
    for number, article in enumerate(texts[:360]):
        group = f"{split}-site{number:04d}"
        site = sites[number % len(sites)] if number < 180 else None
        text = edits.with_boilerplate(article.text, site, rng) if site else article.text
        docs.append(family_doc(text, article, group, "original", site=site.name if site else ""))
        for _ in range(rng.choice([0, 0, 1, 2]) if site else 0):
            copy, rate = edits.edited(article.text, "en", rng.choice((0.01, 0.02, 0.05)), rng)
            copy = (edits.with_boilerplate(copy, site, rng) if rng.random() < 0.6
                    else edits.with_headline(copy, "en", rng))
            docs.append(family_doc(copy, article, group, "copy", rate=rate, site=site.name))
        groups_of[group] = "site" if site else "other"
    groups = shuffle_numbered(docs, split, rng)
    fill = [members[0] for members in groups.values()]
    sets = {kind: _kind_sets(docs, groups, groups_of, kind, fill, rng) for kind in ("licenses", "manpages", "site")}
    all_duplicates = [m for m in groups.values() if len(m) > 1]
    sets |= length_scopes(docs, rng, all_duplicates, fill)
    sets["overall"] = sets["licenses"] + sets["manpages"] + sets["site"]
    return Corpus("shared", split, docs, sets)


def _clusters(docs: list[Doc], groups: dict[str, list[int]], groups_of: dict[str, str], kind: str) -> list[list[int]]:
    """The originals of a kind by what they share (their `site`: a package, disclaimer, site, template, lineage)."""
    holders: dict[str, list[int]] = {}
    for name, members in groups.items():
        if groups_of[name] == kind:
            holders.setdefault(docs[members[0]].site, []).append(members[0])
    return list(holders.values())


def _kind_sets(docs: list[Doc], groups: dict[str, list[int]], groups_of: dict[str, str], kind: str,
               fill: list[int], rng: random.Random, count: int = 10) -> list[list[int]]:
    """Result sets of one kind of the family's texts: its duplicates, and three clusters of its originals that share
    a site, package, template or lineage (8-20 of each)."""
    duplicates = [m for name, m in groups.items() if groups_of[name] == kind and len(m) > 1]
    clusters = _clusters(docs, groups, groups_of, kind)
    return [draw_set(rng, docs, duplicates, fill, clusters, clusters=3, negatives_per_cluster=(8, 20),
                     per_group=(2, 6)) for _ in range(count)]


# --- short -----------------------------------------------------------------------------------------------------


def _shortened(source: Source) -> Source | None:
    """The first sentences of a text up to SHORT_WORDS (None when it has fewer words)."""
    kept: list[str] = []
    for sentence in edits.split_sentences(source.text):
        if words(" ".join(kept + [sentence])) > SHORT_WORDS[1]:
            break
        kept.append(sentence)
    text = " ".join(kept)
    return Source(source.collection, source.key, source.lang, text, source.topic) \
        if words(text) >= SHORT_WORDS[0] else None


def short(split: str, rng: random.Random) -> Corpus:
    synonyms = synonym_table()
    texts = [s for s in map(_shortened, articles(split)) if s is not None]
    texts = rng.sample(texts, min(SHORT_SOURCES, len(texts)))
    docs: list[Doc] = []
    for number, source in enumerate(texts):
        group = f"{split}-s{number:05d}"
        docs.append(family_doc(source.text, source, group, "original"))
        for _ in range(rng.choice([0, 1, 1, 2, 3, 4])):
            text, rate = rewritten(source.text, synonyms, rng)
            docs.append(family_doc(text, source, group, "rewrite", rate=rate))
    return rewrites_corpus(split, docs, ((0.2, 0.35), (0.35, 0.5)), rng)


def rewrites_corpus(split: str, docs: list[Doc], bands: Sequence[tuple[float, float]], rng: random.Random) -> Corpus:
    """The `short` family's corpus of originals and their rewrites: result sets overall, and per band of how much
    of the words a rewrite changed (its rate); the texts of one topic are its negatives."""
    groups = shuffle_numbered(docs, split, rng)
    duplicates = [m for m in groups.values() if len(m) > 1]
    fill = [m[0] for m in groups.values()]
    topics: dict[str, list[int]] = {}
    for members in groups.values():
        if docs[members[0]].topic:
            topics.setdefault(docs[members[0]].topic, []).append(members[0])
    negatives = [m for m in topics.values() if len(m) > 1]
    sets = {"overall": [draw_set(rng, docs, duplicates, fill, negatives, clusters=6) for _ in range(24)]}
    for low, high in bands:
        scoped = [[m[0]] + [i for i in m[1:] if low <= docs[i].rate < high] for m in duplicates]
        sets[f"rewrite {low:.0%}-{high:.0%}"] = [draw_set(rng, docs, [m for m in scoped if len(m) > 1], fill,
                                                          negatives, clusters=6) for _ in range(8)]
    return Corpus("short", split, docs, sets)


# --- multilingual ------------------------------------------------------------------------------------------------

def multilingual(split: str, rng: random.Random) -> Corpus:
    # labelled by language (the manual page's directory), not by the stemmer the sketcher would pick
    pages = [dataclasses.replace(s, lang=s.key.split("/")[0])
             for s in sources.manpages(MULTILINGUAL_MAN, per_language=140) if in_split(s, split)]
    english = rng.sample(articles(split), 60)
    bulgarian = [dataclasses.replace(s, lang="bg") for s in sources.bgwiki() if in_split(s, split)][:80]
    bases = devcorpus.distinct(pages + english + bulgarian)
    sites = edits.news_sites(rng)
    by_lang = {lang: [s for s in sites if s.lang == lang] or [s for s in sites if s.lang == "en"]
               for lang in {s.lang for s in bases}}
    docs: list[Doc] = []
    for number, base in enumerate(bases):
        group = f"{split}-m{number:05d}"
        docs.append(family_doc(base.text, base, group, "original"))
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            family = rng.choice(edits.EDIT_FAMILIES)
            site = rng.choice(by_lang[base.lang])
            text, rate = edits.republish(base.text, base.lang, family, site, rng)
            docs.append(family_doc(text, base, group, "copy", rate=rate))
    groups = shuffle_numbered(docs, split, rng)
    duplicates = [m for m in groups.values() if len(m) > 1]
    fill = [m[0] for m in groups.values()]
    sets = {"overall": [draw_set(rng, docs, duplicates, fill) for _ in range(16)]}
    for lang in sorted({d.lang for d in docs}):
        scoped = [m for m in duplicates if docs[m[0]].lang == lang]
        sets[f"lang {lang}"] = [draw_set(rng, docs, scoped, fill) for _ in range(4)]
    sets |= length_scopes(docs, rng, duplicates, fill)
    return Corpus("multilingual", split, docs, sets, labels_language=False)


# --- template --------------------------------------------------------------------------------------------------

def _rendered(paths: list[Path]) -> list[str]:
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(sources._render_man, paths))


def _template_paths(spec: dict) -> list[Path]:
    return sorted({p.resolve() for pattern in spec["pages"] for p in MAN_ROOT.glob(pattern) if p.is_file()})


def _shares(shingles: set[str], other: set[str], limit: float) -> bool:
    return len(shingles & other) > limit * min(len(shingles), len(other))


def page_sources(paths: list[Path]) -> list[Source]:
    """The manual pages as texts, each labelled by its directory's language: LANG/manN/PAGE, en for man/manN/PAGE
    (wherever a link led)."""
    langs = ["en" if path.parent.parent.name == "man" else path.parent.parent.name for path in paths]
    return [Source("manpages", f"{lang}/{path.name}", lang, text)
            for path, lang, text in zip(paths, langs, _rendered(paths))]


@functools.lru_cache(maxsize=None)
def template_pages(split: str) -> tuple[tuple[str, str, Source], ...]:
    """(template, package, page) for the split's templates (families.json; split "held-out": the pages no split
    reads): one page per text (SAME_PAGE), and only pages sharing TEMPLATE_SHARE of their text with another page of
    their template. Read once per process: each split's template corpus and the other splits' page lists use it."""
    sources.require_man()
    pages = []
    for name, spec in _TEMPLATES[split].items():
        paths = _template_paths(spec)
        if not paths:
            raise SourceMissing(f"the {name} manual pages come with Debian's {spec['package']}: "
                                f"apt-get install {spec['package']}")
        family = [page for page in page_sources(paths) if 80 <= words(page.text) <= 6000]
        family = devcorpus.distinct(family, SAME_PAGE)
        shingles = [devcorpus._shingles(page.text) for page in family]
        pages += [(name, spec["package"], page) for i, page in enumerate(family)
                  if any(_shares(shingles[i], other, TEMPLATE_SHARE) for j, other in enumerate(shingles) if j != i)]
    return tuple(pages)


@functools.lru_cache(maxsize=None)
def _other_pages(split: str) -> tuple[Source, ...]:
    """Up to TEMPLATE_OTHERS pages of section 7 of no template, in the split (devcorpus's rule, after a page that
    repeats another under a second name is dropped), distinct from the template pages of both splits and from each
    other; taken in the order of a stable hash of their name, as sources.manpages."""
    excluded = {path for spec in [*_TEMPLATES["tune"].values(), *_TEMPLATES["test"].values()]
                for path in _template_paths(spec)}
    paths = sorted({p.resolve() for p in (MAN_ROOT / "man7").glob("*.gz") if p.is_file()} - excluded,
                   key=lambda path: (stable_hash(path.name), path.name))
    pages = [Source("manpages", f"en/{path.name}", "en", text) for path, text in zip(paths, _rendered(paths))]
    pages = [page for page in devcorpus.distinct([p for p in pages if 80 <= words(p.text) <= 6000], SAME_PAGE)
             if in_split(page, split)]
    templated = [page for where in devcorpus.SPLITS for _, _, page in template_pages(where)]
    return tuple(devcorpus.distinct(pages, against=templated)[:TEMPLATE_OTHERS])


def template(split: str, rng: random.Random) -> Corpus:
    return template_corpus(split, template_pages(split), _other_pages(split), rng)


def template_corpus(split: str, pages: Sequence[tuple[str, str, Source]], others: Sequence[Source],
                    rng: random.Random, labels_language: bool = True) -> Corpus:
    """Each template page and 0–2 copies of it (0–1 of another page), its template as its site; result sets per
    package, of its template pages and their copies."""
    docs: list[Doc] = []
    groups_of: dict[str, str] = {}  # a result-set kind per group: the template's package, or other
    for name, package, page in [*pages, *(("", "other", page) for page in others)]:
        group = f"{split}-tpl-{page.key}"
        docs.append(family_doc(page.text, page, group, "original", site=name))
        for _ in range(rng.choice([0, 0, 1, 1, 2] if name else [0, 0, 0, 1])):
            copy, rate = _page_copy(page.text, rng)
            copy = edits.with_headline(copy, "en", rng) if rng.random() < 0.3 else copy
            docs.append(family_doc(copy, page, group, "copy", rate=rate, site=name))
        groups_of[group] = package
    corpus = _scoped_corpus("template", split, docs, groups_of, rng)
    corpus.labels_language = labels_language
    return corpus


# --- derived -----------------------------------------------------------------------------------------------------

def _differs_by_a_clause(text: str, other: str) -> bool:
    """Whether one text adds, drops or replaces a run of CLAUSE_WORDS words of the other (case, punctuation and
    wrapping aside)."""
    matcher = difflib.SequenceMatcher(None, _words(text), _words(other), autojunk=False)
    return any(max(i2 - i1, j2 - j1) >= CLAUSE_WORDS for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal")


def _words(text: str) -> list[str]:
    return edits.WORD_CORE.findall(text.lower())


@functools.lru_cache(maxsize=1)
def _licence_texts() -> tuple[tuple[str, str, Source], ...]:
    """(split, lineage, text) of every licence text of the derived family: each lineage's texts named in
    families.json (/usr/share/common-licenses and the copyright files' notices), then each other notice of the
    copyright files, which joins the lineage it shares more than devcorpus.DISTINCT_CONTAINMENT of its text with
    (a project's amended BSD or MIT licence), else stands alone in the split devcorpus's rule gives it (lineage "",
    distinct from the others). A text differing from one of its lineage by less than a clause is left out."""
    notices = sources.copyright_licences()
    lineages: dict[str, tuple[str, list[Source]]] = {}  # lineage → split, texts
    shingled: dict[str, set[str]] = {}  # a lineage text's word 5-grams, computed once for every notice it meets

    def shingles_of(text: str) -> set[str]:
        if text not in shingled:
            shingled[text] = devcorpus._shingles(text)
        return shingled[text]

    def join(lineage: str, text: Source) -> None:
        kept = lineages[lineage][1]
        if all(_differs_by_a_clause(text.text, other.text) for other in kept):
            kept.append(text)

    for split, named in _LINEAGES.items():
        for lineage, names in named.items():
            lineages[lineage] = (split, [])
            for text in [*sources.licenses(tuple(names.get("common-licenses", ()))),
                         *(notices[name] for name in names.get("copyright", ()) if name in notices)]:
                join(lineage, text)
    listed = {name for named in _LINEAGES.values() for names in named.values() for name in names.get("copyright", ())}
    alone = []
    for name, text in sorted(notices.items()):
        if name in listed or not 60 <= words(text.text) <= 6000:
            continue
        shingles = devcorpus._shingles(text.text)
        share, lineage = max((max(len(shingles & other) / min(len(shingles), len(other))
                                  for other in (shingles_of(t.text) for t in texts)), lineage)
                             for lineage, (_, texts) in lineages.items())
        if share > devcorpus.DISTINCT_CONTAINMENT:
            join(lineage, text)
        else:
            alone.append(text)
    return tuple([(split, lineage, text) for lineage, (split, texts) in lineages.items() for text in texts]
                 + [(split, "", text) for text in devcorpus.distinct(alone) for split in devcorpus.SPLITS
                    if in_split(text, split)])


def licence_texts(split: str) -> list[tuple[str, Source]]:
    """(lineage, text) of the split's licence texts; lineage "" for those of no lineage."""
    return [(lineage, text) for where, lineage, text in _licence_texts() if where == split]


@functools.lru_cache(maxsize=2)
def held_out_licence_texts(known: bool = False) -> tuple[tuple[str, Source], ...]:
    """(lineage, text) of the SPDX licences (sources.spdx_licences) that share at most
    devcorpus.DISTINCT_CONTAINMENT of their text with any licence text of the development corpus (either split;
    all of them with `known`, versions of licences the development corpus holds too):
    each joins the lineage of an earlier one it shares more than that with (left out where it differs from one of
    them by less than a clause), as _licence_texts joins the copyright files' notices; lineage "" for a text that
    joined none and none joined."""
    developed = [] if known else [devcorpus._shingles(text.text) for _, _, text in _licence_texts()]
    lineages: list[tuple[list[set[str]], list[Source]]] = []
    seen = set()
    for text in sources.spdx_licences():
        shingles = devcorpus._shingles(text.text)
        if text.text in seen or not 60 <= words(text.text) <= 6000 or any(
                len(shingles & other) > devcorpus.DISTINCT_CONTAINMENT * min(len(shingles), len(other))
                for other in developed):
            continue
        seen.add(text.text)
        share, joined = max(((max(len(shingles & other) / min(len(shingles), len(other)) for other in sets), number)
                             for number, (sets, _) in enumerate(lineages)), default=(0.0, -1))
        if share <= devcorpus.DISTINCT_CONTAINMENT:
            lineages.append(([shingles], [text]))
        elif all(_differs_by_a_clause(text.text, other.text) for other in lineages[joined][1]):
            lineages[joined][0].append(shingles)
            lineages[joined][1].append(text)
    return tuple((f"spdx-{number}" if len(texts) > 1 else "", text)
                 for number, (_, texts) in enumerate(lineages) for text in texts)


def derived(split: str, rng: random.Random) -> Corpus:
    return derived_corpus(split, licence_texts(split), rng)


def derived_corpus(split: str, texts: Sequence[tuple[str, Source]], rng: random.Random) -> Corpus:
    """Each licence text, 1–3 copies of it where it has a lineage (0–2 where not), its lineage as its site;
    result sets of its versions (texts of a lineage) and their copies."""
    docs: list[Doc] = []
    groups_of: dict[str, str] = {}  # versions (of a lineage) or other
    for lineage, text in texts:
        group = f"{split}-der-{text.collection}-{text.key}"
        docs.append(family_doc(text.text, text, group, "original", site=lineage))
        for _ in range(rng.randint(1, 3) if lineage else rng.choice([0, 0, 1, 2])):
            docs.append(family_doc(_licence_copy(text.text, rng, amended=False), text, group, "copy", site=lineage))
        groups_of[group] = "versions" if lineage else "other"
    return _scoped_corpus("derived", split, docs, groups_of, rng)


# --- documents and result sets ---------------------------------------------------------------------------------

def _scoped_corpus(family: str, split: str, docs: list[Doc], groups_of: dict[str, str],
                   rng: random.Random) -> Corpus:
    """A family of negatives that share a template or lineage: result sets per kind of text (all but other), per
    length of the original, and overall (the kinds' sets), every set with clusters of those negatives."""
    groups = shuffle_numbered(docs, split, rng)
    fill = [members[0] for members in groups.values()]
    kinds = sorted(set(groups_of.values()) - {"other"})
    sets = {kind: _kind_sets(docs, groups, groups_of, kind, fill, rng) for kind in kinds}
    negatives = [cluster for kind in kinds for cluster in _clusters(docs, groups, groups_of, kind)]
    sets |= length_scopes(docs, rng, [m for m in groups.values() if len(m) > 1], fill, negatives=negatives)
    sets["overall"] = [s for kind in kinds for s in sets[kind]]
    return Corpus(family, split, docs, sets)


def family_doc(text: str, source: Source, group: str, kind: str, rate: float = 0.0, site: str = "") -> Doc:
    """A document of the family (its id set by shuffle_numbered); `length` is the bucket of its original."""
    return Doc("", text, source.lang, group, kind, source.collection, length_bucket(source.text), round(rate, 4),
               site, "", source.topic)


BUILDERS: dict[str, Callable[[str, random.Random], Corpus]] = {
    "popular": popular, "shared": shared, "short": short, "multilingual": multilingual, "template": template,
    "derived": derived}


def build(family: str, split: str, seed: int | None = None) -> Corpus:
    """One family's corpus and result sets for a split; the split's own seed unless `seed` is given."""
    if family not in BUILDERS:
        raise ValueError(f"unknown family {family!r}; use one of {', '.join(FAMILIES)}")
    if split not in devcorpus.SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(devcorpus.SPLITS)}")
    base = SPLIT_SEEDS[split] if seed is None else seed
    return BUILDERS[family](split, random.Random(f"{family}:{base}"))
