"""Development-corpus families for issue 25: the kinds of text one stop-list rule and one threshold get wrong.

Four families, each a corpus of its own (one store each) with a `tune` and a `test` split built from different
real texts (devcorpus.in_split: a stable hash of the source key or topic; licences by a stable hash of their
family) and with different seeds:

  popular       stories republished POPULAR_COPIES times (50 to 500) among 1,000-2,000 other articles; each copy
                gets another site's header and footer or a headline, a shortened ending, 1-5 % of its words
                edited, and a fifth lose their punctuation. Other stories have 1-5 copies (ordinary duplication).
  shared        distinct documents that share long clauses or sections: licences with the same disclaimer
                appended (variants of one licence, another holder or year, a clause added, light edits, ARE
                duplicates; different licences are not), the manual pages of one package (the same REPORTING
                BUGS / COPYRIGHT / SEE ALSO sections: distinct pages are not duplicates; copies are re-rendered at
                another width and lightly edited), and the pages of sites with a long header, navigation and
                footer (distinct articles are not duplicates; the same article again is).
  short         texts of 100-300 words with 1-4 hand-like rewrites each: synonyms (data/synonyms.txt), clauses
                and sentences reordered, words dropped, 20-50 % of the words changed (REWRITE_RATES); sections
                of one Wikipedia article are the negatives on the same topic.
  multilingual  manual pages in de, fr, nl, ru (and pl, it, es, uk in the test split) and English news and
                encyclopedia texts (Bulgarian Wikipedia in the test split) with devcorpus's edited copies; the
                records written for the store carry no `lang` (Corpus.records).

Documents are devcorpus.Doc: `group` names the near-duplicates, `family` what a document is within its family
(original, copy, rewrite), `site` what it shares with documents that are not its duplicates (a site, a package,
a licence disclaimer), `topic` a subject it shares. Each corpus comes with its labelled result sets of ~100 ids
in rank order, per scope (see Corpus.result_sets).

    python benchmarks/families.py [--split tune|test] [--family NAME ...]   # prints what each family holds
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devcorpus  # noqa: E402
import sources  # noqa: E402
from devcorpus import Doc, Site, length_bucket  # noqa: E402
from sources import Source, stable_hash, words  # noqa: E402

FAMILIES = ("popular", "shared", "short", "multilingual")
#: Other seeds than devcorpus.SPLIT_SEEDS, so no edit here repeats one drawn there.
SPLIT_SEEDS = {"tune": 2501, "test": 2599}
#: How often each popular story of a split is republished (one story per count).
POPULAR_COPIES = (50, 120, 300, 500)
#: The other articles a popular corpus holds, at most (all the split has when fewer).
POPULAR_OTHERS = 1200
POPULAR_EDIT_RATES = (0.01, 0.02, 0.03, 0.05)
SHORT_WORDS = (100, 300)
SHORT_SOURCES = 600
REWRITE_RATES = (0.20, 0.50)
#: Pages of one package sharing more than this of their word 5-grams with another are left out (a page that is
#: all boilerplate, as `true` and `false` are, is neither a duplicate of the other nor distinct from it).
SHARED_PAGE_CONTAINMENT = 0.5
#: Packages whose English manual pages share their closing sections.
PACKAGES = ("coreutils", "util-linux", "e2fsprogs", "procps", "man-db", "dpkg", "apt")
#: Licences whose texts share passages go to one split together.
LICENSE_FAMILIES = {"GPL-2": "gpl2", "LGPL-2.1": "gpl2", "GPL-3": "gpl3", "LGPL-3": "gpl3", "MPL-1.1": "mpl",
                    "MPL-2.0": "mpl"}
MULTILINGUAL_MAN = {lang: sources.MAN_LANGUAGES[lang] for lang in ("de", "fr", "nl", "ru", "pl", "it", "es", "uk")}
RESULT_SET_SIZE = 100
SYNONYMS_FILE = Path(__file__).resolve().parent / "data" / "synonyms.txt"


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
    for para in devcorpus._paragraphs(source.text):
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
    towns = ["Ashford", "Bexley", "Carlow", "Dunmore", "Elgin", "Farley", "Glenrock", "Harwich", "Ilford",
             "Jarrow", "Kelso", "Lanark", "Moray", "Nairn", "Oban", "Penrith", "Quorn", "Redcar", "Selby", "Thirsk",
             "Ulverston", "Ventnor", "Wigton", "Yarm"]
    kinds = ["Courier", "Herald", "Post", "Times", "Gazette", "Observer", "Chronicle", "Echo", "Mercury",
             "Advertiser"]
    names = sorted({f"The {town} {kind}" for town in towns for kind in kinds})
    header, footer = devcorpus._BOILERPLATE["en"]
    sites = []
    for name in rng.sample(names, count):
        sections = " | ".join(rng.sample(devcorpus._SECTIONS["en"], 6))
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


_NAVIGATION = ["Home", "News", "UK", "World", "Politics", "Business", "Markets", "Technology", "Science",
               "Health", "Education", "Sport", "Football", "Cricket", "Rugby", "Tennis", "Culture", "Film", "Music",
               "Books", "Travel", "Food", "Property", "Motoring", "Weather", "Puzzles", "Obituaries", "Letters",
               "Podcasts", "Video"]
_HEADLINES = ["Council approves plan for new bridge over the river", "Hospital waiting times fall for third month",
              "Local team reaches cup final after dramatic win", "Rail fares to rise by four per cent in January",
              "Storm warning issued as heavy rain hits the coast", "School opens new science wing after delays",
              "Police appeal for witnesses after town centre crash", "House prices steady despite higher rates",
              "Festival returns with record number of visitors", "Farmers warn of poor harvest after dry summer",
              "Mayor promises more buses for rural villages", "Charity run raises thousands for children's ward",
              "Library hours cut as council seeks savings", "New restaurant brings jobs to the high street"]


# --- popular -----------------------------------------------------------------------------------------------

def _republished(text: str, site: Site, rng: random.Random) -> tuple[str, float]:
    """A popular story's copy: a shortened ending, 1-5 % of its words edited, a fifth without punctuation, under
    another site's header and footer or a new headline."""
    text = devcorpus._cut(text, rng.uniform(0.7, 1.0)) if rng.random() < 0.7 else text
    text, rate = devcorpus.edited(text, "en", rng.choice(POPULAR_EDIT_RATES), rng)
    if rng.random() < 0.2:
        text = devcorpus.unpunctuated(text, rng)
    if rng.random() < 0.75:
        return devcorpus.with_boilerplate(text, site, rng), rate
    return devcorpus.with_headline(text, "en", rng), rate


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
        docs.append(_doc(story.text, story, group, "original"))
        for _ in range(copies):
            site = rng.choice(sites)
            text, rate = _republished(story.text, site, rng)
            docs.append(_doc(text, story, group, "copy", rate=rate, site=site.name))
    for number, other in enumerate(others):
        group = f"{split}-p{number:05d}"
        home = rng.choice(sites) if other.collection == "news" and rng.random() < 0.5 else None
        text = devcorpus.with_boilerplate(other.text, home, rng) if home else other.text
        docs.append(_doc(text, other, group, "original", site=home.name if home else ""))
        for _ in range(rng.randint(1, 4) if rng.random() < 0.2 else 0):
            site = rng.choice(sites)
            copy, rate = _republished(other.text, site, rng)
            docs.append(_doc(copy, other, group, "copy", rate=rate, site=site.name))
    groups = _shuffled(docs, split, rng)
    corpus = Corpus("popular", split, docs)
    popular_groups = {copies: f"{split}-popular{copies}" for copies in POPULAR_COPIES}
    ordinary = [members for name, members in groups.items() if len(members) > 1 and name not in
                popular_groups.values()]
    fill = [members[0] for name, members in groups.items() if name not in popular_groups.values()]
    sets: dict[str, list[list[int]]] = {}
    for copies, name in popular_groups.items():
        members = groups[name]
        only = [_fill(rng.sample(members, min(RESULT_SET_SIZE, len(members))), fill, rng) for _ in range(4)]
        mixed = [_draw(rng, docs, ordinary, fill, first=rng.sample(members, min(len(members), rng.randint(30, 70))))
                 for _ in range(4)]
        sets[f"copies {copies}"] = only + mixed
    sets["ordinary"] = [_draw(rng, docs, ordinary, fill) for _ in range(8)]
    sets |= _length_scopes(docs, rng, ordinary, fill)
    sets["overall"] = [s for scope in [f"copies {c}" for c in POPULAR_COPIES] + ["ordinary"] for s in sets[scope]]
    corpus.result_sets = sets
    return corpus


# --- shared --------------------------------------------------------------------------------------------------

#: The disclaimer every licence of the `shared` family carries at its end (as a project's LICENSE file adds one).
_DISCLAIMER = ("DISCLAIMER OF WARRANTY AND LIMITATION OF LIABILITY. THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT "
               "WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF "
               "MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE "
               "AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN "
               "ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR "
               "THE USE OR OTHER DEALINGS IN THE SOFTWARE. THE ENTIRE RISK AS TO THE QUALITY AND PERFORMANCE OF THE "
               "PROGRAM IS WITH YOU. SHOULD THE PROGRAM PROVE DEFECTIVE, YOU ASSUME THE COST OF ALL NECESSARY "
               "SERVICING, REPAIR OR CORRECTION. UNLESS REQUIRED BY APPLICABLE LAW OR AGREED TO IN WRITING, NO "
               "COPYRIGHT HOLDER, OR ANY OTHER PARTY WHO MAY MODIFY AND/OR REDISTRIBUTE THE PROGRAM, WILL BE LIABLE "
               "TO YOU FOR DAMAGES, INCLUDING ANY GENERAL, SPECIAL, INCIDENTAL OR CONSEQUENTIAL DAMAGES ARISING OUT "
               "OF THE USE OR INABILITY TO USE THE PROGRAM, EVEN IF SUCH HOLDER OR OTHER PARTY HAS BEEN ADVISED OF "
               "THE POSSIBILITY OF SUCH DAMAGES.")
#: Clauses a project adds to a licence (its variant stays a duplicate of the licence).
_ADDED_CLAUSES = [
    "As a special exception, the copyright holders give permission to link the code of this program with the "
    "OpenSSL library and distribute the linked executables, provided that the other terms are followed.",
    "Trademark notice: the names and logos of the project are not licensed under these terms; ask the copyright "
    "holders before using them to endorse or promote products derived from this software.",
    "Contributions: unless you state otherwise, any contribution you submit for inclusion in the work is licensed "
    "under these same terms, without any additional terms or conditions.",
]
_HOLDERS = ["Free Software Foundation, Inc.", "Maria Lopez", "The Example Project Developers", "Anna de Vries",
            "Northlight Software Ltd", "James Carter and contributors", "Olga Petrova", "Sara Jansen"]


def _licence_copy(text: str, rng: random.Random) -> str:
    """A project's licence file: a copyright line of its own holder and years, sometimes a clause added, some
    re-wrapped or lightly edited; the disclaimer at the end."""
    years = f"{rng.randint(1995, 2020)}" + (f"-{rng.randint(2021, 2026)}" if rng.random() < 0.5 else "")
    body = text
    if rng.random() < 0.3:
        paragraphs = devcorpus._paragraphs(body)
        paragraphs.insert(rng.randint(len(paragraphs) // 2, len(paragraphs)), rng.choice(_ADDED_CLAUSES))
        body = "\n\n".join(paragraphs)
    if rng.random() < 0.3:
        body = "\n\n".join(devcorpus._wrap(" ".join(p.split()), rng.randint(60, 78))
                           for p in devcorpus._paragraphs(body))
    if rng.random() < 0.4:
        body, _ = devcorpus.edited(body, "en", rng.choice((0.01, 0.02)), rng)
    return f"Copyright (C) {years} {rng.choice(_HOLDERS)}\n\n{body}\n\n{_DISCLAIMER}"


def _package_pages(split: str) -> list[tuple[str, Source]]:
    """(package, page) for the English manual pages of PACKAGES in the split, pages sharing more than
    SHARED_PAGE_CONTAINMENT of their text with another page of their package left out."""
    import subprocess

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
            docs.append(_doc(_licence_copy(licence.text, rng), licence, group,
                             "original" if number == 0 else "copy", site="disclaimer"))
        groups_of[group] = "licenses"
    for package, page in _package_pages(split):
        group = f"{split}-man-{page.key}"
        docs.append(_doc(page.text, page, group, "original", site=f"package {package}"))
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            copy = devcorpus._cut(page.text, rng.uniform(0.8, 1.0)) if rng.random() < 0.3 else page.text
            copy, rate = devcorpus.edited(copy, "en", rng.choice((0.01, 0.02, 0.05)), rng)
            if rng.random() < 0.5:  # as another terminal renders it
                copy = "\n\n".join(devcorpus._wrap(" ".join(p.split()), rng.randint(60, 100))
                                   for p in devcorpus._paragraphs(copy))
            docs.append(_doc(copy, page, group, "copy", rate=rate, site=f"package {package}"))
        groups_of[group] = "manpages"
    texts = articles(split)
    rng.shuffle(texts)
    sites = _sites(rng, 3, long_navigation=True)
    for number, article in enumerate(texts[:360]):
        group = f"{split}-site{number:04d}"
        site = sites[number % len(sites)] if number < 180 else None
        text = devcorpus.with_boilerplate(article.text, site, rng) if site else article.text
        docs.append(_doc(text, article, group, "original", site=site.name if site else ""))
        for _ in range(rng.choice([0, 0, 1, 2]) if site else 0):
            copy, rate = devcorpus.edited(article.text, "en", rng.choice((0.01, 0.02, 0.05)), rng)
            copy = (devcorpus.with_boilerplate(copy, site, rng) if rng.random() < 0.6
                    else devcorpus.with_headline(copy, "en", rng))
            docs.append(_doc(copy, article, group, "copy", rate=rate, site=site.name))
        groups_of[group] = "site" if site else "other"
    groups = _shuffled(docs, split, rng)
    fill = [members[0] for members in groups.values()]
    sets: dict[str, list[list[int]]] = {}
    for kind in ("licenses", "manpages", "site"):
        duplicates = [m for name, m in groups.items() if groups_of[name] == kind and len(m) > 1]
        holders: dict[str, list[int]] = {}  # the originals of the kind by what they share
        for name, members in groups.items():
            if groups_of[name] == kind:
                holders.setdefault(docs[members[0]].site, []).append(members[0])
        sets[kind] = [_draw(rng, docs, duplicates, fill, list(holders.values()), clusters=3,
                            negatives_per_cluster=(8, 20), per_group=(2, 6)) for _ in range(10)]
    all_duplicates = [m for m in groups.values() if len(m) > 1]
    sets |= _length_scopes(docs, rng, all_duplicates, fill)
    sets["overall"] = sets["licenses"] + sets["manpages"] + sets["site"]
    return Corpus("shared", split, docs, sets)


# --- short -----------------------------------------------------------------------------------------------------

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
    a = [w.lower() for w in devcorpus._WORD_CORE.findall(original)]
    b = [w.lower() for w in devcorpus._WORD_CORE.findall(rewrite)]
    kept = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return 1 - kept / max(1, len(a))


def _reordered(text: str, rng: random.Random) -> str:
    """Two sentences swapped, and a sentence's clauses around its first comma swapped."""
    sentences = devcorpus._sentences(text)
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
    tokens = devcorpus._TOKEN.findall(base)
    positions = [i for i, t in enumerate(tokens) if devcorpus._WORD_CORE.search(t)]
    rng.shuffle(positions)
    with_synonym = [i for i in positions if devcorpus._WORD_CORE.search(tokens[i]).group().lower() in synonyms]
    synonym_positions = set(with_synonym)
    order = with_synonym + [i for i in positions if i not in synonym_positions]
    share, start = changed_share(text, base), 0
    while share < target and start < len(order):
        # half the words still missing at a time, so the share ends just past the target
        step = max(1, round((target - share) * len(positions) / 2))
        batch, start = order[start:start + step], start + step
        for i in batch:
            match = devcorpus._WORD_CORE.search(tokens[i])
            core = match.group()
            choices = synonyms.get(core.lower())
            if choices:
                new = rng.choice(choices)
                new = new[:1].upper() + new[1:] if core[:1].isupper() else new
            elif rng.random() < 0.5:
                new = ""
            else:
                new = rng.choice(devcorpus._FILLERS["en"]) + " " + core
            tokens[i] = tokens[i][:match.start()] + new + tokens[i][match.end():]
        share = changed_share(text, re.sub(r"[^\S\n]{2,}", " ", "".join(tokens)))
    return re.sub(r"[^\S\n]{2,}", " ", "".join(tokens)).strip(), share


def _shortened(source: Source) -> Source | None:
    """The first sentences of a text up to SHORT_WORDS (None when it has fewer words)."""
    kept: list[str] = []
    for sentence in devcorpus._sentences(source.text):
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
        docs.append(_doc(source.text, source, group, "original"))
        for _ in range(rng.choice([0, 1, 1, 2, 3, 4])):
            text, rate = rewritten(source.text, synonyms, rng)
            docs.append(_doc(text, source, group, "rewrite", rate=rate))
    groups = _shuffled(docs, split, rng)
    duplicates = [m for m in groups.values() if len(m) > 1]
    fill = [m[0] for m in groups.values()]
    topics: dict[str, list[int]] = {}
    for members in groups.values():
        if docs[members[0]].topic:
            topics.setdefault(docs[members[0]].topic, []).append(members[0])
    negatives = [m for m in topics.values() if len(m) > 1]
    sets = {"overall": [_draw(rng, docs, duplicates, fill, negatives, clusters=6) for _ in range(24)]}
    for low, high in ((0.2, 0.35), (0.35, 0.5)):
        scoped = [[m[0]] + [i for i in m[1:] if low <= docs[i].rate < high] for m in duplicates]
        sets[f"rewrite {low:.0%}-{high:.0%}"] = [_draw(rng, docs, [m for m in scoped if len(m) > 1], fill, negatives,
                                                       clusters=6) for _ in range(8)]
    return Corpus("short", split, docs, sets)


# --- multilingual ------------------------------------------------------------------------------------------------

def multilingual(split: str, rng: random.Random) -> Corpus:
    # labelled by language (the manual page's directory), not by the stemmer the sketcher would pick
    pages = [dataclasses.replace(s, lang=s.key.split("/")[0])
             for s in sources.manpages(MULTILINGUAL_MAN, per_language=140) if in_split(s, split)]
    english = rng.sample(articles(split), 60)
    bulgarian = [dataclasses.replace(s, lang="bg") for s in sources.bgwiki() if in_split(s, split)][:80]
    bases = devcorpus.distinct(pages + english + bulgarian)
    sites = devcorpus._sites(rng)
    by_lang = {lang: [s for s in sites if s.lang == lang] or [s for s in sites if s.lang == "en"]
               for lang in {s.lang for s in bases}}
    docs: list[Doc] = []
    for number, base in enumerate(bases):
        group = f"{split}-m{number:05d}"
        docs.append(_doc(base.text, base, group, "original"))
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            family = rng.choice(devcorpus.EDIT_FAMILIES)
            site = rng.choice(by_lang[base.lang])
            text, rate = devcorpus.republish(base.text, base.lang, family, site, rng)
            docs.append(_doc(text, base, group, "copy", rate=rate))
    groups = _shuffled(docs, split, rng)
    duplicates = [m for m in groups.values() if len(m) > 1]
    fill = [m[0] for m in groups.values()]
    sets = {"overall": [_draw(rng, docs, duplicates, fill) for _ in range(16)]}
    for lang in sorted({d.lang for d in docs}):
        scoped = [m for m in duplicates if docs[m[0]].lang == lang]
        sets[f"lang {lang}"] = [_draw(rng, docs, scoped, fill) for _ in range(4)]
    sets |= _length_scopes(docs, rng, duplicates, fill)
    return Corpus("multilingual", split, docs, sets, labels_language=False)


# --- documents and result sets ---------------------------------------------------------------------------------

def _doc(text: str, source: Source, group: str, kind: str, rate: float = 0.0, site: str = "") -> Doc:
    """A document of the family (its id set by _shuffled); `length` is the bucket of its original."""
    return Doc("", text, source.lang, group, kind, source.collection, length_bucket(source.text), round(rate, 4),
               site, "", source.topic)


def _shuffled(docs: list[Doc], split: str, rng: random.Random) -> dict[str, list[int]]:
    """Shuffles the documents and numbers them in their new order, so an id says nothing of its group; returns
    their groups (_groups)."""
    rng.shuffle(docs)
    for number, doc in enumerate(docs):
        doc.id = f"{split[:2]}{number:06d}"
    return _groups(docs)


def _groups(docs: list[Doc]) -> dict[str, list[int]]:
    """group → document indexes, the original first."""
    groups: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        groups.setdefault(doc.group, []).append(i)
    return {name: sorted(members, key=lambda i: docs[i].family != "original") for name, members in groups.items()}


def _fill(chosen: list[int], fill: list[int], rng: random.Random, size: int = RESULT_SET_SIZE) -> list[int]:
    """chosen plus distinct documents of other groups up to size, in a random rank order."""
    chosen = list(chosen)
    taken = set(chosen)
    for i in rng.sample(fill, len(fill)):
        if len(chosen) >= size:
            break
        if i not in taken:
            chosen.append(i)
            taken.add(i)
    rng.shuffle(chosen)
    return chosen


def _draw(rng: random.Random, docs: list[Doc], duplicates: list[list[int]], fill: list[int],
          negatives: list[list[int]] = (), first: list[int] = (), clusters: int = 2,
          negatives_per_cluster: tuple[int, int] = (2, 6), per_group: tuple[int, int] = (2, 3),
          size: int = RESULT_SET_SIZE) -> list[int]:
    """A result set: `first` (a popular story's copies), per_group members of duplicate groups until 20-40 % of
    the set are duplicates, documents of a few negative clusters (distinct texts that share a site, package,
    disclaimer or topic), the rest other documents; no group is drawn twice."""
    chosen = list(first)
    used = {docs[i].group for i in chosen}
    wanted = round(size * rng.uniform(0.2, 0.4))
    for members in rng.sample(duplicates, len(duplicates)):
        if wanted <= 0 or len(chosen) >= size:
            break
        if docs[members[0]].group in used:
            continue
        picked = rng.sample(members, min(len(members), rng.randint(*per_group)))
        chosen += picked
        used.add(docs[members[0]].group)
        wanted -= len(picked) - 1
    for cluster in rng.sample(negatives, min(clusters, len(negatives))):
        free = [i for i in cluster if docs[i].group not in used]
        picked = rng.sample(free, min(len(free), rng.randint(*negatives_per_cluster)))
        chosen += picked
        used |= {docs[i].group for i in picked}
    return _fill(chosen[:size], [i for i in fill if docs[i].group not in used], rng, size)


def _length_scopes(docs: list[Doc], rng: random.Random, duplicates: list[list[int]], fill: list[int],
                   count: int = 4) -> dict[str, list[list[int]]]:
    """Result sets whose duplicates all have an original of one length bucket (buckets with duplicates only)."""
    sets = {}
    for bucket in devcorpus.LENGTHS:
        scoped = [m for m in duplicates if docs[m[0]].length == bucket]
        if scoped:
            sets[f"length {bucket}"] = [_draw(rng, docs, scoped, fill) for _ in range(count)]
    return sets


BUILDERS: dict[str, Callable[[str, random.Random], Corpus]] = {
    "popular": popular, "shared": shared, "short": short, "multilingual": multilingual}


def build(family: str, split: str, seed: int | None = None) -> Corpus:
    """One family's corpus and result sets for a split; the split's own seed unless `seed` is given."""
    if family not in BUILDERS:
        raise ValueError(f"unknown family {family!r}; use one of {', '.join(FAMILIES)}")
    if split not in devcorpus.SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(devcorpus.SPLITS)}")
    base = SPLIT_SEEDS[split] if seed is None else seed
    return BUILDERS[family](split, random.Random(f"{family}:{base}"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="tune")
    parser.add_argument("--family", choices=FAMILIES, nargs="+", default=list(FAMILIES))
    args = parser.parse_args(argv)
    for family in args.family:
        try:
            corpus = build(family, args.split)
        except sources.SourceMissing as missing:
            parser.exit(2, f"families: {missing}\n")
        docs = corpus.docs
        print(f"{family} ({args.split}): {len(docs)} documents in {len({d.group for d in docs})} groups; result "
              "sets: " + ", ".join(f"{scope} {len(sets)}" for scope, sets in corpus.result_sets.items()))
        for name in ("family", "source", "lang", "length"):
            print(f"  {name}: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(getattr(d, name)
                                                                                     for d in docs).items())))


if __name__ == "__main__":
    main()
