"""Development corpus for detection quality: real prose that ships with Python, republished the ways news and
job sites republish, plus hard negatives that a naive detector takes for duplicates.

Why generated: no download is possible here, and labels must be exact. The base texts are real (stdlib
docstrings, pydoc's reference topics, the history section of Python's LICENSE, the Zen of Python) plus a few
Dutch, Russian and German articles and job-ad templates written for this file. The corpus depends on the
Python version (its docstrings) and the seed, nothing else.

Each document: id, text, lang, group (same group = near-duplicates), family (how it was made), site (whose
header/footer boilerplate it carries, "" for none), template (the template a hard-negative variant came from).

Families: `original` (the first publication), the edit families in EDIT_FAMILIES (one edit each, `combined`
two or three at once), and the hard negatives `shared_boilerplate` (a distinct article on a site whose
boilerplate many other documents carry) and `template` (the same text with one key word changed: another
city, date or job title). Hard negatives are alone in their group unless they were themselves reposted.

    python benchmarks/devcorpus.py --seed 7 --out benchmarks/out/devcorpus.jsonl [--size N]
"""
from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import inspect
import io
import json
import pkgutil
import random
import re
import sys
import sysconfig
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

DEFAULT_SEED = 7
DEFAULT_SIZE = 3000
EDIT_FAMILIES = ("boilerplate", "caption", "truncate", "drop", "edit", "reflow", "excerpt", "combined")
NEGATIVE_FAMILIES = ("shared_boilerplate", "template")

# Modules that open windows or browsers, print on import, or hold test data rather than prose.
_SKIPPED_MODULES = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test", "lib2to3",
                    "ensurepip", "pydoc_data", "msilib", "winreg", "winsound", "nt", "msvcrt"}
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
_CODE_CHARS = set("[]{}=_<>*|\\`")


@dataclass
class Doc:
    id: str
    text: str
    lang: str
    group: str
    family: str
    site: str = ""
    template: str = ""


# --- base texts ------------------------------------------------------------------------------------------

def _prose_paragraphs(doc: str) -> list[str]:
    """Paragraphs that read as prose: no code, lists or markup, a sentence's ending, few code characters."""
    kept = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines = para.split("\n")
        if any(line.startswith((" ", "\t", ">>>", "...", "*", "-", "=", ":", "..")) for line in lines):
            continue
        text = " ".join(line.strip() for line in lines)
        if len(text.split()) >= 6 and text[-1] in ".!?" and sum(c in _CODE_CHARS for c in text) <= len(text) // 60:
            kept.append(text)
    return kept


def _stdlib_module_names() -> list[str]:
    """Top-level stdlib modules and their public submodules, sorted, so the text stream is fixed."""
    names = []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in _SKIPPED_MODULES:
            continue
        names.append(name)
        module = _quiet_import(name)
        if module is not None and hasattr(module, "__path__"):
            names += sorted(info.name for info in pkgutil.iter_modules(module.__path__, name + ".")
                            if "._" not in info.name and "test" not in info.name)
    return names


def _quiet_import(name: str):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(name)
        except Exception:  # missing optional C modules, platform-only modules
            return None


def _module_docstrings(module) -> list[str]:
    docs = [module.__doc__ or ""]
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        docs.append(inspect.getdoc(obj) or "")
        if inspect.isclass(obj):
            docs += [d for member, value in sorted(vars(obj).items()) if not member.startswith("_")
                     for d in [getattr(value, "__doc__", None)] if isinstance(d, str)]
    return docs


def _python_paragraphs() -> list[str]:
    """Every distinct prose paragraph of the stdlib's docstrings, pydoc's topics, LICENSE history and the Zen."""
    from pydoc_data.topics import topics

    docs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading deprecated modules' attributes warns
        for name in _stdlib_module_names():
            module = _quiet_import(name)
            if module is not None:
                docs += _module_docstrings(module)
    docs += [topics[key] for key in sorted(topics)]
    license_path = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    if license_path.exists():
        # Only the history: the license texts that follow are near-copies of each other.
        docs.append(license_path.read_text(encoding="utf-8").split("B. TERMS AND CONDITIONS")[0])
    zen = codecs.decode(_quiet_import("this").s, "rot13").split("\n", 2)[2]
    docs.append(" ".join(line.strip() for line in zen.splitlines()))
    seen, paragraphs = set(), []
    for doc in docs:
        for para in _prose_paragraphs(doc):
            if para not in seen:
                seen.add(para)
                paragraphs.append(para)
    return paragraphs


def _articles(paragraphs: list[str], rng: random.Random) -> list[str]:
    """Consecutive paragraphs cut into articles of 150–800 words (median near 250), paragraphs kept whole."""
    articles, current, words, target = [], [], 0, 0
    for para in paragraphs:
        if not current:
            target = min(800, max(150, int(rng.lognormvariate(5.5, 0.45))))
        if current and words + len(para.split()) > 800:
            if words >= 150:
                articles.append("\n\n".join(current))
            current, words = [], 0
            target = min(800, max(150, int(rng.lognormvariate(5.5, 0.45))))
        current.append(para)
        words += len(para.split())
        if words >= target:
            articles.append("\n\n".join(current))
            current, words = [], 0
    return articles


# Written for this corpus: a few articles in other languages.
FOREIGN_ARTICLES = {
    "nl": [
        "De gemeente Zwolle wil de komende vijf jaar ruim tweeduizend nieuwe woningen bouwen aan de rand van de "
        "stad. Volgens de wethouder is de vraag naar betaalbare huurwoningen nog nooit zo groot geweest. Jonge "
        "gezinnen en starters vertrekken nu vaak naar dorpen in de omgeving, omdat zij in de stad niets kunnen "
        "vinden.\n\nHet plan rekent op een mix van sociale huur, middenhuur en koopwoningen. Woningcorporaties "
        "hebben al toegezegd om mee te bouwen, maar zij waarschuwen dat de stijgende bouwkosten het tempo kunnen "
        "drukken. Ook de aansluiting op het openbaar vervoer moet beter: de nieuwe wijk krijgt een extra "
        "busverbinding naar het station en een snelfietspad langs de rivier.\n\nBewoners van de bestaande wijken "
        "maken zich zorgen over verkeer en groen. Tijdens een drukbezochte inspraakavond vroegen zij om meer "
        "parken en speelplaatsen. De gemeente belooft dat een kwart van het gebied groen blijft en dat bomen "
        "die moeten wijken elders worden teruggeplant. De gemeenteraad neemt na de zomer een besluit.",
        "Steeds meer bibliotheken in Nederland lenen naast boeken ook gereedschap uit. In Deventer kunnen leden "
        "sinds deze maand een boormachine, een naaimachine of een hogedrukreiniger meenemen voor een weekend. "
        "Het idee komt uit Scandinavië, waar zulke uitleenpunten al jaren populair zijn.\n\nDe bibliotheek wil "
        "zo laten zien dat zij meer is dan een plek voor boeken. Veel mensen hebben een boor die ze maar een paar "
        "minuten per jaar gebruiken, zegt de directeur. Door te delen besparen inwoners geld en is er minder "
        "afval. Vrijwilligers controleren elk apparaat na gebruik en geven uitleg aan wie er weinig ervaring mee "
        "heeft.\n\nIn de eerste weken werden vooral de ladder en de behangafstomer vaak gereserveerd. De "
        "bibliotheek overweegt nu om ook fietsaanhangers en kampeerspullen aan te bieden. Andere gemeenten in "
        "de regio hebben al laten weten dat zij belangstelling hebben voor het project.",
    ],
    "ru": [
        "В Казани открылся новый детский технопарк, где школьники смогут бесплатно заниматься робототехникой, "
        "программированием и трёхмерным моделированием. Здание бывшего завода полностью перестроили за два "
        "года, сохранив кирпичные стены и высокие окна.\n\nПо словам директора, в первый же день на занятия "
        "записались более восьмисот детей. Преподавателей пригласили из местных университетов и компаний, "
        "которые разрабатывают программное обеспечение для промышленности. Каждый курс длится полгода и "
        "заканчивается защитой собственного проекта перед жюри.\n\nРодители отмечают, что раньше подобные "
        "кружки были платными и находились далеко от жилых районов. Теперь до технопарка можно добраться на "
        "метро, а для учеников из пригородов организуют автобусы по выходным. Городские власти обещают к "
        "концу года открыть ещё две такие площадки в других районах.",
        "Весна в этом году пришла в Сибирь на две недели раньше обычного. Синоптики сообщают, что средняя "
        "температура марта оказалась почти на пять градусов выше нормы, а снег в лесах начал таять уже в "
        "начале месяца.\n\nРанняя оттепель радует горожан, но беспокоит спасателей. Реки вскрылись раньше "
        "срока, и в нескольких сёлах вода подошла к домам. Жителей предупредили о возможном подтоплении, в "
        "школах провели занятия по безопасности, а на мостах круглосуточно дежурят специалисты.\n\nУчёные "
        "связывают необычно тёплую погоду с длительным влиянием атлантических циклонов. По их мнению, такие "
        "вёсны будут повторяться всё чаще, поэтому городам стоит заранее обновлять дамбы и ливневую "
        "канализацию. Фермеры тем временем надеются, что ранняя весна позволит начать посевную раньше.",
    ],
    "de": [
        "In Freiburg sollen ab dem kommenden Jahr alle Schulen mit Solaranlagen auf den Dächern ausgestattet "
        "werden. Der Gemeinderat hat das Programm am Dienstag mit großer Mehrheit beschlossen. Die Stadt rechnet "
        "mit Kosten von rund zwölf Millionen Euro, die sich nach etwa fünfzehn Jahren durch gesparten Strom "
        "bezahlt machen sollen.\n\nDie Schülerinnen und Schüler sollen von dem Projekt auch im Unterricht "
        "profitieren. Jede Schule bekommt eine Anzeige im Eingangsbereich, auf der die aktuelle Leistung der "
        "Anlage zu sehen ist. Lehrkräfte können die Daten im Physik- und Mathematikunterricht verwenden.\n\n"
        "Kritik kommt vom Denkmalschutz, denn einige Schulgebäude stehen unter Schutz. Für diese Dächer will die "
        "Verwaltung gemeinsam mit den Behörden nach Lösungen suchen, etwa mit Modulen in Dachziegelfarbe. Die "
        "ersten Anlagen sollen noch vor den Sommerferien ans Netz gehen.",
        "Immer mehr Menschen in Deutschland verbringen ihren Urlaub mit dem Fahrrad. Nach einer neuen Umfrage "
        "hat fast jeder fünfte Erwachsene im vergangenen Jahr eine Radreise von mindestens drei Tagen "
        "unternommen. Besonders beliebt sind die Wege entlang der großen Flüsse, weil sie flach und gut "
        "ausgeschildert sind.\n\nGasthäuser und Campingplätze an den Radwegen stellen sich auf die neuen Gäste "
        "ein. Viele bieten inzwischen abschließbare Fahrradräume, Werkzeug und Ladestationen für Elektroräder "
        "an. Auch die Bahn meldet steigende Zahlen bei der Fahrradmitnahme, obwohl die Plätze in den Zügen im "
        "Sommer oft knapp werden.\n\nTourismusverbände hoffen, dass der Trend auch kleineren Orten abseits der "
        "bekannten Ziele hilft. Wer mit dem Rad unterwegs ist, bleibt häufig nur eine Nacht, gibt aber in "
        "Bäckereien, Cafés und Läden vor Ort Geld aus. Mehrere Regionen planen deshalb neue Routen durch "
        "ihre Dörfer.",
    ],
}

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
_CAPTIONS = {
    "en": ["{who} speaks to reporters in {where}. Photo: {agency}",
           "A view of {where} on a quiet morning. (Image: {agency})",
           "Residents gather outside the town hall in {where}. Photo: {who} / {agency}"],
    "nl": ["{who} in gesprek met journalisten in {where}. Foto: {agency}"],
    "ru": ["{who} отвечает на вопросы журналистов. Фото: {agency}"],
    "de": ["{who} im Gespräch mit Journalisten in {where}. Foto: {agency}"],
}
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

def _paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def _sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(paragraph) if s]


def _map_sentences(text: str, keep) -> str:
    """Rebuilds the text from the sentences keep(index, sentence) accepts, numbered across the whole text."""
    index, paragraphs = 0, []
    for para in _paragraphs(text):
        kept = []
        for sentence in _sentences(para):
            if keep(index, sentence):
                kept.append(sentence)
            index += 1
        if kept:
            paragraphs.append(" ".join(kept))
    return "\n\n".join(paragraphs)


def _sentence_count(text: str) -> int:
    return sum(len(_sentences(p)) for p in _paragraphs(text))


def with_boilerplate(text: str, site: Site, rng: random.Random) -> str:
    """The site's header, a dateline that differs per page, the text, the site's footer."""
    month = rng.randrange(12)
    dateline = _DATELINE[site.lang].format(day=rng.randint(1, 28), month=_MONTHS[month], mnum=month + 1,
                                           hh=f"{rng.randint(6, 22):02d}", mm=f"{rng.randint(0, 59):02d}")
    return "\n".join(site.header) + "\n" + dateline + "\n\n" + text + "\n\n" + "\n".join(site.footer)


def _captioned(text: str, lang: str, rng: random.Random) -> str:
    paragraphs = _paragraphs(text)
    for _ in range(rng.randint(1, 3)):
        caption = rng.choice(_CAPTIONS[lang]).format(who=rng.choice(_CAPTION_WHO), where=rng.choice(_CAPTION_WHERE),
                                                     agency=rng.choice(_AGENCIES))
        paragraphs.insert(rng.randint(1, len(paragraphs)), caption)
    return "\n\n".join(paragraphs)


def _truncated(text: str, rng: random.Random) -> str:
    """Drops the last 10–35 % of the sentences, as a site that cuts stories at a length limit."""
    keep = max(2, round(_sentence_count(text) * rng.uniform(0.65, 0.9)))
    return _map_sentences(text, lambda i, s: i < keep)


def _excerpt(text: str, lang: str, site: Site, rng: random.Random) -> str:
    """The first 30–60 % of the text and a link to the rest."""
    keep = max(2, round(_sentence_count(text) * rng.uniform(0.3, 0.6)))
    return _map_sentences(text, lambda i, s: i < keep) + "\n\n" + _EXCERPT_LINK[lang].format(name=site.name)


def _dropped(text: str, rng: random.Random) -> str:
    """Drops 10–25 % of the sentences after the first."""
    n = _sentence_count(text)
    dropped = set(rng.sample(range(1, n), max(1, round((n - 1) * rng.uniform(0.1, 0.25))))) if n > 2 else set()
    return _map_sentences(text, lambda i, s: i not in dropped)


def _edited(text: str, rng: random.Random) -> str:
    """Replaces 2–5 words by other words of the same text, as a copy editor's changes."""
    tokens = re.split(r"(\W+)", text)
    words = [i for i, t in enumerate(tokens) if len(t) >= 4 and t.isalpha()]
    vocabulary = sorted({tokens[i] for i in words})
    for i in rng.sample(words, min(len(words), rng.randint(2, 5))):
        tokens[i] = rng.choice([w for w in vocabulary if w != tokens[i]] or [tokens[i] + "s"])
    return "".join(tokens)


def _reflowed(text: str, rng: random.Random) -> str:
    """Same words, other whitespace: hard wraps at a random width, or paragraphs merged, or single line breaks."""
    style = rng.randrange(3)
    if style == 0:
        width = rng.randint(55, 90)
        return "\n\n".join(_wrap(p, width) for p in _paragraphs(text))
    if style == 1:
        return " ".join(" ".join(p.split()) for p in _paragraphs(text))
    return "\n".join("  " + " ".join(p.split()) for p in _paragraphs(text))


def _wrap(paragraph: str, width: int) -> str:
    lines, line = [], ""
    for word in paragraph.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def republish(text: str, lang: str, family: str, site: Site, rng: random.Random) -> str:
    """One republication of text under an edit family; `combined` is a site's copy with one or two more edits."""
    if family == "boilerplate":
        return with_boilerplate(text, site, rng)
    if family == "caption":
        return _captioned(text, lang, rng)
    if family == "truncate":
        return _truncated(text, rng)
    if family == "drop":
        return _dropped(text, rng)
    if family == "edit":
        return _edited(text, rng)
    if family == "reflow":
        return _reflowed(text, rng)
    if family == "excerpt":
        return _excerpt(text, lang, site, rng)
    if family == "combined":
        for extra in rng.sample(["caption", "truncate", "drop", "edit", "reflow"], rng.randint(1, 2)):
            text = republish(text, lang, extra, site, rng)
        return with_boilerplate(text, site, rng)
    raise ValueError(f"unknown edit family {family!r}")


# --- the corpus ------------------------------------------------------------------------------------------

def generate(seed: int = DEFAULT_SEED, size: int = DEFAULT_SIZE) -> list[Doc]:
    """The labelled corpus for a seed: at most `size` documents (fewer if the base text runs out)."""
    rng = random.Random(seed)
    sites = _sites(rng)
    sites_by_lang = {lang: [s for s in sites if s.lang == lang] for lang in _SITE_NAMES}
    bases = [(text, "en") for text in _articles(_python_paragraphs(), rng)]
    bases += [(text, lang) for lang, texts in FOREIGN_ARTICLES.items() for text in texts]
    rng.shuffle(bases)
    docs: list[Doc] = []

    def add(text: str, lang: str, group: str, family: str, site: Site | None = None, template: str = "") -> None:
        docs.append(Doc(f"d{len(docs):06d}", text, lang, group, family, site.name if site else "", template))

    def add_reposts(text: str, lang: str, group: str, home: Site | None, count: int) -> None:
        others = [s for s in sites_by_lang[lang] if s != home] or sites_by_lang[lang]
        for _ in range(count):
            family = rng.choice(EDIT_FAMILIES)
            site = rng.choice(others)
            add(republish(text, lang, family, site, rng), lang, group, family,
                site if family in ("boilerplate", "combined") else None)

    for t, (lang, template, keys) in enumerate(TEMPLATES):
        for v, key in enumerate(keys):
            group = f"t{t}v{v}"
            add(template.format(key=key), lang, group, "template", template=f"t{t}")
            if rng.random() < 0.25:
                add_reposts(template.format(key=key), lang, group, None, rng.randint(1, 2))
    for b, (text, lang) in enumerate(bases):
        if len(docs) >= size:
            break
        group = f"g{b:05d}"
        if rng.random() < 0.15:
            add(with_boilerplate(text, (site := rng.choice(sites_by_lang[lang])), rng), lang, group,
                "shared_boilerplate", site)
            continue
        home = rng.choice(sites_by_lang[lang]) if rng.random() < 0.6 else None
        add(with_boilerplate(text, home, rng) if home else text, lang, group, "original", home)
        # a few wire stories are syndicated widely: the stop-list must not take them for boilerplate
        add_reposts(text, lang, group, home,
                    rng.randint(10, 20) if rng.random() < 0.02 else rng.choice([0, 1, 1, 2, 2, 3, 4, 5]))
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

def draw_result_sets(docs: list[Doc], count: int, seed: int = DEFAULT_SEED, size: int = 100,
                     family: str | None = None) -> list[list[int]]:
    """Result sets as a search would return them: `size` document indexes in rank order, 20–40 % of them
    near-duplicates of another member, one cluster of shared-boilerplate pages and one of template variants as
    hard negatives, the rest unrelated. With `family`, every duplicate in a set is an original plus copies made
    by that edit family, so a family's precision and recall are measured on its own."""
    rng = random.Random(f"{seed}:{family}")
    groups: dict[str, list[int]] = {}
    for i, doc in enumerate(docs):
        groups.setdefault(doc.group, []).append(i)
    if family is None:
        dup_groups = [members for members in groups.values() if len(members) > 1]
    else:
        dup_groups = [[m for m in members if docs[m].family in ("original", "template")]
                      + [m for m in members if docs[m].family == family] for members in groups.values()]
        dup_groups = [members for members in dup_groups if len(members) > 1 and docs[members[0]].family != family]
    clusters: dict[tuple[str, str], list[int]] = {}
    for i, doc in enumerate(docs):
        if doc.family == "shared_boilerplate":
            clusters.setdefault(("site", doc.site), []).append(i)
        elif doc.family == "template":
            clusters.setdefault(("template", doc.template), []).append(i)
    site_clusters = sorted(k for k, v in clusters.items() if k[0] == "site" and len(v) > 2)
    template_clusters = sorted(k for k in clusters if k[0] == "template")
    sets = []
    for _ in range(count):
        chosen: list[int] = []
        used: set[str] = set()
        for key in (rng.choice(site_clusters), rng.choice(template_clusters)):
            members = [m for m in clusters[key] if docs[m].group not in used]
            picked = rng.sample(members, min(len(members), rng.randint(3, 6)))
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
        fillers = [i for i in rng.sample(range(len(docs)), len(docs)) if docs[i].group not in used]
        for i in fillers:
            if len(chosen) >= size:
                break
            if docs[i].group not in used:
                chosen.append(i)
                used.add(docs[i].group)
        rng.shuffle(chosen)
        sets.append(chosen)
    return sets


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="at most this many documents")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/devcorpus.jsonl"))
    args = parser.parse_args(argv)
    docs = generate(args.seed, args.size)
    write_jsonl(docs, args.out)
    families: dict[str, int] = {}
    for doc in docs:
        families[doc.family] = families.get(doc.family, 0) + 1
    print(f"{len(docs)} documents in {len({d.group for d in docs})} groups → {args.out}")
    print(", ".join(f"{name} {n}" for name, n in sorted(families.items())))


if __name__ == "__main__":
    main()
