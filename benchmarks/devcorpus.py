"""Development corpus for detection quality: real texts, republished the ways the world republishes them, and
hard negatives that a naive detector takes for duplicates. Two splits: defaults are chosen on `tune`, quality is
reported on `test`, built from other source texts (and some collections and languages `tune` never sees) and
another seed.

Base texts are real (benchmarks/sources.py): ABC news stories, sections of English and Bulgarian Wikipedia
articles, manual pages in nine languages as `man` renders them, Debian's licence texts, Python's documentation.
A quarter of the news and encyclopedia texts are cut to their first 1–6 sentences, as short posts and answers
are. Base texts that already share much text (word 5-gram containment above DISTINCT_CONTAINMENT = 1/3, e.g. one
manual page including another, two pages of one tool family) are dropped, so no unlabelled near-duplicate
hides among them.

Copies (EDIT_FAMILIES), each from one original, with the edits spread over the whole text:
  edit          word substitutions, insertions and deletions at a rate of 1, 2, 5 or 10 % of the words;
  reword        most sentences get one edit (a light rewording), and some sentences are merged or split;
  format        punctuation, quotes, dashes, numbers and letter case changed;
  headline      a new or rewritten headline, with a dateline and a byline;
  unpunctuated  hard-wrapped plain text or a bullet list with the sentence punctuation gone;
  truncate      a shortened ending (55–90 % of the words kept);
  excerpt       the first 25–60 % and a link to the rest;
  boilerplate   a site's header, dateline and footer around the text;
  combined      a site's or a headline's wrapping, word edits at one of the rates, and one more change.
Hard negatives (NEGATIVE_FAMILIES): `shared_boilerplate` (a distinct text on a site whose header and footer
many other pages carry), `template` (one text with a city, date or job title changed: near-duplicates *as
text*, whose separation needs fields; evaluate.py leaves their pairs out of F1 and reports them apart), and
different sections of one Wikipedia article (same `topic`, different groups), and `quoting` (a distinct text
that quotes one to three sentences, at most a third, of another, as a story quotes a press release).

Each document: id, text, lang, group (same group = near-duplicates), family, source (collection), length
(bucket of the original: short < 120 words ≤ medium < 500 ≤ long), rate (share of words edited, 0 when
none), site, template, topic, quotes.

    python benchmarks/devcorpus.py [--split tune|test] [--seed N] [--size N] --out FILE.jsonl
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sources  # noqa: E402
from sources import Source, SourceMissing, stable_hash, words  # noqa: E402

SPLITS = ("tune", "test")
DEFAULT_SPLIT = "tune"
#: Each split has its own seed, so no edit of the test split was ever drawn while tuning.
SPLIT_SEEDS = {"tune": 7, "test": 1009}
DEFAULT_SIZE = 3000
EDIT_FAMILIES = ("edit", "reword", "format", "headline", "unpunctuated", "truncate", "excerpt", "boilerplate",
                 "combined")
NEGATIVE_FAMILIES = ("shared_boilerplate", "template", "quoting")
EDIT_RATES = (0.01, 0.02, 0.05, 0.10)
LENGTHS = ("short", "medium", "long")
#: Collections, languages and manual-page languages only the test split has.
TEST_ONLY_COLLECTIONS = {"bgwiki"}
TEST_ONLY_MAN_LANGUAGES = {"pl", "it", "es", "uk"}
TUNE_ONLY_COLLECTIONS = {"pydoc"}


@dataclass
class Doc:
    id: str
    text: str
    lang: str
    group: str
    family: str
    source: str = ""
    length: str = ""
    rate: float = 0.0
    site: str = ""
    template: str = ""
    topic: str = ""
    quotes: str = ""  # the group of the text this one quotes a passage of (a `quoting` negative)


def length_bucket(text: str) -> str:
    n = words(text)
    return "short" if n < 120 else "medium" if n < 500 else "long"


# Hard negatives: one text, one key slot filled with different values. {key} recurs, as cities do in ads.
TEMPLATES = [
    ("en", "Registered Nurse – {key}\n\nNorthfield Care Group is looking for a registered nurse to join our team "
     "in {key}. You will work on a friendly ward of twenty-four beds, caring for older patients after surgery "
     "and supporting their families during recovery. We offer a permanent contract of 32 to 36 hours a week, a "
     "salary between 2,900 and 3,800 euros a month depending on experience, and a travel allowance.\n\nYou hold "
     "a nursing degree and a valid registration, and you enjoy working in a small team where everyone helps "
     "each other. Interested? Send your motivation letter and CV before the end of the month to our "
     "recruitment office in {key}, or call our team for more information about this vacancy.",
     ["Leeds", "Bristol", "Cardiff", "Glasgow", "Sheffield", "Nottingham", "Leicester", "Coventry", "Bradford",
      "Belfast", "Plymouth", "Southampton", "Reading", "Derby", "Swansea", "Aberdeen", "Norwich", "Exeter",
      "York", "Oxford", "Cambridge", "Brighton", "Portsmouth", "Dundee", "Newport", "Preston", "Sunderland",
      "Bath", "Chester", "Durham", "Lincoln", "Carlisle"]),
    ("en", "Harbour Bridge closed for maintenance on {key}\n\nThe Harbour Bridge will be closed to all traffic "
     "from six in the morning until ten in the evening on {key}, the city's transport department announced. "
     "Engineers will replace expansion joints and inspect the cables that carry the main deck. Buses will be "
     "diverted over the Ferry Road bridge, and extra trams will run between the old town and the business "
     "district.\n\nCyclists and pedestrians can still use the footpath on the western side. Drivers are advised "
     "to plan more time for their journeys and to avoid the city centre during the morning rush. The department "
     "apologises for the inconvenience and will publish updates on its website on {key}.",
     [f"{day} {month}" for month in ("May", "June", "July", "September") for day in (3, 10, 17, 24)]
     + ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]),
    ("en", "Brightwater Logistics is hiring: {key}\n\nBrightwater Logistics, a family company with depots across "
     "the region, is looking for an experienced {key} for our central site. As a {key} you will be part of a "
     "team of forty colleagues who keep goods moving every day of the week. We value reliability, good humour "
     "and a careful way of working.\n\nWe offer a full-time position, paid overtime, a company pension, and "
     "training at our own academy. Previous experience as a {key} is an advantage but not required if you are "
     "eager to learn. Apply online with your CV; we reply to every application within five working days.",
     ["electrician", "plumber", "welder", "accountant", "mechanic", "driver", "cook", "cleaner", "carpenter",
      "painter", "receptionist", "cashier", "planner", "gardener", "translator", "dispatcher", "technician",
      "surveyor", "courier", "locksmith", "roofer", "buyer", "storekeeper", "controller", "administrator",
      "engineer", "operator", "inspector", "scheduler", "analyst"]),
    ("nl", "Vacature: verpleegkundige in {key}\n\nZorggroep De Linde zoekt voor de afdeling geriatrie in {key} een "
     "enthousiaste verpleegkundige. Je werkt in een klein team en zorgt voor oudere patiënten die herstellen "
     "van een operatie. Wij bieden een vast contract voor 28 tot 36 uur per week, een goed salaris volgens de "
     "cao en een reiskostenvergoeding.\n\nJe hebt een afgeronde opleiding verpleegkunde en een geldige "
     "registratie. Herken je jezelf in dit profiel? Stuur dan je motivatie en cv naar ons kantoor in {key}. "
     "Voor vragen over deze vacature kun je bellen met de afdeling personeelszaken.",
     ["Utrecht", "Zwolle", "Arnhem", "Nijmegen", "Groningen", "Leeuwarden", "Haarlem", "Leiden", "Delft",
      "Breda", "Tilburg", "Eindhoven", "Maastricht", "Venlo", "Deventer", "Enschede", "Apeldoorn", "Amersfoort",
      "Alkmaar", "Dordrecht", "Gouda", "Almere", "Lelystad", "Assen", "Emmen", "Middelburg", "Roermond",
      "Hilversum", "Zaandam", "Schiedam"]),
    ("ru", "Требуется водитель в городе {key}\n\nТранспортная компания «Север» приглашает на работу водителя "
     "категории C в наш филиал в городе {key}. Мы предлагаем официальное трудоустройство, стабильную зарплату "
     "два раза в месяц и оплачиваемый отпуск. График работы пять дней в неделю, машины новые и исправные.\n\n"
     "Мы ждём кандидатов с опытом работы от двух лет и без серьёзных нарушений. Резюме можно отправить через "
     "сайт или принести в офис компании в городе {key}. Наш менеджер свяжется с вами в течение трёх дней.",
     ["Казань", "Самара", "Пермь", "Уфа", "Тюмень", "Омск", "Томск", "Барнаул", "Иркутск", "Хабаровск",
      "Владимир", "Ярославль", "Кострома", "Тверь", "Рязань", "Тула", "Калуга", "Смоленск", "Брянск", "Курск",
      "Липецк", "Воронеж", "Саратов", "Пенза", "Ульяновск", "Оренбург", "Челябинск", "Курган", "Кемерово",
      "Чита"]),
    ("de", "Stellenangebot: Elektriker in {key}\n\nDie Firma Berger Haustechnik sucht für ihre Niederlassung in "
     "{key} einen Elektriker in Vollzeit. Sie installieren und warten elektrische Anlagen in Wohnhäusern und "
     "Büros und arbeiten dabei eng mit unseren Heizungsbauern zusammen. Wir bieten einen unbefristeten Vertrag, "
     "ein Firmenfahrzeug und regelmäßige Weiterbildungen.\n\nSie haben eine abgeschlossene Ausbildung und einen "
     "Führerschein der Klasse B. Senden Sie Ihre Bewerbung an unser Büro in {key}. Wir freuen uns darauf, Sie "
     "kennenzulernen.",
     ["Freiburg", "Karlsruhe", "Mannheim", "Heidelberg", "Stuttgart", "Ulm", "Augsburg", "Regensburg",
      "Nürnberg", "Würzburg", "Bamberg", "Erfurt", "Jena", "Leipzig", "Dresden", "Chemnitz", "Halle",
      "Magdeburg", "Kassel", "Göttingen", "Hannover", "Bremen", "Kiel", "Lübeck", "Rostock", "Münster",
      "Bielefeld", "Dortmund", "Essen", "Bonn"]),
]


# --- sites: boilerplate that different articles share ----------------------------------------------------

_SITE_NAMES = {
    "en": ["Example News", "The Daily Ledger", "Northern Courier", "Metro Wire"],
    "nl": ["Nieuwsblad Oost"],
    "ru": ["Городские новости"],
    "de": ["Südkurier Online"],
}
_SECTIONS = {
    "en": ["World", "Business", "Tech", "Sport", "Culture", "Opinion", "Science", "Travel", "Health", "Local"],
    "nl": ["Binnenland", "Buitenland", "Economie", "Sport", "Cultuur", "Regio"],
    "ru": ["Город", "Экономика", "Спорт", "Культура", "Общество"],
    "de": ["Politik", "Wirtschaft", "Sport", "Kultur", "Region"],
}
_BOILERPLATE = {
    "en": (["{name} | {sections}", "Subscribe | Sign in | Search", "Share this article"],
           ["Share this article: Facebook, Twitter, LinkedIn, Email.",
            "Sign up for the {name} newsletter and get the day's top stories delivered to your inbox every "
            "morning.",
            "We use cookies to improve your experience on our site. By continuing to browse you agree to our use "
            "of cookies. Read our privacy policy to find out more.",
            "Most read: {sections}",
            "© 2026 {name}. All rights reserved. Reproduction without permission is prohibited."]),
    "nl": (["{name} | {sections}", "Abonneren | Inloggen | Zoeken", "Deel dit artikel"],
           ["Deel dit artikel via Facebook, Twitter of e-mail.",
            "Meld je aan voor de nieuwsbrief van {name} en ontvang elke ochtend het belangrijkste nieuws.",
            "Wij gebruiken cookies om je ervaring op onze site te verbeteren. Lees ons privacybeleid.",
            "© 2026 {name}. Alle rechten voorbehouden."]),
    "ru": (["{name} | {sections}", "Подписка | Войти | Поиск", "Поделиться статьёй"],
           ["Поделитесь этой статьёй в социальных сетях.",
            "Подпишитесь на рассылку «{name}» и получайте главные новости дня каждое утро.",
            "Мы используем файлы cookie, чтобы сайт работал лучше. Продолжая просмотр, вы соглашаетесь с этим.",
            "© 2026 {name}. Все права защищены."]),
    "de": (["{name} | {sections}", "Abonnieren | Anmelden | Suche", "Artikel teilen"],
           ["Teilen Sie diesen Artikel auf Facebook, Twitter oder per E-Mail.",
            "Melden Sie sich für den Newsletter von {name} an und erhalten Sie jeden Morgen die wichtigsten "
            "Nachrichten.",
            "Wir verwenden Cookies, um Ihr Erlebnis zu verbessern. Mehr dazu in unserer Datenschutzerklärung.",
            "© 2026 {name}. Alle Rechte vorbehalten."]),
}
_DATELINE = {"en": "Published {day} {month} 2026, {hh}:{mm}", "nl": "Gepubliceerd op {day} {month} 2026",
             "ru": "Опубликовано {day}.{mnum:02d}.2026", "de": "Veröffentlicht am {day}. {month} 2026"}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_CAPTION_WHO = ["Maria Lopez", "James Carter", "Anna de Vries", "Olga Petrova", "Thomas Müller", "Sara Jansen",
                "the mayor", "a spokesperson", "the minister", "local residents"]
_CAPTION_WHERE = ["the city centre", "the harbour", "the old town", "the market square", "the station",
                  "the university", "the river bank", "the industrial park"]
_AGENCIES = ["Example Agency", "Northlight Images", "Wire Photo", "Staff Photographer", "PressPool"]
_EXCERPT_LINK = {"en": "Read the full article at {name}.", "nl": "Lees het volledige artikel bij {name}.",
                 "ru": "Полная версия статьи на сайте «{name}».", "de": "Den ganzen Artikel lesen Sie bei {name}."}


@dataclass(frozen=True)
class Site:
    name: str
    lang: str
    header: tuple[str, ...]
    footer: tuple[str, ...]


def _sites(rng: random.Random) -> list[Site]:
    sites = []
    for lang, names in _SITE_NAMES.items():
        header, footer = _BOILERPLATE[lang]
        for name in names:
            sections = " | ".join(rng.sample(_SECTIONS[lang], 5))
            fill = lambda line: line.format(name=name, sections=sections)  # noqa: E731
            sites.append(Site(name, lang, tuple(map(fill, header)), tuple(map(fill, footer))))
    return sites


# --- edits -----------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")
_TOKEN = re.compile(r"\S+|\s+")
_WORD_CORE = re.compile(r"[^\W_]+")
#: Small words an editor inserts, per language; other languages insert words of the text itself.
_FILLERS = {"en": "also very just now still the a more only even then often".split(),
            "de": "auch sehr nur noch jetzt die der mehr schon dann".split(),
            "nl": "ook zeer nog nu wel de het meer al dan".split(),
            "fr": "aussi très encore le la plus déjà alors".split(),
            "ru": "также очень ещё уже только тоже более".split()}


def _paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n[^\S\n]*\n", text) if p.strip()]


def _sentences(text: str) -> list[str]:
    return [s for p in _paragraphs(text) for s in _SENTENCE_END.split(" ".join(p.split()))]


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + word[-1]
    i = rng.randrange(len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def _inflected(word: str, rng: random.Random) -> str:
    """Another form of the word: a suffix added or removed, as "report" → "reported"."""
    if len(word) > 4 and rng.random() < 0.5:
        return word[:-1]
    return word + rng.choice(["s", "ed", "e", "en", "ing"])


class _Editor:
    """Word-level edits of one text: substitutions (another word of the text, a typo, another form of the
    word), insertions and deletions, at chosen positions, keeping whitespace and punctuation around them."""

    def __init__(self, text: str, lang: str, rng: random.Random):
        self.tokens = _TOKEN.findall(text)
        self.rng = rng
        self.word_positions = [i for i, t in enumerate(self.tokens) if _WORD_CORE.search(t)]
        vocabulary = sorted({m.group() for t in self.tokens for m in [_WORD_CORE.search(t)] if m and len(m.group()) > 2})
        self.vocabulary = vocabulary or ["word"]
        self.fillers = _FILLERS.get(lang) or self.vocabulary

    def edit(self, position: int) -> None:
        token = self.tokens[position]
        match = _WORD_CORE.search(token)
        if match is None:
            return
        core = match.group()
        kind = self.rng.random()
        if kind < 0.6:
            style = self.rng.random()
            if style < 0.55:
                new = self.rng.choice(self.vocabulary)
            elif style < 0.8:
                new = _typo(core, self.rng)
            else:
                new = _inflected(core, self.rng)
            self.tokens[position] = token[:match.start()] + new + token[match.end():]
        elif kind < 0.8:
            self.tokens[position] = self.rng.choice(self.fillers) + " " + token
        else:
            # the punctuation of a deleted word stays with the text
            self.tokens[position] = token[:match.start()] + token[match.end():]

    def spread(self, rate: float) -> float:
        """Edits round(rate × words) positions drawn over the whole text; returns the share of words edited."""
        count = max(1, round(rate * len(self.word_positions)))
        for position in self.rng.sample(self.word_positions, min(count, len(self.word_positions))):
            self.edit(position)
        return count / max(1, len(self.word_positions))

    def text(self) -> str:
        return re.sub(r"[^\S\n]{2,}", " ", "".join(self.tokens))


def edited(text: str, lang: str, rate: float, rng: random.Random) -> tuple[str, float]:
    editor = _Editor(text, lang, rng)
    actual = editor.spread(rate)
    return editor.text(), actual


def reworded(text: str, lang: str, rng: random.Random) -> tuple[str, float]:
    """One edit in 80 % of the sentences, then 1–3 sentences merged with the next or split at a comma."""
    out_paragraphs, edits, total = [], 0, 0
    for para in _paragraphs(text):
        sentences = _SENTENCE_END.split(" ".join(para.split()))
        new = []
        for sentence in sentences:
            editor = _Editor(sentence, lang, rng)
            total += len(editor.word_positions)
            if editor.word_positions and rng.random() < 0.8:
                editor.edit(rng.choice(editor.word_positions))
                edits += 1
            new.append(editor.text())
        out_paragraphs.append(new)
    flat = [(p, s) for p, sentences in enumerate(out_paragraphs) for s in range(len(sentences))]
    for _ in range(rng.randint(1, 3)):
        p, s = rng.choice(flat)
        sentences = out_paragraphs[p]
        if s >= len(sentences):
            continue
        sentence = sentences[s]
        comma = sentence.find(", ", len(sentence) // 3)
        if rng.random() < 0.5 and comma > 0:
            rest = sentence[comma + 2:]
            sentences[s:s + 1] = [sentence[:comma] + ".", rest[:1].upper() + rest[1:]]
        elif s + 1 < len(sentences) and sentence.endswith("."):
            following = sentences[s + 1]
            sentences[s:s + 2] = [sentence[:-1] + f", {_AND.get(lang, '')} ".replace("  ", " ")
                                  + following[:1].lower() + following[1:]]
    return "\n\n".join(" ".join(s) for s in out_paragraphs), edits / max(1, total)


_AND = {"en": "and", "de": "und", "nl": "en", "fr": "et", "ru": "и", "es": "y", "it": "e"}
_QUOTES = [("\"", "“", "”"), ("'", "‘", "’")]


def reformatted(text: str, rng: random.Random) -> str:
    """Typography and house style: quotes, dashes, thousands separators, percent signs, letter case, spacing."""
    if rng.random() < 0.7:
        for straight, left, right in _QUOTES:
            if straight in text:
                parts = text.split(straight)
                text = "".join(part + (left if i % 2 == 0 else right) for i, part in enumerate(parts[:-1])) + parts[-1]
            else:
                text = text.replace(left, straight).replace(right, straight)
    text = text.replace(" -- ", " — ") if rng.random() < 0.5 else text.replace(" — ", " - ")
    if rng.random() < 0.6:
        text = re.sub(r"\b(\d{1,3}),(\d{3})\b", r"\1\2", text) if "," in text else \
            re.sub(r"\b(\d)(\d{3})\b", r"\1,\2", text)
    if rng.random() < 0.5:
        text = re.sub(r"(\d) ?per ?cent\b", r"\1%", text) if "per cent" in text else text.replace("%", " percent")
    sentences = _sentences(text)
    if sentences and rng.random() < 0.6:
        first = sentences[0]
        text = text.replace(first, first.upper() if rng.random() < 0.5 else first.title(), 1)
    if rng.random() < 0.5:
        text = re.sub(r"([.!?]) (?=[A-ZА-Я])", r"\1  ", text)  # two spaces after a full stop
    return text


_HEADLINE_PREFIX = {"en": ["UPDATE:", "BREAKING:", "Exclusive:", ""], "de": ["Aktuell:", ""], "nl": ["Update:", ""],
                    "fr": ["Mise à jour :", ""], "ru": ["Срочно:", ""]}
_BYLINE = ["By {who}", "{who}, staff reporter", "{who} | {agency}", "From {agency} reports"]


def _headline(text: str, lang: str, rng: random.Random) -> str:
    first = _sentences(text)[:1] or [text]
    head_words = _WORD_CORE.findall(first[0])[: rng.randint(4, 9)]
    return (rng.choice(_HEADLINE_PREFIX.get(lang, [""])) + " " + " ".join(head_words).title()).strip()


def with_headline(text: str, lang: str, rng: random.Random) -> str:
    """A new headline, dateline and byline on top; an existing short first line (a title) is replaced."""
    lines = text.split("\n", 1)
    if len(lines) == 2 and words(lines[0]) <= 12 and not lines[0].rstrip().endswith("."):
        text = lines[1].lstrip("\n")
    byline = rng.choice(_BYLINE).format(who=rng.choice(_CAPTION_WHO).title(), agency=rng.choice(_AGENCIES))
    month = rng.randrange(12)
    dateline = _DATELINE.get(lang, _DATELINE["en"]).format(
        day=rng.randint(1, 28), month=_MONTHS[month], mnum=month + 1, hh=f"{rng.randint(6, 22):02d}",
        mm=f"{rng.randint(0, 59):02d}")
    return f"{_headline(text, lang, rng)}\n{byline}\n{dateline}\n\n{text}"


def unpunctuated(text: str, rng: random.Random) -> str:
    """Plain text as tables, listings and old mail carry it: hard-wrapped with the sentence stops removed, or
    one bullet per sentence without its stop."""
    sentences = [re.sub(r"[.!?;:]+([\"')\]]*)$", r"\1", s) for s in _sentences(text)]
    if rng.random() < 0.5:
        return "\n".join(f"{rng.choice(['-', '*', '•'])} {s}" for s in sentences)
    flat = " ".join(sentences)
    return _wrap(re.sub(r"[.!?](?=\s)", "", flat), rng.randint(45, 80))


def _wrap(paragraph: str, width: int) -> str:
    lines, line = [], ""
    for word in paragraph.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def _cut(text: str, share: float) -> str:
    """The text up to `share` of its words, ending at the last sentence end before the cut when there is one in
    the last fifth, else mid-sentence (as a length limit cuts)."""
    target = max(8, round(words(text) * share))
    positions = [m.end() for m in re.finditer(r"\S+", text)]
    cut = positions[min(target, len(positions)) - 1]
    ends = [m.start() + 1 for m in _SENTENCE_END.finditer(text, 0, cut)]
    if ends and ends[-1] > cut * 0.8:
        cut = ends[-1]
    return text[:cut].rstrip()


def truncated(text: str, rng: random.Random) -> str:
    return _cut(text, rng.uniform(0.55, 0.9))


def excerpt(text: str, lang: str, site: "Site", rng: random.Random) -> str:
    return _cut(text, rng.uniform(0.25, 0.6)) + " …\n\n" + _EXCERPT_LINK.get(lang, _EXCERPT_LINK["en"]).format(
        name=site.name)


def with_boilerplate(text: str, site: "Site", rng: random.Random) -> str:
    """The site's header, a dateline that differs per page, the text, the site's footer."""
    month = rng.randrange(12)
    dateline = _DATELINE[site.lang].format(day=rng.randint(1, 28), month=_MONTHS[month], mnum=month + 1,
                                           hh=f"{rng.randint(6, 22):02d}", mm=f"{rng.randint(0, 59):02d}")
    return "\n".join(site.header) + "\n" + dateline + "\n\n" + text + "\n\n" + "\n".join(site.footer)


def quoting(text: str, quoted: str, rng: random.Random) -> str:
    """A distinct text with one to three consecutive sentences of another (at most a third of it) placed
    between its paragraphs."""
    sentences = _sentences(quoted)
    count = min(len(sentences) // 3, rng.randint(1, 3))
    start = rng.randrange(len(sentences) - count + 1)
    # a third of the words too: one long sentence of a short page can be most of it
    words_allowed = max(1, len(quoted.split()) // 3)
    passage = "“" + " ".join(" ".join(sentences[start:start + count]).split()[:words_allowed]) + "”"
    paragraphs = _paragraphs(text)
    paragraphs.insert(rng.randint(0, len(paragraphs)), passage)
    return "\n\n".join(paragraphs)


def republish(text: str, lang: str, family: str, site: "Site", rng: random.Random) -> tuple[str, float]:
    """One copy of text under an edit family, and the share of its words edited."""
    if family == "edit":
        return edited(text, lang, rng.choice(EDIT_RATES), rng)
    if family == "reword":
        return reworded(text, lang, rng)
    if family == "format":
        return reformatted(text, rng), 0.0
    if family == "headline":
        return with_headline(text, lang, rng), 0.0
    if family == "unpunctuated":
        return unpunctuated(text, rng), 0.0
    if family == "truncate":
        return truncated(text, rng), 0.0
    if family == "excerpt":
        return excerpt(text, lang, site, rng), 0.0
    if family == "boilerplate":
        return with_boilerplate(text, site, rng), 0.0
    if family == "combined":
        text, rate = edited(text, lang, rng.choice(EDIT_RATES), rng)
        extra = rng.choice(["format", "unpunctuated", "truncate", "reword"])
        text, more = republish(text, lang, extra, site, rng)
        text = with_boilerplate(text, site, rng) if rng.random() < 0.5 else with_headline(text, lang, rng)
        return text, rate + more
    raise ValueError(f"unknown edit family {family!r}")


# --- the corpus ------------------------------------------------------------------------------------------

def in_split(source: Source, split: str) -> bool:
    """Which split a real text belongs to: by a stable hash of its topic or key, so the splits share no text
    (sections of one article stay together); some collections and languages belong to one split only."""
    if source.collection in TEST_ONLY_COLLECTIONS or (
            source.collection == "manpages" and source.key.split("/")[0] in TEST_ONLY_MAN_LANGUAGES):
        return split == "test"
    if source.collection in TUNE_ONLY_COLLECTIONS:
        return split == "tune"
    return ("tune", "test")[stable_hash(source.topic or source.key) % 2] == split


def load_sources(split: str, required: bool = True) -> list[Source]:
    """The split's real texts from every collection; with required=False a missing collection is skipped with
    a note on stderr (the sample corpus), otherwise SourceMissing says what to install. A text that repeats an
    earlier one under another key (the Lee corpus holds a few stories twice; some manual pages are links by
    another name) is dropped before the split, so no text is on both sides."""
    texts, seen = [], set()
    for name, load in sources.COLLECTIONS.items():
        try:
            for source in load():
                if source.text not in seen:
                    seen.add(source.text)
                    texts += [source] if in_split(source, split) else []
        except SourceMissing as missing:
            if required:
                raise
            print(f"devcorpus: {name} skipped: {missing}", file=sys.stderr)
    return texts


def _shortened(source: Source, rng: random.Random) -> Source:
    """The first 1–6 sentences of a text, as a short post or answer is (at least 20 words)."""
    sentences = _sentences(source.text)
    keep = rng.randint(1, 6)
    while keep < len(sentences) and words(" ".join(sentences[:keep])) < 20:
        keep += 1
    return Source(source.collection, source.key, source.lang, " ".join(sentences[:keep]), source.topic)


def _shingles(text: str) -> set[str]:
    tokens = _WORD_CORE.findall(text.lower())
    return {" ".join(tokens[i:i + 5]) for i in range(max(1, len(tokens) - 4))}


#: Base texts sharing more of their word 5-grams than this are not distinct: the most a `quoting` negative takes
#: of its source. Between that and a near-duplicate lies no label the corpus could defend (two manual pages of
#: one tool family sharing 45 % of their text are neither), so such pairs are left out rather than guessed.
DISTINCT_CONTAINMENT = 1 / 3


def distinct(texts: list[Source], limit: float = DISTINCT_CONTAINMENT) -> list[Source]:
    """Drops every text that shares more than `limit` of its word 5-grams with an earlier one (a page that
    includes another, a section repeated in two articles), so no unlabelled duplicate stays among the
    originals."""
    kept, index = [], {}
    for source in texts:
        shingles = _shingles(source.text)
        counts = Counter(j for s in shingles for j in index.get(s, ()))
        if any(count > limit * min(len(shingles), kept_size) for j, count in counts.items()
               for kept_size in [len(kept[j][1])]):
            continue
        for s in shingles:
            index.setdefault(s, []).append(len(kept))
        kept.append((source, shingles))
    return [source for source, _ in kept]


def generate(split: str = DEFAULT_SPLIT, size: int = DEFAULT_SIZE, seed: int | None = None,
             required: bool = True) -> list[Doc]:
    """The labelled corpus of a split: at most `size` documents."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    rng = random.Random(SPLIT_SEEDS[split] if seed is None else seed)
    bases = load_sources(split, required)
    bases = [_shortened(s, rng) if s.collection in ("news", "encyclopedia", "bgwiki") and rng.random() < 0.25
             else s for s in bases]
    bases = distinct(bases)
    rng.shuffle(bases)
    sites = _sites(rng)
    sites_by_lang = {lang: [s for s in sites if s.lang == lang] for lang in _SITE_NAMES}
    docs: list[Doc] = []

    def add(text: str, base: Source | None, group: str, family: str, lang: str, length: str, rate: float = 0.0,
            site: Site | None = None, template: str = "") -> None:
        docs.append(Doc(f"{split[:2]}{len(docs):06d}", text, lang, group, family,
                        base.collection if base else "templates", length, round(rate, 4),
                        site.name if site else "", template, base.topic if base else ""))

    def add_copies(text: str, base: Source | None, lang: str, group: str, length: str, home: Site | None,
                   count: int, template: str = "") -> None:
        candidates = sites_by_lang.get(lang) or sites_by_lang["en"]
        for _ in range(count):
            family = rng.choice(EDIT_FAMILIES)
            site = rng.choice([s for s in candidates if s != home] or candidates)
            copy, rate = republish(text, lang, family, site, rng)
            add(copy, base, group, family, lang, length, rate,
                site if family in ("boilerplate", "combined", "excerpt") else None, template)

    for t, (lang, template, keys) in enumerate(TEMPLATES):
        for v, key in enumerate(keys):
            text = template.format(key=key)
            add(text, None, f"{split}-t{t}v{v}", "template", lang, length_bucket(text), template=f"t{t}")
            if rng.random() < 0.25:
                add_copies(text, None, lang, f"{split}-t{t}v{v}", length_bucket(text), None, rng.randint(1, 2),
                           f"t{t}")
    for b, base in enumerate(bases):
        if len(docs) >= size:
            break
        group, length = f"{split}-g{b:05d}", length_bucket(base.text)
        site_langs = sites_by_lang.get(base.lang)
        if site_langs and base.collection in ("news", "encyclopedia") and rng.random() < 0.15:
            site = rng.choice(site_langs)
            add(with_boilerplate(base.text, site, rng), base, group, "shared_boilerplate", base.lang, length,
                site=site)
            continue
        quoted = [d for d in docs[-200:] if d.family == "original" and d.lang == base.lang and d.site == ""
                  and len(_sentences(d.text)) >= 6]
        if quoted and rng.random() < 0.08:
            source = rng.choice(quoted)
            add(quoting(base.text, source.text, rng), base, group, "quoting", base.lang, length)
            docs[-1].quotes = source.group
            continue
        home = rng.choice(site_langs) if site_langs and base.collection == "news" and rng.random() < 0.6 else None
        add(with_boilerplate(base.text, home, rng) if home else base.text, base, group, "original", base.lang,
            length, site=home)
        # a few stories are syndicated widely: the stop-list must not take them for boilerplate
        count = rng.randint(10, 20) if rng.random() < 0.02 else rng.choice([0, 1, 1, 2, 2, 3, 4, 5])
        add_copies(base.text, base, base.lang, group, length, home, count)
    return docs[:size]


def write_jsonl(docs: list[Doc], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(asdict(doc), ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[Doc]:
    with path.open(encoding="utf-8") as lines:
        return [Doc(**json.loads(line)) for line in lines]


# --- evaluation result sets ------------------------------------------------------------------------------

#: A scope: which copies count as the duplicates of a result set (per family, edit rate, length, language).
Scope = Callable[[Doc], bool]


def nominal_rate(doc: Doc) -> float | None:
    """The edit rate a copy was made at (the nearest of EDIT_RATES), None for copies without word edits."""
    if doc.family not in ("edit", "combined"):
        return None
    return min(EDIT_RATES, key=lambda rate: abs(rate - doc.rate))


def scopes() -> dict[str, Scope]:
    """Named scopes: each edit family, each edit rate, each length bucket, each language."""
    named: dict[str, Scope] = {f"family {f}": (lambda d, f=f: d.family == f) for f in EDIT_FAMILIES}
    named |= {f"rate {r:.0%}": (lambda d, r=r: nominal_rate(d) == r) for r in EDIT_RATES}
    named |= {f"length {n}": (lambda d, n=n: d.length == n) for n in LENGTHS}
    return named


def language_scopes(docs: list[Doc]) -> dict[str, Scope]:
    return {f"lang {lang}": (lambda d, lang=lang: d.lang == lang)
            for lang in sorted({d.lang for d in docs if d.family in EDIT_FAMILIES})}


def draw_result_sets(docs: list[Doc], count: int, seed: int = 0, size: int = 100,
                     scope: Scope | None = None) -> list[list[int]]:
    """Result sets as a search would return them: `size` document indexes in rank order, 20–40 % of them
    near-duplicates of another member; as hard negatives a few pages of one site, a few variants of one template,
    sections of one article and texts with the texts they quote; the rest unrelated. With `scope`, every duplicate in a set is an original
    plus copies the scope accepts, so a family's (rate's, length's, language's) quality is measured on its own."""
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        groups.setdefault(doc.group, []).append(i)
    first = {"original", "template"}
    dup_groups = [[m for m in members if docs[m].family in first]
                  + [m for m in members if docs[m].family not in first and (scope is None or scope(docs[m]))]
                  for members in groups.values()]
    dup_groups = [members for members in dup_groups if len(members) > 1 and docs[members[0]].family in first]
    if not dup_groups:
        return []
    clusters: dict[tuple[str, str], list[int]] = {}
    for i, doc in enumerate(docs):
        if doc.family == "shared_boilerplate":
            clusters.setdefault(("site", doc.site), []).append(i)
        elif doc.family == "template":
            clusters.setdefault(("template", doc.template), []).append(i)
        elif doc.family == "original" and doc.topic:
            clusters.setdefault(("topic", doc.topic), []).append(i)
    by_group = {doc.group: i for i, doc in enumerate(docs) if doc.family == "original"}
    for i, doc in enumerate(docs):
        if doc.family == "quoting" and doc.quotes in by_group:
            clusters[("quote", doc.group)] = [by_group[doc.quotes], i]
    negative_kinds = {kind: sorted(k for k, v in clusters.items() if k[0] == kind and len(v) >= 2)
                      for kind in ("site", "template", "topic", "quote")}
    sets = []
    for _ in range(count):
        chosen: list[int] = []
        used: set[str] = set()
        for kind, keys in negative_kinds.items():
            for key in rng.sample(keys, min(len(keys), {"topic": 2, "quote": 3}.get(kind, 1))):
                members = [m for m in clusters[key] if docs[m].group not in used]
                picked = rng.sample(members, min(len(members), rng.randint(2, 5)))
                chosen += picked
                used |= {docs[m].group for m in picked}
        duplicates_wanted = round(size * rng.uniform(0.2, 0.4))
        duplicates = 0
        for members in rng.sample(dup_groups, len(dup_groups)):
            if duplicates >= duplicates_wanted:
                break
            if docs[members[0]].group in used:
                continue
            picked = rng.sample(members, min(len(members), rng.randint(2, 3), duplicates_wanted - duplicates + 1))
            chosen += picked
            duplicates += len(picked) - 1
            used.add(docs[members[0]].group)
        for i in rng.sample(range(len(docs)), len(docs)):
            if len(chosen) >= size:
                break
            if docs[i].group not in used and docs[i].family in ("original", *NEGATIVE_FAMILIES):
                chosen.append(i)
                used.add(docs[i].group)
        rng.shuffle(chosen)
        sets.append(chosen)
    return sets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default=DEFAULT_SPLIT)
    parser.add_argument("--seed", type=int, help="the edits' seed (default: the split's own)")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="at most this many documents")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/devcorpus.jsonl"))
    parser.add_argument("--sample", action="store_true",
                        help="skip collections whose packages are not installed (a sample, not for figures)")
    args = parser.parse_args(argv)
    try:
        docs = generate(args.split, args.size, args.seed, required=not args.sample)
    except SourceMissing as missing:
        parser.exit(2, f"devcorpus: {missing} (or pass --sample to skip that collection)\n")
    write_jsonl(docs, args.out)
    print(f"{len(docs)} documents in {len({d.group for d in docs})} groups ({args.split} split) → {args.out}")
    for field in ("family", "source", "lang", "length"):
        print(f"  {field}: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(getattr(d, field) for d in docs).items())))


if __name__ == "__main__":
    main()
