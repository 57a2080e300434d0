"""Real source texts for the development corpora, from packages the registries carry, each as `Source`s.

Collections (kind of writing, language, where it comes from):

* `news`         — ABC (Australian) news stories of the Lee corpus, English; gensim's test data (PyPI `gensim`).
* `encyclopedia` — English Wikipedia articles (a shortened dump in gensim's test data), cut into sections.
* `bgwiki`       — Bulgarian Wikipedia articles (gensim's test data): a script and language without a stemmer.
* `manpages`     — manual pages as `man` renders them (wrapped plain text, option lists, little sentence
                   punctuation), in English and the localized pages Debian installs (de, fr, nl, ru, pl, it,
                   es, uk; packages man-db, manpages-*).
* `licenses`     — the long legal texts in /usr/share/common-licenses (Debian's base-files).
* `copyright`    — the licence texts of Debian's machine-readable /usr/share/doc/*/copyright files: the BSD, MIT
                   and GNU notices projects amend (a clause added or dropped, an exception), one text per name.
* `pydoc`        — prose of Python's own documentation (stdlib docstrings, the language reference topics).
* `bible`        — the verses of two English translations made by hand centuries apart, the King James Version
                   (1611, revised 1769) and the World English Bible (a modern rewording), as the SWORD modules of
                   Debian's sword-text-kjv and sword-text-web read by diatheke: the held-out rewrites.

Nothing is downloaded: each loader reads files installed on the machine and says what is missing.
"""
from __future__ import annotations

import bz2
import functools
import hashlib
import html
import importlib.util
import inspect
import itertools
import os
import re
import shutil
import subprocess
import sys
import warnings
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from benchmarks.lib.paths import OUT


@dataclass(frozen=True)
class Source:
    """One real text: `key` names it stably within its collection; `topic` is shared by parts of one text."""

    collection: str
    key: str
    lang: str
    text: str
    topic: str = ""


class SourceMissing(RuntimeError):
    """A collection's files are not on this machine; the message says what to install."""


_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")


def words(text: str) -> int:
    return len(text.split())


def stable_hash(value: str) -> int:
    """A hash that does not change between Python runs (str hashes do)."""
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest(), "big")


# --- gensim's test data: news, encyclopedia, Bulgarian wiki -------------------------------------------------

def _gensim_test_data() -> Path:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise SourceMissing("the news and Wikipedia texts come with gensim's test data: "
                            "pip install '.[bench]' (or pip install gensim)")
    path = Path(list(spec.submodule_search_locations)[0]) / "test" / "test_data"
    if not (path / "lee_background.cor").is_file():
        raise SourceMissing(f"gensim is installed without its test data ({path})")
    return path


def news() -> Iterator[Source]:
    """The 349 stories of the Lee corpus, one per line (ABC news, 2001–2002)."""
    data = _gensim_test_data()
    for name in ("lee_background.cor", "lee.cor"):
        for number, line in enumerate((data / name).read_text(encoding="latin-1").splitlines()):
            text = " ".join(line.split())
            if words(text) >= 40:
                yield Source("news", f"{name}:{number}", "en", text)


_WIKI_DROP = re.compile(r"^(see also|references|external links|further reading|notes|bibliography|sources|"
                        r"виж също|източници|външни препратки|бележки)\b", re.I)
_WIKI_HEADING = re.compile(r"^\s*(={2,})\s*(.*?)\s*\1\s*$", re.M)


def _wiki_sections(markup: str) -> list[tuple[str, str]]:
    """(heading, plain text) of each section of an article, markup removed by gensim's own wikitext filter."""
    from gensim.corpora.wikicorpus import filter_wiki

    pieces = _WIKI_HEADING.split(markup)
    sections = [("", pieces[0])] + [(pieces[i + 1], pieces[i + 2]) for i in range(1, len(pieces) - 2, 3)]
    kept = []
    for heading, body in sections:
        if _WIKI_DROP.match(heading.strip()):
            continue
        text = filter_wiki(body)
        paragraphs = []
        for para in _PARAGRAPH_BREAK.split(text):
            lines = [line.strip() for line in para.splitlines()
                     if line.strip() and not line.lstrip().startswith(("*", "#", "|", "!", "{", ":", ";"))]
            para = " ".join(" ".join(lines).split())
            if words(para) >= 8 and re.search(r"[.!?]$", para):
                paragraphs.append(para)
        if paragraphs:
            kept.append((heading.strip(), "\n\n".join(paragraphs)))
    return kept


def _wiki(collection: str, dump: str, lang: str, per_article: int) -> Iterator[Source]:
    data = _gensim_test_data()  # says what to install before gensim is imported
    from gensim.corpora.wikicorpus import extract_pages

    with bz2.open(data / dump) as stream:
        for title, markup, _page_id in extract_pages(stream):
            if ":" in title or markup.lstrip().lower().startswith("#redirect"):
                continue
            sections = [(h, t) for h, t in _wiki_sections(markup) if words(t) >= 60]
            for number, (heading, text) in enumerate(sections[:per_article]):
                yield Source(collection, f"{title}#{number}", lang, text, topic=f"{collection}:{title}")


def encyclopedia() -> Iterator[Source]:
    """Sections of English Wikipedia articles: the texts short answers are copied from; sections of one
    article share a topic (hard negatives for each other)."""
    return _wiki("encyclopedia", "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2", "en", 4)


def bgwiki() -> Iterator[Source]:
    return _wiki("bgwiki", "bgwiki-latest-pages-articles-shortened.xml.bz2", "none", 4)


# --- manual pages, as `man` renders them ------------------------------------------------------------------

#: man's language directory → the sketcher's language ("none" where Snowball has no stemmer).
MAN_LANGUAGES = {"": "en", "de": "de", "fr": "fr", "nl": "nl", "ru": "ru", "pl": "none", "it": "it",
                 "es": "es", "uk": "none"}
_MAN_CACHE = OUT / "man-cache"


def _render_man(path: Path) -> str:
    """The page as a reader sees it in a terminal 80 columns wide, cached (rendering costs ~0.1 s a page)."""
    digest = hashlib.blake2b(f"{path}:{path.stat().st_size}".encode(), digest_size=10).hexdigest()
    cached = _MAN_CACHE / f"{digest}.txt"
    if cached.exists():
        return cached.read_text(encoding="utf-8")
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8", "MANPAGER": "cat"}
    rendered = subprocess.run(["man", "--nh", "--nj", "-l", str(path)], env=env, capture_output=True,
                              timeout=60).stdout
    text = re.sub(r".\x08", "", rendered.decode("utf-8", "replace"))
    lines = text.splitlines()
    if lines and lines[0].strip().endswith(")"):  # the running header and footer repeat on every page
        lines = lines[1:]
    if lines and lines[-1].strip().endswith(")"):
        lines = lines[:-1]
    text = "\n".join(line.rstrip() for line in lines).strip("\n") + "\n"
    _MAN_CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(text, encoding="utf-8")
    return text


def require_man() -> None:
    if shutil.which("man") is None:
        raise SourceMissing("manual pages need man-db: apt-get install man-db")


def manpages(languages: dict[str, str] = MAN_LANGUAGES, per_language: int = 120) -> Iterator[Source]:
    """Pages of every language directory present, links and repeated pages counted once, without the thousands
    of generated `gcloud` pages. Pages are taken in the order of a stable hash of their name, so installing a
    package adds only the few of its pages that hash low instead of shifting the whole selection."""
    require_man()
    root = Path("/usr/share/man")
    with ThreadPoolExecutor(4) as pool:
        for directory, lang in languages.items():
            files = sorted({p.resolve() for section in ("man1", "man5", "man8")
                            for p in (root / directory / section).glob("*.gz")
                            if p.is_file() and not p.name.startswith(("gcloud", "bq", "gsutil"))},
                           key=lambda path: (stable_hash(path.name), path.name))
            taken = 0
            for start in range(0, len(files), 32):
                batch = files[start:start + 32]
                for path, text in zip(batch, pool.map(_render_man, batch)):
                    if 80 <= words(text) <= 6000 and taken < per_language:
                        yield Source("manpages", f"{directory or 'en'}/{path.name}", lang, text)
                        taken += 1
                if taken >= per_language:
                    break


# --- legal texts -------------------------------------------------------------------------------------------

#: One of each licence family: LGPL-2 and GFDL-1.2 are near-copies of LGPL-2.1 and GFDL-1.3 and would be
#: unlabelled duplicates; GPL-1 shares long passages with GPL-2.
LICENSES = ("Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.3", "GPL-2", "GPL-3", "LGPL-2.1", "LGPL-3",
            "MPL-1.1", "MPL-2.0")


def licenses(names: tuple[str, ...] = LICENSES) -> Iterator[Source]:
    root = Path("/usr/share/common-licenses")
    if not root.is_dir():
        raise SourceMissing("the legal texts are Debian's /usr/share/common-licenses (package base-files)")
    for name in names:
        path = root / name
        if path.is_file():
            yield Source("licenses", name, "en", path.read_text(encoding="utf-8"))


def spdx_licences() -> Iterator[Source]:
    """The licence texts of the SPDX License List as the `spdx` package on PyPI ships them (its data/*.txt; not
    those named deprecated_), which the development corpus never reads: the held-out licences
    (benchmarks/heldout.py)."""
    spec = importlib.util.find_spec("spdx")
    if spec is None or not spec.submodule_search_locations:
        raise SourceMissing("the held-out licence texts are the `spdx` package's: pip install spdx")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    for path in sorted(data.glob("*.txt")):
        if not path.name.startswith("deprecated_"):
            yield Source("spdx", path.stem, "en", path.read_text(encoding="utf-8", errors="replace").strip())


_DEP5_FORMAT = re.compile(r"^Format:.*(copyright-format|dep5)", re.I)


@functools.lru_cache(maxsize=1)
def copyright_licences() -> dict[str, Source]:
    """name → the text of the stand-alone `License:` paragraphs of Debian's machine-readable copyright files
    (40+ words) that most packages carry under that name, ties broken by the text, so the choice does not depend
    on the order packages were installed in."""
    counts: dict[str, Counter] = {}
    for path in sorted(Path("/usr/share/doc").glob("*/copyright")):
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not _DEP5_FORMAT.match(raw):
            continue
        for paragraph in _PARAGRAPH_BREAK.split(raw):
            name, _, body = paragraph.partition("\n")
            if not name.startswith("License:"):
                continue
            lines = itertools.takewhile(lambda line: line[:1] in (" ", "\t"), body.split("\n"))
            text = "\n".join("" if line.strip() == "." else line.strip() for line in lines).strip()
            if words(text) >= 40:
                counts.setdefault(name[len("License:"):].strip(), Counter())[text] += 1
    if not counts:
        raise SourceMissing("the licence notices are in Debian's machine-readable /usr/share/doc/*/copyright files")
    return {name: Source("copyright", name, "en", min(texts.items(), key=lambda item: (-item[1], item[0]))[0])
            for name, texts in counts.items()}


#: The SWORD modules of the two translations (bible_verses) and the range of the books both hold.
BIBLE_MODULES = {"kjv": "engKJV2006eb", "web": "engWEB2015eb"}
_BIBLE_RANGE = "Genesis 1:1-Revelation of John 22:21"
#: A verse's reference as diatheke writes it before the verse ("II Kings 3:16: "); what precedes it on the line is
#: a heading (a psalm's title), repeated before each verse.
_VERSE_REFERENCE = re.compile(r"((?:I{1,3} )?[A-Z][A-Za-z]+(?: [A-Za-z]+)*) (\d+):(\d+): ")
_MARKUP = re.compile(r"<title.*?</title>|<note.*?</note>|<[^>]*>")
#: A space the markup left inside a quote or before punctuation ("“ Let there be light ,”").
_MARKUP_SPACE = re.compile(r"(?<=[\u201c\u2018(]) | (?=[,.;:!?\u2019\u201d)])")


@functools.lru_cache(maxsize=None)
def bible_verses(translation: str) -> dict[tuple[str, int, int], str]:
    """(book, chapter, verse) → the verse's plain text in one translation of BIBLE_MODULES (headings, notes and
    markup left out)."""
    module = BIBLE_MODULES[translation]
    if shutil.which("diatheke") is None:
        raise SourceMissing("the held-out rewrites are read by diatheke: apt-get install diatheke sword-text-kjv "
                            "sword-text-web")
    listed = subprocess.run(["diatheke", "-b", "system", "-k", "modulelist"], capture_output=True, text=True).stdout
    if module not in listed:
        raise SourceMissing(f"the held-out rewrites need the SWORD module {module}: apt-get install "
                            f"sword-text-{translation}")
    osis = subprocess.run(["diatheke", "-b", module, "-f", "OSIS", "-k", _BIBLE_RANGE], capture_output=True,
                          text=True, check=True).stdout
    verses = {}
    for line in osis.splitlines():
        found = _VERSE_REFERENCE.search(line)
        if found:
            text = " ".join(html.unescape(_MARKUP.sub(" ", line[found.end():])).replace("\u00b6", " ").split())
            verses[(found.group(1), int(found.group(2)), int(found.group(3)))] = _MARKUP_SPACE.sub("", text)
    return {key: text for key, text in verses.items() if text}


# --- Python's documentation --------------------------------------------------------------------------------

_SKIPPED_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3",
                    "ensurepip", "pydoc_data", "msilib", "winreg", "winsound", "nt", "msvcrt"}


def _prose_paragraphs(doc: str) -> list[str]:
    kept = []
    for para in _PARAGRAPH_BREAK.split(inspect.cleandoc(doc)):
        lines = para.split("\n")
        if any(line.startswith((" ", "\t", ">>>", "...", "*", "-", "=", ":", "..")) for line in lines):
            continue
        text = " ".join(line.strip() for line in lines)
        if words(text) >= 6 and text[-1] in ".!?" and sum(c in "[]{}=_<>*|\\`" for c in text) <= len(text) // 60:
            kept.append(text)
    return kept


def pydoc() -> Iterator[Source]:
    """Articles of 150–600 words made of consecutive prose paragraphs of the stdlib's docstrings and pydoc's
    reference topics."""
    import contextlib
    import importlib
    import io

    from pydoc_data.topics import topics

    docs = [topics[key] for key in sorted(topics)]
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for name in sorted(sys.stdlib_module_names):
            if name.startswith("_") or name in _SKIPPED_MODULES:
                continue
            try:
                module = importlib.import_module(name)
            except Exception:  # platform-only or optional C modules
                continue
            docs.append(module.__doc__ or "")
            docs += [inspect.getdoc(obj) or "" for attr, obj in sorted(vars(module).items())
                     if not attr.startswith("_") and getattr(obj, "__module__", None) == name]
    seen, current, number = set(), [], 0
    for doc in docs:
        for para in _prose_paragraphs(doc):
            if para in seen:
                continue
            seen.add(para)
            current.append(para)
            if words("\n\n".join(current)) >= 150 + 450 * (stable_hash(str(number)) % 100) / 100:
                yield Source("pydoc", str(number), "en", "\n\n".join(current))
                current, number = [], number + 1


COLLECTIONS: dict[str, Callable[[], Iterator[Source]]] = {
    "news": news, "encyclopedia": encyclopedia, "bgwiki": bgwiki, "manpages": manpages, "licenses": licenses,
    "pydoc": pydoc,
}
