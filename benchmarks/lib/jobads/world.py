"""The world the job ads are made of, read from benchmarks/data/jobads: cities, sectors (titles, tasks, skills,
places, customers, company-name words, salaries), company-name stems, sentence pools per body section, small
vocabularies, section headings, reference formats, careers pages and job boards; and each split's half of them.

Every pool is a list whose even entries belong to `tune` and odd entries to `test` (half), so the splits share
none of: the sentence templates of each body section, short-ad templates, re-advertisement notes and words, teaser
lines, company name stems, the sector vocabularies (job titles, tasks, skills, workplaces, customers), benefits,
contracts, trial periods, start dates, personal traits, values, investments, certificates, schedules, managers,
section headings, contact-person first and last names, street names, cities (per country), job boards with their
boilerplate and field labels, careers-page headers and footers, reference-number formats. Shared by both splits:
the ten sectors, their category labels and salary ranges, the company-name sector words, seniority words, the
rewording synonyms, phone, organisation, URL, date and coordinate formats, e-mail box names, month names."""
from __future__ import annotations

from dataclasses import dataclass

from benchmarks.lib.data import load_json
from benchmarks.lib.devcorpus import SPLITS

LANGS = ("en", "nl")
SECTIONS = ("company", "role", "requirements", "offer", "apply")


def half(values, split: str) -> list:
    """The split's half of a pool: even entries for tune, odd entries for test."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    return list(values[SPLITS.index(split)::2])


# --- places ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class City:
    name: str
    country: str  # UK, IE, NL, BE
    lat: float
    lon: float
    area: str     # telephone area code, national form
    postcode: str  # postcode district / routing key / first four digits


_PLACES = load_json("jobads/places.json")
#: country → its cities (real names and coordinates; invented area codes are real ones).
CITIES = {country: [City(name, country, lat, lon, area, postcode) for name, lat, lon, area, postcode in rows]
          for country, rows in _PLACES["cities"].items()}
COUNTRIES: dict[str, tuple[str, ...]] = {lang: tuple(c) for lang, c in _PLACES["countries"].items()}
COUNTRY_CODE: dict[str, str] = _PLACES["country_code"]
COUNTRY_NAME: dict[str, str] = _PLACES["country_name"]
TLD: dict[str, str] = _PLACES["tld"]
LEGAL: dict[str, tuple[str, ...]] = {country: tuple(forms) for country, forms in _PLACES["legal"].items()}
MONTHS: dict[str, list[str]] = _PLACES["months"]


# --- sectors ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sector:
    key: str
    category: dict      # lang → three category labels (sites write the category differently)
    titles: dict        # lang → job titles as they read inside a sentence
    tasks: dict         # lang → verb phrases (en: base form; nl: infinitive phrase)
    skills: dict        # lang → noun phrases
    places: dict        # lang → workplaces with their possessive
    customers: dict     # lang → customer groups
    noun: dict          # lang → (singular, plural) of what the company is
    words: dict         # lang → sector words of company names; nl: (word, goes before the stem)
    salary: dict        # lang → (low, high): en per year, nl per month


def _sector(row: dict) -> Sector:
    return Sector(**{**row, "noun": {lang: tuple(pair) for lang, pair in row["noun"].items()},
                     "words": {lang: [w if isinstance(w, str) else tuple(w) for w in words]
                               for lang, words in row["words"].items()},
                     "salary": {lang: tuple(bounds) for lang, bounds in row["salary"].items()}})


_SECTORS = load_json("jobads/sectors.json")
SECTORS = [_sector(row) for row in _SECTORS["sectors"]]
#: Sectors whose Dutch ads sometimes carry an English job title (mixed language).
MIXED_SECTORS = set(_SECTORS["mixed_sectors"])
SENIORITY: dict[str, list[str]] = _SECTORS["seniority"]


# --- sentence pools and vocabularies -----------------------------------------------------------------------

_SENTENCES = load_json("jobads/sentences.json")
#: section → lang → sentence templates of the ad's body.
POOLS = {section: _SENTENCES[section] for section in SECTIONS}
#: Short ads: a title and two lines.
SHORT = {lang: [tuple(lines) for lines in pool] for lang, pool in _SENTENCES["short"].items()}
_VOCABULARY = load_json("jobads/vocabulary.json")
#: Rewording of a repost: each pair is swapped (either way) with some probability. Shared by both splits.
SYNONYMS = {lang: [tuple(pair) for pair in pairs] for lang, pairs in _VOCABULARY["synonyms"].items()}


# --- sites ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    name: str
    lang: str                 # the language of its boilerplate and labels
    header: tuple
    footer: tuple
    labels: dict              # field → label in the metadata block; a field absent is not shown
    title: str                # format of the displayed title
    order: tuple              # section order
    headings: str             # "plain", "caps", "colon", "none"
    heading_choice: int       # which of the split's two headings per section
    bullets: str              # "" or the bullet character for role, requirements and offer
    phone: str                # phone format
    organisation: str         # organisation format
    url: str                  # "company", "tracking", "board" or "" (no URL field)
    geo: str                  # "exact", "round", "city" or "" (no location field)
    date: str                 # date format
    meta: str = "lines"       # "lines" or "inline"
    omits: tuple = ()         # fields the site does not carry
    short: float = 0.02       # share of its postings that are two-line ads
    html: float = 0.05        # share with HTML remnants
    category: int = 0         # which of the three category labels it uses
    address: bool = False     # shows the branch address
    kind: str = "board"       # "board", "classifieds", "international", "careers"


_SITES = load_json("jobads/sites.json")
#: Section orders a site lays an ad out in, by name (A: the company first).
ORDERS: dict[str, tuple[str, ...]] = {name: tuple(order) for name, order in _SITES["orders"].items()}
_TUPLES = {"header", "footer", "omits"}


def _site(row: dict) -> Site:
    return Site(**{name: tuple(value) if name in _TUPLES else ORDERS[value] if name == "order" else value
                   for name, value in row.items()})


#: Job boards by language ("intl": international boards, Dutch ads under English labels and boilerplate).
SITES = {key: [_site(row) for row in rows] for key, rows in _SITES["boards"].items()}
#: Boards that carry ads of one country only (the others carry both countries of their language).
SITE_COUNTRIES = {name: tuple(countries) for name, countries in _SITES["site_countries"].items()}
#: A company's own careers page: (header lines, footer lines), even tune, odd test.
CAREERS = {lang: [(page["header"], page["footer"]) for page in pages] for lang, pages in _SITES["careers"].items()}


def serves(site: Site, country: str) -> bool:
    return country in SITE_COUNTRIES.get(site.name, (country,))


# --- a split's share -------------------------------------------------------------------------------------------

class Pools:
    """A split's share of every pool."""

    def __init__(self, split: str):
        self.split = split
        self.sentences = {lang: {section: half(pool[lang], split) for section, pool in POOLS.items()}
                          for lang in LANGS}
        self.short = {lang: half(SHORT[lang], split) for lang in LANGS}
        self.cities = {country: half(CITIES[country], split) for lang in LANGS for country in COUNTRIES[lang]}
        self.stems = {lang: half(_SECTORS["company_stems"][lang], split) for lang in LANGS}
        self.sites = {lang: half(SITES[lang], split) for lang in LANGS}
        self.intl = half(SITES["intl"], split)
        self.careers = {lang: half(CAREERS[lang], split) for lang in LANGS}
        self.headings = {lang: {s: half(h, split) for s, h in _VOCABULARY["headings"][lang].items()}
                         for lang in LANGS}
        self.refs = half(_VOCABULARY["ref_formats"], split)
        self.readvert = {lang: half(_VOCABULARY["readvert"][lang], split) for lang in LANGS}
        self.readvert_line = {lang: half(_SENTENCES["readvert_line"][lang], split)[0] for lang in LANGS}
        self.teaser = {lang: half(_SENTENCES["teaser"][lang], split)[0] for lang in LANGS}
        vocab = ("benefits", "traits", "values", "investments", "certs", "schedules", "managers", "contracts",
                 "trials", "starts")
        self.vocab = {name: {lang: half(_VOCABULARY[name][lang], split) for lang in LANGS} for name in vocab}
        people = {"streets": "streets", "first": "first_names", "last": "last_names"}
        self.vocab |= {name: {lang: half(_PLACES[key][lang], split) for lang in LANGS} for name, key in people.items()}
        self.sector = {(s.key, lang): {name: half(getattr(s, name)[lang], split)
                                       for name in ("titles", "tasks", "skills", "places", "customers")}
                       for s in SECTORS for lang in LANGS}


def template_pool(split: str) -> dict:
    """lang → section → the split's sentence templates (tests check the splits share none)."""
    return Pools(split).sentences
