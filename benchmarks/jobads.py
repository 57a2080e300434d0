"""Labelled job-ad development set (issue 13): items with fields, in English and Dutch, generated offline and
deterministically, with reposts across sites (duplicates) and the hard negatives a text-only detector takes for
duplicates. All companies, people, numbers, addresses and web sites are invented; cities and their coordinates
are real (UK, Ireland, the Netherlands, Flanders and Brussels).

What a job ad is made of: a company (sector, name and legal suffix, offices in several cities, a long
description paragraph), one or more ad templates per company (role, requirements, offer and how-to-apply
sentences drawn from per-section sentence pools and sector vocabularies), and openings (a template filled for
one job title, one city, one date and reference number). Each opening is posted on one or more sites; a posting
is one item. Sites differ in header and footer boilerplate, field labels (English labels on an international
board carrying Dutch ads), title format, section order and headings, bullets, phone, organisation, URL, date
and coordinate formats, and in which fields they carry at all.

Relation kinds (`pairs.jsonl`; an item's `group` is its opening, so duplicate == same group):
  repost        True   the same opening on another site (or the same site again within 14 days): other
                       boilerplate and labels, reordered sections, sentences dropped or reworded, an address or
                       contact line added, other field formats, sometimes a short teaser or a two-line ad.
  readvert      True   the same opening (same reference number and URL) advertised again 3–8 weeks later, with
                       a new date, a new closing date and a "re-advertised" note. The same vacancy: a duplicate.
  city_variant  False  the company's template for the same job title in another city (≥ 20 km away): the same
                       text with another city, address, coordinates, reference, and sometimes the local office's
                       phone and e-mail. First postings of the variants share site and layout choices.
  title_variant False  the same template with another job title (Senior/Junior, or another role of the sector),
                       in the same or another city.
  new_opening   False  the same template, title and city, advertised again for a *new* vacancy: a later date
                       (2–7 months), a new reference number and URL. A different opening, not a duplicate.
  same_company  False  different jobs of one company (different templates) sharing its description paragraph,
                       and often its recruiter's name, phone and e-mail.
  unrelated     False  random pairs of items of different companies in the same language.

Messiness: short ads (a title and two lines), ads without punctuation, all-caps titles, typos, HTML remnants
(`&amp;`, `<br>`, `&nbsp;`, `<li>`), bullet characters, and Dutch ads with English job titles (mixed language).

Splits. `tune` and `test` share no company, no item id (prefixes `tuj`, `tej`), and are drawn with different seeds
(SPLIT_SEEDS). Every pool below is a list whose even entries belong to `tune` and odd entries to `test`, so the
splits also share none of: the sentence templates of each body section (company, role, requirements, offer,
apply; `template_pool(split)`), short-ad templates, re-advertisement notes and words, teaser lines, company name
stems, the sector vocabularies (job titles, tasks, skills, workplaces, customers), benefits, contracts, trial
periods, start dates, personal traits, values, investments, certificates, schedules, managers, section headings,
contact-person first and last names, street names, cities (per country), job boards with their boilerplate and
field labels, careers-page headers and footers, reference-number formats. Shared by both splits: the ten sectors,
their category labels and salary ranges, the company-name sector words, seniority words, the rewording synonyms
and the messiness transformations (operations, not text), phone, organisation, URL, date and coordinate formats,
e-mail box names, month names. With `--seed`, a split keeps its pools and only the draws change.

Item (`items.jsonl`, one JSON object a line):
  {"id", "lang": "en"|"nl", "site", "group" (the opening), "company" (canonical name, for evaluation only),
   "posted" (ISO date), "fields": {"title", "body", "organisation", "phone", "email", "url", "category",
   "location": {"lat", "lon"}}, "text": title + blank line + body}
A field a site does not carry is absent. Pair (`pairs.jsonl`): {"a", "b", "duplicate", "kind"}, a < b.

    python benchmarks/jobads.py --split tune|test [--size N] [--seed N] --out DIR
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import random
import re
import statistics
import string
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devcorpus import SPLITS, edited  # noqa: E402

DEFAULT_SPLIT = "tune"
#: Each split has its own seed, so nothing of the test split was drawn while tuning.
SPLIT_SEEDS = {"tune": 13, "test": 2027}
DEFAULT_SIZE = 2000
LANGS = ("en", "nl")
#: Share of items that are in a group of two or more postings (a repost or re-advertisement group).
REPOST_SHARE = 0.30
#: Relation kind → whether its pairs are duplicates.
KINDS = {"repost": True, "readvert": True, "city_variant": False, "title_variant": False, "new_opening": False,
         "same_company": False, "unrelated": False}
#: Re-advertisements come 3–8 weeks after the first posting; reposts within this many days count as reposts.
REPOST_DAYS = 14
MIN_VARIANT_KM = 20.0
#: Pairs written: at most this many postings pairs per two related openings (the first postings always among
#: them), per two templates of one company, and unrelated pairs per item.
VARIANT_PAIRS = 3
COMPANY_PAIRS = 4
UNRELATED_PAIRS = 0.5
SECTIONS = ("company", "role", "requirements", "offer", "apply")
#: At most one sentence of a section fills each of these slots (one salary, one closing date, ...).
EXCLUSIVE_SLOTS = {"salary", "holiday", "hours", "deadline", "ref", "url", "contract", "start", "years", "email",
                   "phone"}


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


CITIES = {
    "UK": [City(*c) for c in [
        ("London", "UK", 51.5074, -0.1278, "020", "EC1A"), ("Birmingham", "UK", 52.4862, -1.8904, "0121", "B1"),
        ("Manchester", "UK", 53.4808, -2.2426, "0161", "M1"), ("Leeds", "UK", 53.8008, -1.5491, "0113", "LS1"),
        ("Glasgow", "UK", 55.8642, -4.2518, "0141", "G1"), ("Sheffield", "UK", 53.3811, -1.4701, "0114", "S1"),
        ("Bristol", "UK", 51.4545, -2.5879, "0117", "BS1"), ("Edinburgh", "UK", 55.9533, -3.1883, "0131", "EH1"),
        ("Liverpool", "UK", 53.4084, -2.9916, "0151", "L1"), ("Cardiff", "UK", 51.4816, -3.1791, "029", "CF10"),
        ("Newcastle upon Tyne", "UK", 54.9783, -1.6178, "0191", "NE1"),
        ("Nottingham", "UK", 52.9548, -1.1581, "0115", "NG1"), ("Leicester", "UK", 52.6369, -1.1398, "0116", "LE1"),
        ("Southampton", "UK", 50.9097, -1.4044, "023", "SO14"), ("Belfast", "UK", 54.5973, -5.9301, "028", "BT1"),
        ("Aberdeen", "UK", 57.1497, -2.0943, "01224", "AB10"), ("Norwich", "UK", 52.6309, 1.2974, "01603", "NR1"),
        ("Exeter", "UK", 50.7184, -3.5339, "01392", "EX1"), ("York", "UK", 53.9600, -1.0873, "01904", "YO1"),
        ("Oxford", "UK", 51.7520, -1.2577, "01865", "OX1"), ("Cambridge", "UK", 52.2053, 0.1218, "01223", "CB2"),
        ("Brighton", "UK", 50.8225, -0.1372, "01273", "BN1"), ("Plymouth", "UK", 50.3755, -4.1427, "01752", "PL1"),
        ("Coventry", "UK", 52.4068, -1.5197, "024", "CV1"), ("Hull", "UK", 53.7676, -0.3274, "01482", "HU1"),
        ("Derby", "UK", 52.9225, -1.4746, "01332", "DE1"), ("Swansea", "UK", 51.6214, -3.9436, "01792", "SA1"),
        ("Reading", "UK", 51.4543, -0.9781, "0118", "RG1"), ("Dundee", "UK", 56.4620, -2.9707, "01382", "DD1"),
        ("Inverness", "UK", 57.4778, -4.2247, "01463", "IV1"), ("Preston", "UK", 53.7632, -2.7031, "01772", "PR1"),
        ("Stoke-on-Trent", "UK", 53.0027, -2.1794, "01782", "ST1")]],
    "IE": [City(*c) for c in [
        ("Dublin", "IE", 53.3498, -6.2603, "01", "D02"), ("Cork", "IE", 51.8985, -8.4756, "021", "T12"),
        ("Galway", "IE", 53.2707, -9.0568, "091", "H91"), ("Limerick", "IE", 52.6638, -8.6267, "061", "V94"),
        ("Waterford", "IE", 52.2593, -7.1101, "051", "X91"), ("Kilkenny", "IE", 52.6541, -7.2448, "056", "R95"),
        ("Sligo", "IE", 54.2766, -8.4761, "071", "F91"), ("Athlone", "IE", 53.4239, -7.9407, "090", "N37"),
        ("Drogheda", "IE", 53.7179, -6.3561, "041", "A92"), ("Dundalk", "IE", 54.0090, -6.4049, "042", "A91"),
        ("Tralee", "IE", 52.2713, -9.6999, "066", "V92"), ("Ennis", "IE", 52.8436, -8.9864, "065", "V95"),
        ("Letterkenny", "IE", 54.9558, -7.7342, "074", "F92"), ("Wexford", "IE", 52.3369, -6.4633, "053", "Y35")]],
    "NL": [City(*c) for c in [
        ("Amsterdam", "NL", 52.3676, 4.9041, "020", "1011"), ("Rotterdam", "NL", 51.9244, 4.4777, "010", "3011"),
        ("Den Haag", "NL", 52.0705, 4.3007, "070", "2511"), ("Utrecht", "NL", 52.0907, 5.1214, "030", "3511"),
        ("Eindhoven", "NL", 51.4416, 5.4697, "040", "5611"), ("Groningen", "NL", 53.2194, 6.5665, "050", "9711"),
        ("Tilburg", "NL", 51.5555, 5.0913, "013", "5038"), ("Almere", "NL", 52.3508, 5.2647, "036", "1315"),
        ("Breda", "NL", 51.5719, 4.7683, "076", "4811"), ("Nijmegen", "NL", 51.8126, 5.8372, "024", "6511"),
        ("Apeldoorn", "NL", 52.2112, 5.9699, "055", "7311"), ("Haarlem", "NL", 52.3874, 4.6462, "023", "2011"),
        ("Arnhem", "NL", 51.9851, 5.8987, "026", "6811"), ("Enschede", "NL", 52.2215, 6.8937, "053", "7511"),
        ("Amersfoort", "NL", 52.1561, 5.3878, "033", "3811"), ("Zwolle", "NL", 52.5168, 6.0830, "038", "8011"),
        ("Leiden", "NL", 52.1601, 4.4970, "071", "2311"), ("Maastricht", "NL", 50.8514, 5.6910, "043", "6211"),
        ("Dordrecht", "NL", 51.8133, 4.6901, "078", "3311"),
        ("'s-Hertogenbosch", "NL", 51.6978, 5.3037, "073", "5211"),
        ("Leeuwarden", "NL", 53.2012, 5.7999, "058", "8911"), ("Deventer", "NL", 52.2661, 6.1552, "0570", "7411"),
        ("Alkmaar", "NL", 52.6324, 4.7534, "072", "1811"), ("Venlo", "NL", 51.3704, 6.1724, "077", "5911"),
        ("Delft", "NL", 52.0116, 4.3571, "015", "2611"), ("Hilversum", "NL", 52.2292, 5.1669, "035", "1211"),
        ("Helmond", "NL", 51.4793, 5.6570, "0492", "5701"), ("Heerlen", "NL", 50.8882, 5.9795, "045", "6411"),
        ("Middelburg", "NL", 51.4988, 3.6136, "0118", "4331"), ("Assen", "NL", 52.9925, 6.5649, "0592", "9401"),
        ("Emmen", "NL", 52.7792, 6.9069, "0591", "7811"), ("Gouda", "NL", 52.0115, 4.7105, "0182", "2801"),
        ("Hengelo", "NL", 52.2658, 6.7931, "074", "7551"), ("Lelystad", "NL", 52.5185, 5.4714, "0320", "8211"),
        ("Zoetermeer", "NL", 52.0575, 4.4931, "079", "2711"), ("Roermond", "NL", 51.1942, 5.9870, "0475", "6041")]],
    "BE": [City(*c) for c in [
        ("Antwerpen", "BE", 51.2194, 4.4025, "03", "2000"), ("Gent", "BE", 51.0543, 3.7174, "09", "9000"),
        ("Brugge", "BE", 51.2093, 3.2247, "050", "8000"), ("Leuven", "BE", 50.8798, 4.7005, "016", "3000"),
        ("Mechelen", "BE", 51.0259, 4.4776, "015", "2800"), ("Hasselt", "BE", 50.9307, 5.3325, "011", "3500"),
        ("Kortrijk", "BE", 50.8280, 3.2649, "056", "8500"), ("Aalst", "BE", 50.9378, 4.0410, "053", "9300"),
        ("Oostende", "BE", 51.2154, 2.9286, "059", "8400"), ("Sint-Niklaas", "BE", 51.1652, 4.1437, "03", "9100"),
        ("Genk", "BE", 50.9650, 5.5008, "089", "3600"), ("Roeselare", "BE", 50.9469, 3.1227, "051", "8800"),
        ("Turnhout", "BE", 51.3227, 4.9447, "014", "2300"), ("Brussel", "BE", 50.8503, 4.3517, "02", "1000")]],
}
COUNTRIES = {"en": ("UK", "IE"), "nl": ("NL", "BE")}
COUNTRY_CODE = {"UK": "44", "IE": "353", "NL": "31", "BE": "32"}
COUNTRY_NAME = {"UK": "the UK", "IE": "Ireland", "NL": "Nederland", "BE": "België"}
TLD = {"UK": "co.uk", "IE": "ie", "NL": "nl", "BE": "be"}
LEGAL = {"UK": ("Ltd", "Limited"), "IE": ("Ltd", "Limited"), "NL": ("B.V.", "BV"), "BE": ("BV", "bv")}

STREETS = {
    "en": ["High Street", "Station Road", "Church Lane", "Victoria Road", "Park Avenue", "Mill Lane", "King Street",
           "Queen Street", "Market Place", "Bridge Street", "Castle Road", "Chapel Street", "Riverside Way",
           "Enterprise Park", "Commerce Way", "Harbour Road", "Abbey Road", "Canal Wharf", "Albert Terrace",
           "Union Street"],
    "nl": ["Stationsstraat", "Kerkstraat", "Industrieweg", "Marktplein", "Dorpsstraat", "Nieuwstraat", "Havenweg",
           "Molenlaan", "Parallelweg", "Kanaalweg", "Schoolstraat", "Julianalaan", "Ambachtsweg", "Zuidwal",
           "Kapelstraat", "Handelsweg", "Brugstraat", "Veldweg", "Lindelaan", "Koopmansstraat"],
}
FIRST_NAMES = {
    "en": ["Sarah", "James", "Emma", "Daniel", "Laura", "Michael", "Rachel", "David", "Sophie", "Thomas", "Hannah",
           "Ciaran", "Aoife", "Sean", "Niamh", "Gareth", "Rhian", "Callum", "Fiona", "Owen", "Priya", "Mark",
           "Chloe", "Liam"],
    "nl": ["Anouk", "Daan", "Sanne", "Bram", "Lotte", "Ruben", "Femke", "Thijs", "Eva", "Jeroen", "Marieke", "Wout",
           "Lieke", "Pieter", "Ilse", "Koen", "Nathalie", "Bart", "Evelien", "Stijn", "Fatima", "Joris", "Inge",
           "Sven"],
}
LAST_NAMES = {
    "en": ["Mitchell", "Walsh", "Patel", "Hughes", "O'Brien", "Kelly", "Evans", "Campbell", "Murphy", "Thompson",
           "Ahmed", "Clarke", "Byrne", "Robertson", "Davies", "Singh", "Lewis", "Doyle", "Fraser", "Morgan",
           "Kennedy", "Shaw", "Quinn", "Barker"],
    "nl": ["de Boer", "Jansen", "Visser", "Smits", "Peeters", "Bakker", "Mertens", "Mulder", "Claes", "de Groot",
           "Janssens", "Vermeulen", "Hendriks", "Maes", "van Leeuwen", "Willems", "Dekker", "Wouters", "Kuipers",
           "Goossens", "El Amrani", "Verhoeven", "Brouwer", "Lambrechts"],
}
MONTHS = {"en": ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                 "November", "December"],
          "nl": ["januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober",
                 "november", "december"]}


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


SECTORS = [
    Sector(
        "care",
        {"en": ["Healthcare", "Health & Social Care", "Nursing & Care"],
         "nl": ["Zorg", "Zorg en welzijn", "Gezondheidszorg"]},
        {"en": ["care assistant", "registered nurse", "support worker", "healthcare assistant", "community nurse",
                "night care assistant", "activities coordinator", "domiciliary carer", "care coordinator",
                "mental health nurse"],
         "nl": ["verzorgende IG", "verpleegkundige", "helpende zorg en welzijn", "begeleider gehandicaptenzorg",
                "wijkverpleegkundige", "zorgmedewerker", "nachtverpleegkundige", "activiteitenbegeleider",
                "thuiszorgmedewerker", "persoonlijk begeleider"]},
        {"en": ["help residents with washing, dressing and meals", "give medication and keep accurate care records",
                "support people to live independently at home", "plan activities that keep residents active",
                "work with GPs and families on individual care plans",
                "spot changes in a client's health and report them",
                "take care of wound dressings and simple treatments", "support clients with their daily routines",
                "keep the environment safe, clean and homely", "help new colleagues find their way on the ward",
                "take part in handovers and team meetings", "accompany clients to hospital appointments"],
         "nl": ["bewoners helpen bij wassen, aankleden en eten", "medicatie uitdelen en het zorgdossier bijhouden",
                "cliënten ondersteunen om zelfstandig thuis te blijven wonen",
                "activiteiten organiseren die bewoners actief houden",
                "met huisartsen en familie werken aan persoonlijke zorgplannen",
                "veranderingen in de gezondheid van cliënten signaleren en bespreken",
                "wonden verzorgen en eenvoudige verpleegtechnische handelingen uitvoeren",
                "cliënten begeleiden bij hun dagelijkse routine",
                "zorgen voor een veilige, schone en huiselijke omgeving",
                "nieuwe collega's wegwijs maken op de afdeling", "deelnemen aan overdrachten en teamoverleg",
                "cliënten begeleiden naar afspraken in het ziekenhuis"]},
        {"en": ["a relevant NVQ qualification in health and social care", "an active NMC registration",
                "experience in a care home or hospital setting", "a caring and patient nature",
                "a full driving licence and access to a car", "basic knowledge of medication procedures",
                "a calm head in an emergency", "willingness to work weekends and bank holidays"],
         "nl": ["een afgeronde mbo-opleiding verzorgende IG", "een geldige BIG-registratie",
                "ervaring in de ouderenzorg of ziekenhuiszorg", "een zorgzaam en geduldig karakter",
                "een rijbewijs B en een eigen auto", "kennis van medicatieprotocollen",
                "een rustig hoofd in noodsituaties", "de bereidheid om in het weekend te werken"]},
        {"en": ["our residential home", "our nursing home", "our community hub", "our day centre"],
         "nl": ["ons woonzorgcentrum", "onze verpleegafdeling", "ons wijkcentrum", "ons dagcentrum"]},
        {"en": ["older people and their families", "local councils and the health service",
                "people with learning disabilities", "hospitals and GP practices"],
         "nl": ["ouderen en hun familie", "gemeenten en zorgverzekeraars", "mensen met een beperking",
                "ziekenhuizen en huisartsen"]},
        {"en": ("care provider", "care providers"), "nl": ("zorgorganisatie", "zorgorganisaties")},
        {"en": ["Care", "Care Group", "Healthcare", "Home Care"],
         "nl": [("Zorggroep", True), ("Thuiszorg", True), ("Zorg", False), ("Zorgcentra", False)]},
        {"en": (21000, 34000), "nl": (2500, 3900)}),
    Sector(
        "logistics",
        {"en": ["Logistics", "Transport & Logistics", "Warehouse & Distribution"],
         "nl": ["Logistiek", "Transport en logistiek", "Magazijn en distributie"]},
        {"en": ["warehouse operative", "HGV driver", "forklift driver", "transport planner", "delivery driver",
                "stock controller", "logistics coordinator", "order picker", "goods-in operative",
                "fleet coordinator"],
         "nl": ["magazijnmedewerker", "vrachtwagenchauffeur", "heftruckchauffeur", "planner transport", "bezorger",
                "voorraadbeheerder", "logistiek medewerker", "orderpicker", "medewerker expeditie",
                "wagenparkbeheerder"]},
        {"en": ["pick and pack orders accurately and on time", "load and unload trucks safely",
                "plan routes for a fleet of forty vehicles", "deliver parcels to homes and businesses",
                "keep stock levels up to date in our warehouse system",
                "check incoming goods against delivery notes", "drive a forklift or reach truck",
                "solve problems when deliveries run late", "keep the warehouse clean, tidy and safe",
                "agree delivery times with customers", "train new starters on the warehouse floor",
                "report damage and stock differences"],
         "nl": ["orders nauwkeurig en op tijd verzamelen en inpakken", "vrachtwagens veilig laden en lossen",
                "routes plannen voor een wagenpark van veertig voertuigen",
                "pakketten bezorgen bij particulieren en bedrijven",
                "de voorraad bijhouden in ons magazijnsysteem",
                "binnenkomende goederen controleren aan de hand van de pakbon",
                "op een heftruck of reachtruck rijden", "problemen oplossen als leveringen vertraging hebben",
                "het magazijn schoon, opgeruimd en veilig houden", "levertijden met klanten afstemmen",
                "nieuwe collega's inwerken op de werkvloer", "schade en voorraadverschillen melden"]},
        {"en": ["a valid counterbalance or reach truck licence", "a Class 1 or Class 2 licence with a CPC card",
                "experience in a busy warehouse", "good knowledge of route planning software",
                "the ability to lift up to 25 kg", "a sharp eye for detail",
                "basic computer skills", "flexibility to work early, late or night shifts"],
         "nl": ["een geldig heftruckcertificaat", "rijbewijs C/CE met code 95", "ervaring in een druk magazijn",
                "goede kennis van planningssoftware", "een goede lichamelijke conditie", "oog voor detail",
                "basiskennis van computers", "flexibiliteit om in vroege, late of nachtdiensten te werken"]},
        {"en": ["our distribution centre", "our cross-dock hub", "our regional depot", "our main warehouse"],
         "nl": ["ons distributiecentrum", "onze crossdock-hub", "ons regionale depot", "ons centrale magazijn"]},
        {"en": ["supermarkets and online retailers", "manufacturers across Europe",
                "builders' merchants and wholesalers", "pharmaceutical companies"],
         "nl": ["supermarkten en webwinkels", "producenten in heel Europa", "bouwmaterialenhandels en groothandels",
                "farmaceutische bedrijven"]},
        {"en": ("logistics company", "logistics companies"),
         "nl": ("logistiek dienstverlener", "logistiek dienstverleners")},
        {"en": ["Logistics", "Freight", "Distribution", "Transport"],
         "nl": [("Logistiek", False), ("Transport", False), ("Transportbedrijf", True), ("Expeditie", False)]},
        {"en": (22000, 38000), "nl": (2300, 3400)}),
    Sector(
        "it",
        {"en": ["IT", "IT & Telecoms", "Technology"], "nl": ["ICT", "IT en telecom", "Automatisering"]},
        {"en": ["software developer", "IT support analyst", "data engineer", "front-end developer",
                "systems administrator", "QA tester", "cloud engineer", "business analyst", "service desk engineer",
                "network engineer"],
         "nl": ["softwareontwikkelaar", "medewerker ICT-support", "data-engineer", "front-end ontwikkelaar",
                "systeembeheerder", "testanalist", "cloudspecialist", "informatieanalist",
                "servicedeskmedewerker", "netwerkbeheerder"]},
        {"en": ["design and build new features for our web platform",
                "solve hardware and software problems for colleagues", "build reliable data pipelines",
                "turn designs into fast and accessible interfaces", "keep our servers and networks running smoothly",
                "write automated tests and find bugs before our users do", "move applications to the cloud",
                "translate business needs into clear requirements", "answer calls and tickets at the service desk",
                "review code written by your colleagues", "improve monitoring and security",
                "document systems so that others can maintain them"],
         "nl": ["nieuwe functionaliteit bouwen voor ons webplatform",
                "hardware- en softwareproblemen van collega's oplossen", "betrouwbare datapijplijnen bouwen",
                "ontwerpen omzetten in snelle en toegankelijke interfaces",
                "onze servers en netwerken draaiende houden",
                "geautomatiseerde tests schrijven en fouten vinden voordat gebruikers dat doen",
                "applicaties naar de cloud overzetten",
                "wensen van de organisatie vertalen naar heldere eisen",
                "telefoontjes en tickets van de servicedesk afhandelen", "code van collega's beoordelen",
                "monitoring en beveiliging verbeteren", "systemen documenteren zodat anderen ze kunnen beheren"]},
        {"en": ["experience with Python, Java or C#", "a degree in computer science or similar",
                "knowledge of Windows Server and Active Directory", "experience with SQL and data modelling",
                "knowledge of React or Vue", "experience with AWS or Azure", "good communication skills",
                "a Microsoft or CompTIA certification"],
         "nl": ["ervaring met Python, Java of C#", "een afgeronde hbo-opleiding informatica of vergelijkbaar",
                "kennis van Windows Server en Active Directory", "ervaring met SQL en datamodellering",
                "kennis van React of Vue", "ervaring met AWS of Azure", "goede communicatieve vaardigheden",
                "een Microsoft- of CompTIA-certificering"]},
        {"en": ["our development studio", "our head office", "our data lab", "our support centre"],
         "nl": ["onze ontwikkelstudio", "ons hoofdkantoor", "ons datalab", "ons supportcentrum"]},
        {"en": ["banks and insurers", "schools and universities", "public sector organisations",
                "retailers and online shops"],
         "nl": ["banken en verzekeraars", "scholen en universiteiten", "overheidsorganisaties",
                "retailers en webwinkels"]},
        {"en": ("IT company", "IT companies"), "nl": ("ICT-bedrijf", "ICT-bedrijven")},
        {"en": ["Digital", "Software", "Systems", "IT Solutions"],
         "nl": [("ICT", False), ("Software", False), ("Automatisering", False), ("IT Solutions", False)]},
        {"en": (30000, 60000), "nl": (3200, 5400)}),
    Sector(
        "hospitality",
        {"en": ["Hospitality", "Hotels & Catering", "Catering"],
         "nl": ["Horeca", "Hotel en catering", "Toerisme en horeca"]},
        {"en": ["chef de partie", "kitchen porter", "waiter", "hotel receptionist", "sous chef", "bar supervisor",
                "housekeeping assistant", "restaurant manager", "breakfast cook", "events coordinator"],
         "nl": ["zelfstandig werkend kok", "afwasser", "medewerker bediening", "receptionist", "sous-chef",
                "barmedewerker", "medewerker housekeeping", "restaurantmanager", "ontbijtkok",
                "evenementencoördinator"]},
        {"en": ["prepare fresh dishes to a high standard", "keep the kitchen clean and follow food safety rules",
                "welcome guests and take orders", "check guests in and out and handle bookings",
                "help the head chef develop new menus", "serve drinks and keep the bar well stocked",
                "clean and prepare rooms for arriving guests", "lead the waiting staff during busy services",
                "prepare the breakfast buffet from six in the morning",
                "plan weddings, parties and business events", "order stock and check deliveries",
                "handle complaints with a smile"],
         "nl": ["verse gerechten bereiden volgens een hoge standaard",
                "de keuken schoonhouden en de hygiëneregels volgen", "gasten ontvangen en bestellingen opnemen",
                "gasten in- en uitchecken en reserveringen verwerken",
                "samen met de chef nieuwe menukaarten ontwikkelen", "drankjes serveren en de bar op voorraad houden",
                "kamers schoonmaken en klaarmaken voor nieuwe gasten",
                "de bediening aansturen tijdens drukke diensten",
                "vanaf zes uur 's ochtends het ontbijtbuffet klaarzetten",
                "bruiloften, feesten en zakelijke evenementen organiseren",
                "voorraad bestellen en leveringen controleren", "klachten met een glimlach afhandelen"]},
        {"en": ["experience in a fresh food kitchen", "a Level 2 Food Hygiene certificate",
                "a friendly and welcoming personality", "experience with booking systems",
                "good knowledge of wines and cocktails", "the ability to work under pressure",
                "availability in evenings and weekends", "a second language"],
         "nl": ["ervaring in een keuken waar vers gekookt wordt", "een HACCP-certificaat",
                "een gastvrije en vriendelijke uitstraling", "ervaring met reserveringssystemen",
                "goede kennis van wijnen en cocktails", "stressbestendigheid",
                "beschikbaarheid in de avonden en weekenden", "kennis van een tweede taal"]},
        {"en": ["our restaurant", "our hotel", "our brasserie", "our conference centre"],
         "nl": ["ons restaurant", "ons hotel", "onze brasserie", "ons congrescentrum"]},
        {"en": ["tourists and business travellers", "local families", "wedding parties and conference guests",
                "theatre visitors"],
         "nl": ["toeristen en zakelijke reizigers", "gezinnen uit de buurt", "bruiloftsgasten en congresbezoekers",
                "theaterbezoekers"]},
        {"en": ("hospitality group", "hospitality groups"), "nl": ("horecabedrijf", "horecabedrijven")},
        {"en": ["Hotels", "Inns", "Kitchen", "Hospitality"],
         "nl": [("Hotels", False), ("Brasserie", True), ("Hotel", True), ("Horeca", False)]},
        {"en": (19000, 34000), "nl": (2100, 3300)}),
    Sector(
        "retail",
        {"en": ["Retail", "Retail & Sales", "Sales"], "nl": ["Detailhandel", "Retail", "Verkoop"]},
        {"en": ["sales assistant", "store manager", "cashier", "visual merchandiser", "assistant store manager",
                "stock assistant", "customer service adviser", "department manager", "shop supervisor",
                "key holder"],
         "nl": ["verkoopmedewerker", "filiaalmanager", "kassamedewerker", "visual merchandiser",
                "assistent-filiaalmanager", "vakkenvuller", "medewerker klantenservice", "afdelingsmanager",
                "winkelsupervisor", "eerste verkoper"]},
        {"en": ["advise customers and help them find the right product",
                "run the till and handle cash and card payments", "keep shelves full and the shop looking tidy",
                "create window displays that draw people in", "open and close the store",
                "answer questions by phone, e-mail and chat", "process returns and exchanges",
                "set targets and coach the shop team", "count stock and prepare orders",
                "make the weekly staff rota", "unpack deliveries and price new stock",
                "keep an eye on shop security"],
         "nl": ["klanten adviseren en helpen het juiste product te vinden",
                "afrekenen aan de kassa en contante en pinbetalingen verwerken",
                "schappen aanvullen en de winkel netjes houden",
                "etalages inrichten die mensen naar binnen trekken", "de winkel openen en afsluiten",
                "vragen beantwoorden via telefoon, e-mail en chat", "retouren en ruilingen verwerken",
                "doelen stellen en het winkelteam coachen", "de voorraad tellen en bestellingen voorbereiden",
                "het wekelijkse rooster maken", "leveringen uitpakken en nieuwe artikelen prijzen",
                "letten op de veiligheid in de winkel"]},
        {"en": ["retail experience", "a passion for fashion or interiors",
                "a confident and friendly manner with customers", "experience leading a team",
                "basic maths and IT skills", "availability on Saturdays", "commercial awareness",
                "good spoken and written English"],
         "nl": ["ervaring in de detailhandel", "passie voor mode of interieur",
                "een klantvriendelijke en zelfverzekerde houding", "ervaring met het aansturen van een team",
                "basisvaardigheden in rekenen en computers", "beschikbaarheid op zaterdag", "commercieel inzicht",
                "een goede beheersing van de Nederlandse taal"]},
        {"en": ["our flagship store", "our shop", "our garden centre", "our customer service centre"],
         "nl": ["onze flagshipstore", "onze winkel", "ons tuincentrum", "onze klantenservice"]},
        {"en": ["shoppers of all ages", "home owners and DIY fans", "fashion lovers", "families and students"],
         "nl": ["winkelend publiek van alle leeftijden", "huiseigenaren en klussers", "modeliefhebbers",
                "gezinnen en studenten"]},
        {"en": ("retailer", "retailers"), "nl": ("winkelketen", "winkelketens")},
        {"en": ["Stores", "Home", "Fashion", "Retail"],
         "nl": [("Mode", False), ("Wonen", False), ("Winkels", False), ("Tuincentrum", True)]},
        {"en": (19000, 36000), "nl": (2000, 3500)}),
    Sector(
        "construction",
        {"en": ["Construction", "Construction & Property", "Trades"],
         "nl": ["Bouw", "Bouw en installatie", "Techniek"]},
        {"en": ["site manager", "electrician", "plumber", "quantity surveyor", "carpenter", "heating engineer",
                "project manager", "bricklayer", "site labourer", "building services engineer"],
         "nl": ["uitvoerder", "elektromonteur", "loodgieter", "calculator", "timmerman",
                "servicemonteur verwarming", "projectleider", "metselaar", "bouwplaatsmedewerker",
                "installatietechnicus"]},
        {"en": ["run building sites safely and on schedule", "install and test electrical systems",
                "fit bathrooms, pipework and heating systems", "prepare cost estimates and tenders",
                "build frames, roofs and staircases", "service boilers and heat pumps at customers' homes",
                "coordinate subcontractors and suppliers", "lay bricks and blocks to a high standard",
                "keep the site tidy and help the trades", "read drawings and set out the work",
                "carry out inspections and fix faults", "keep clients informed about progress and changes"],
         "nl": ["bouwplaatsen veilig en volgens planning leiden", "elektrische installaties aanleggen en testen",
                "badkamers, leidingwerk en verwarmingen installeren", "kostenramingen en offertes maken",
                "kozijnen, daken en trappen bouwen", "cv-ketels en warmtepompen bij klanten thuis onderhouden",
                "onderaannemers en leveranciers aansturen", "strak metselwerk leveren",
                "de bouwplaats opgeruimd houden en vakmensen helpen", "tekeningen lezen en het werk uitzetten",
                "inspecties uitvoeren en storingen verhelpen",
                "opdrachtgevers op de hoogte houden van voortgang en wijzigingen"]},
        {"en": ["a CSCS card", "an NVQ Level 3 in your trade", "experience on residential or commercial sites",
                "an 18th Edition wiring qualification", "Gas Safe registration", "a full driving licence",
                "good knowledge of health and safety rules",
                "a degree in quantity surveying or construction management"],
         "nl": ["een VCA-diploma", "een afgeronde mbo-opleiding in de bouw of installatietechniek",
                "ervaring in de woningbouw of utiliteitsbouw", "kennis van de NEN 1010",
                "ervaring met gasinstallaties", "rijbewijs B", "goede kennis van veiligheidsvoorschriften",
                "een hbo-diploma bouwkunde"]},
        {"en": ["our building sites", "our workshop", "our project office", "our service department"],
         "nl": ["onze bouwplaatsen", "onze werkplaats", "ons projectbureau", "onze serviceafdeling"]},
        {"en": ["housing associations and developers", "schools and hospitals", "home owners",
                "commercial landlords"],
         "nl": ["woningcorporaties en projectontwikkelaars", "scholen en ziekenhuizen",
                "particuliere huiseigenaren", "vastgoedbeheerders"]},
        {"en": ("building contractor", "building contractors"), "nl": ("bouwbedrijf", "bouwbedrijven")},
        {"en": ["Construction", "Building Services", "Contractors", "Homes"],
         "nl": [("Bouw", False), ("Installatietechniek", False), ("Bouwgroep", True), ("Installaties", False)]},
        {"en": (26000, 52000), "nl": (2700, 4600)}),
    Sector(
        "finance",
        {"en": ["Accounting & Finance", "Finance", "Admin & Office"],
         "nl": ["Financieel", "Financiën en administratie", "Administratief"]},
        {"en": ["accounts assistant", "payroll administrator", "management accountant", "credit controller",
                "office manager", "finance business partner", "purchase ledger clerk", "financial controller",
                "bookkeeper", "office administrator"],
         "nl": ["administratief medewerker", "salarisadministrateur", "controller", "debiteurenbeheerder",
                "officemanager", "financieel adviseur", "crediteurenadministrateur", "hoofd financiën",
                "boekhouder", "secretaresse"]},
        {"en": ["process invoices and supplier payments", "run the monthly payroll for all staff",
                "prepare management accounts and forecasts", "chase overdue payments politely but firmly",
                "keep the office running smoothly", "support budget holders with clear financial advice",
                "reconcile bank accounts and ledgers", "prepare VAT returns",
                "answer the phone and deal with post and e-mail", "help with the year-end audit",
                "improve our financial processes and reports", "keep accurate records in our accounting system"],
         "nl": ["facturen en betalingen aan leveranciers verwerken", "de maandelijkse salarisadministratie verzorgen",
                "managementrapportages en prognoses opstellen",
                "openstaande betalingen vriendelijk maar duidelijk opvolgen", "het kantoor soepel laten draaien",
                "budgethouders helder financieel advies geven", "bankrekeningen en grootboeken afstemmen",
                "btw-aangiftes voorbereiden", "de telefoon aannemen en post en e-mail afhandelen",
                "meewerken aan de jaarafsluiting", "onze financiële processen en rapportages verbeteren",
                "de administratie nauwkeurig bijhouden in ons boekhoudpakket"]},
        {"en": ["an AAT or ACCA qualification, or the wish to study for one", "experience with Sage, Xero or SAP",
                "strong Excel skills", "an eye for numbers and detail", "experience in a similar role",
                "the ability to work to deadlines", "discretion with confidential information",
                "a degree in finance or accounting"],
         "nl": ["een afgeronde mbo- of hbo-opleiding in de richting financiën", "ervaring met Exact, AFAS of SAP",
                "goede kennis van Excel", "gevoel voor cijfers en oog voor detail",
                "ervaring in een vergelijkbare functie", "het vermogen om deadlines te halen",
                "discretie in de omgang met vertrouwelijke informatie",
                "een afgeronde studie bedrijfseconomie of accountancy"]},
        {"en": ["our finance office", "our head office", "our shared service centre", "our accounts department"],
         "nl": ["onze financiële afdeling", "ons hoofdkantoor", "ons shared service center", "onze administratie"]},
        {"en": ["small businesses and sole traders", "charities and housing associations", "international clients",
                "local entrepreneurs"],
         "nl": ["mkb-bedrijven en zzp'ers", "goede doelen en woningcorporaties", "internationale klanten",
                "lokale ondernemers"]},
        {"en": ("accountancy firm", "accountancy firms"), "nl": ("administratiekantoor", "administratiekantoren")},
        {"en": ["Accountants", "Financial Services", "Partners", "Advisory"],
         "nl": [("Accountants", False), ("Administratiekantoor", True), ("Adviseurs", False),
                ("Financieel Advies", False)]},
        {"en": (24000, 55000), "nl": (2600, 5000)}),
    Sector(
        "education",
        {"en": ["Education", "Education & Training", "Teaching"],
         "nl": ["Onderwijs", "Onderwijs en opleiding", "Kinderopvang en onderwijs"]},
        {"en": ["primary school teacher", "teaching assistant", "maths teacher", "special needs coordinator",
                "nursery practitioner", "science teacher", "school business manager", "English teacher",
                "learning support assistant", "head of year"],
         "nl": ["leerkracht basisonderwijs", "onderwijsassistent", "docent wiskunde", "intern begeleider",
                "pedagogisch medewerker", "docent biologie", "teamleider onderwijs", "docent Nederlands",
                "klassenassistent", "mentor onderbouw"]},
        {"en": ["plan and teach engaging lessons", "support pupils who need extra help",
                "mark work and give useful feedback", "work with parents to help children progress",
                "create a safe and happy classroom", "organise trips and after-school clubs",
                "track progress and write reports", "support children with special educational needs",
                "share ideas with the rest of the department", "take part in staff training days",
                "look after children in the early years", "prepare materials for lessons"],
         "nl": ["boeiende lessen voorbereiden en geven", "leerlingen ondersteunen die extra hulp nodig hebben",
                "werk nakijken en bruikbare feedback geven",
                "samen met ouders werken aan de ontwikkeling van kinderen", "zorgen voor een veilige en fijne klas",
                "uitstapjes en naschoolse activiteiten organiseren", "de voortgang volgen en rapporten schrijven",
                "kinderen met een extra ondersteuningsbehoefte begeleiden", "ideeën delen met de rest van de sectie",
                "deelnemen aan studiedagen", "de jongste kinderen opvangen en begeleiden",
                "lesmateriaal voorbereiden"]},
        {"en": ["Qualified Teacher Status", "an enhanced DBS check", "experience working with children",
                "a degree in the subject you teach", "a Level 3 childcare qualification",
                "patience and a good sense of humour", "strong classroom management",
                "a commitment to safeguarding"],
         "nl": ["een pabodiploma", "een Verklaring Omtrent het Gedrag", "ervaring in het werken met kinderen",
                "een eerstegraads of tweedegraads bevoegdheid", "een afgeronde mbo-opleiding pedagogisch werk",
                "geduld en gevoel voor humor", "een goed klassenmanagement", "oog voor de veiligheid van kinderen"]},
        {"en": ["our primary school", "our secondary academy", "our nursery", "our learning centre"],
         "nl": ["onze basisschool", "onze middelbare school", "ons kinderdagverblijf", "ons leercentrum"]},
        {"en": ["children from the local community", "pupils aged four to eleven", "students and their parents",
                "young people aged eleven to eighteen"],
         "nl": ["kinderen uit de wijk", "leerlingen van vier tot twaalf jaar", "leerlingen en hun ouders",
                "jongeren van twaalf tot achttien jaar"]},
        {"en": ("school trust", "school trusts"), "nl": ("onderwijsorganisatie", "onderwijsorganisaties")},
        {"en": ["Academy Trust", "Schools", "Learning", "Education"],
         "nl": [("Onderwijs", False), ("Scholengroep", True), ("Kindcentra", False), ("College", False)]},
        {"en": (22000, 45000), "nl": (2900, 4900)}),
    Sector(
        "manufacturing",
        {"en": ["Manufacturing", "Engineering & Manufacturing", "Production"],
         "nl": ["Productie", "Productie en techniek", "Industrie"]},
        {"en": ["production operator", "maintenance engineer", "CNC machinist", "quality inspector",
                "production supervisor", "process engineer", "machine setter", "electrical technician",
                "assembly worker", "production planner"],
         "nl": ["productiemedewerker", "onderhoudsmonteur", "CNC-verspaner", "kwaliteitscontroleur",
                "productieleider", "procesengineer", "machineoperator", "elektrotechnicus",
                "assemblagemedewerker", "productieplanner"]},
        {"en": ["operate and monitor production lines", "carry out planned maintenance and repair breakdowns",
                "set up and program CNC machines", "check products against drawings and specifications",
                "lead a shift of production staff", "improve processes to reduce waste",
                "change over machines between products", "find and fix electrical faults",
                "assemble components by hand and with tools", "plan production orders for the coming weeks",
                "keep records for quality and food safety audits",
                "suggest improvements to make the work safer"],
         "nl": ["productielijnen bedienen en bewaken", "preventief onderhoud uitvoeren en storingen verhelpen",
                "CNC-machines instellen en programmeren",
                "producten controleren aan de hand van tekeningen en specificaties",
                "een ploeg productiemedewerkers aansturen", "processen verbeteren om verspilling te verminderen",
                "machines omstellen voor een ander product", "elektrische storingen opsporen en oplossen",
                "onderdelen met de hand en met gereedschap monteren",
                "productieorders voor de komende weken plannen",
                "registraties bijhouden voor kwaliteits- en voedselveiligheidsaudits",
                "verbeteringen voorstellen om het werk veiliger te maken"]},
        {"en": ["experience in a production environment", "a mechanical or electrical qualification",
                "experience with Heidenhain or Fanuc controls", "knowledge of lean or six sigma",
                "the ability to read technical drawings", "willingness to work in a three-shift pattern",
                "a good understanding of PLC systems", "a responsible and safety-minded attitude"],
         "nl": ["ervaring in een productieomgeving", "een mbo-diploma werktuigbouwkunde of elektrotechniek",
                "ervaring met Heidenhain- of Fanuc-besturingen", "kennis van lean of six sigma",
                "het kunnen lezen van technische tekeningen",
                "de bereidheid om in een drieploegendienst te werken", "kennis van PLC-besturingen",
                "een verantwoordelijke en veiligheidsbewuste houding"]},
        {"en": ["our factory", "our production site", "our machine shop", "our packaging plant"],
         "nl": ["onze fabriek", "onze productielocatie", "onze machinefabriek", "onze verpakkingsafdeling"]},
        {"en": ["car makers and aerospace firms", "food brands and supermarkets", "the energy sector",
                "machine builders across Europe"],
         "nl": ["autofabrikanten en de luchtvaartindustrie", "voedingsmerken en supermarkten", "de energiesector",
                "machinebouwers in heel Europa"]},
        {"en": ("manufacturer", "manufacturers"), "nl": ("productiebedrijf", "productiebedrijven")},
        {"en": ["Engineering", "Manufacturing", "Foods", "Precision"],
         "nl": [("Techniek", False), ("Metaal", False), ("Foods", False), ("Kunststoffen", False)]},
        {"en": (23000, 45000), "nl": (2400, 4200)}),
    Sector(
        "facilities",
        {"en": ["Cleaning & Facilities", "Facilities Management", "Cleaning"],
         "nl": ["Schoonmaak", "Facilitair", "Schoonmaak en facilitair"]},
        {"en": ["cleaner", "cleaning supervisor", "caretaker", "facilities coordinator", "window cleaner",
                "office cleaner", "housekeeper", "facilities manager", "grounds maintenance operative",
                "security officer"],
         "nl": ["schoonmaker", "objectleider schoonmaak", "huismeester", "facilitair coördinator", "glazenwasser",
                "kantoorschoonmaker", "huishoudelijk medewerker", "facilitair manager",
                "medewerker groenvoorziening", "beveiliger"]},
        {"en": ["clean offices, toilets and kitchens to a high standard", "check the work of the cleaning team",
                "carry out small repairs around the building", "arrange maintenance contracts and suppliers",
                "clean windows and facades at height", "keep meeting rooms ready for use",
                "restock soap, paper and cleaning products", "open and lock the building",
                "maintain lawns, hedges and flower beds", "patrol the site and check access passes",
                "report defects and safety risks", "work with a floor scrubber and other machines"],
         "nl": ["kantoren, toiletten en keukens grondig schoonmaken", "het werk van het schoonmaakteam controleren",
                "kleine reparaties in het gebouw uitvoeren", "onderhoudscontracten en leveranciers regelen",
                "ramen en gevels op hoogte wassen", "vergaderruimtes gebruiksklaar houden",
                "zeep, papier en schoonmaakmiddelen aanvullen", "het gebouw openen en afsluiten",
                "gazons, hagen en bloembedden onderhouden", "rondes lopen en toegangspassen controleren",
                "gebreken en veiligheidsrisico's melden", "werken met een schrobzuigmachine en andere machines"]},
        {"en": ["experience in commercial cleaning", "an eye for cleanliness", "a valid SIA licence",
                "basic DIY skills", "a head for heights", "a reliable and punctual attitude",
                "experience leading a small team", "availability early mornings or evenings"],
         "nl": ["ervaring in de schoonmaakbranche", "oog voor netheid", "een beveiligingsdiploma",
                "handigheid in kleine klussen", "geen last van hoogtevrees", "een betrouwbare en stipte houding",
                "ervaring met het leiden van een klein team", "beschikbaarheid in de vroege ochtend of avond"]},
        {"en": ["our office buildings", "the client's premises", "our school sites", "the business park"],
         "nl": ["onze kantoorpanden", "de locatie van de opdrachtgever", "onze schoollocaties",
                "het bedrijventerrein"]},
        {"en": ["offices, schools and hospitals", "local authorities", "retail parks", "universities and colleges"],
         "nl": ["kantoren, scholen en ziekenhuizen", "gemeenten", "winkelcentra", "hogescholen en universiteiten"]},
        {"en": ("facilities services company", "facilities services companies"),
         "nl": ("facilitair bedrijf", "facilitaire bedrijven")},
        {"en": ["Cleaning", "Facilities", "Property Services", "Support Services"],
         "nl": [("Schoonmaak", False), ("Facilitair", False), ("Schoonmaakbedrijf", True),
                ("Gebouwbeheer", False)]},
        {"en": (19000, 32000), "nl": (2000, 3200)}),
]
SECTOR_BY_KEY = {s.key: s for s in SECTORS}
#: Sectors whose Dutch ads sometimes carry an English job title (mixed language).
MIXED_SECTORS = {"it", "logistics", "retail", "hospitality", "finance", "manufacturing"}
SENIORITY = {"en": ["senior", "junior", "lead", "trainee"], "nl": ["senior", "junior", "allround", "ervaren"]}

COMPANY_STEMS = {
    "en": ["Kestrel", "Harwood", "Brightwater", "Northgate", "Ashford", "Redbrook", "Millbank", "Oakridge",
           "Greenway", "Thornbury", "Silverdale", "Westfield", "Blackwood", "Riverside", "Hawthorn", "Fairview",
           "Kingsbridge", "Stonehill", "Marlow", "Ellwood", "Beacon", "Summit", "Pennine", "Cobalt", "Meridian",
           "Lakeside", "Highfield", "Whitmore", "Larkspur", "Foxglove", "Elmstead", "Carrick", "Glenmore",
           "Shannon", "Liffey", "Ardmore", "Burren", "Kinsale", "Corrib", "Slaney", "Avonside", "Castlegate",
           "Moorland", "Heathcote", "Birchwood", "Clearwater", "Granite", "Harbourside", "Ironbridge", "Juniper",
           "Keystone", "Lanark", "Mersey", "Norbury", "Orchard", "Pembroke", "Quayside", "Rowan", "Sterling",
           "Trent", "Wren", "Yardley", "Bramley", "Calder"],
    "nl": ["De Linde", "Het Baken", "Van Dijk", "Bakker", "De Vries", "Noorderlicht", "Rivierenland", "Zonnehof",
           "De Wielewaal", "Hofstede", "Van der Meer", "Jansen", "De Horst", "Eikenburg", "Vennegoor",
           "Van Leeuwen", "De Kempen", "Schelde", "Maasland", "Kennemer", "Veluwezoom", "Waterland", "De Brink",
           "Peeters", "Claessens", "Leiedal", "Zwinstede", "Den Akker", "Ter Hooge", "Hoogveld", "Groenendaal",
           "De Beuk", "Ravensteyn", "Lindenhof", "Oosterpoort", "Westerkwartier", "De Meent", "Mertens",
           "Wouters", "Verbeke", "Dijkstra", "Hendriks", "Smit", "Van den Berg", "De Zwaluw", "Polderland",
           "Duinrand", "Heuvelrug", "Kempenland", "De Sleutel", "Het Anker", "De Klimop", "Bolwerk", "Stadsweide",
           "Riethoven", "IJsselstreek", "Zuiderzee", "Kanaalzone", "Dommeldal", "Meerzicht", "Scheldeland",
           "Vossenberg", "Torenhof", "Wilgenrijk"],
}


# --- sentence pools: per section, per language; even entries tune, odd entries test ------------------------

COMPANY = {
    "en": [
        "{company} was founded in {year} and has since grown into one of the leading {nouns} in the region.",
        "Since {year}, {company} has been a trusted name for {customers} across the country.",
        "Today more than {employees} people work for us at {offices} locations.",
        "We are a {noun} with {employees} employees and our head office in {hq}.",
        "Our head office is in {hq}, but our teams work all over the country for {customers}.",
        "{company} is an independent {noun} that still feels like a family business.",
        "{company} works for {customers} and is proud that many of them have stayed for more than {loyal} years.",
        "{values} are at the heart of everything we do.",
        "Since {growth_year} we have invested heavily in {investments}.",
        "Our customers range from {customers} to small organisations in {hq}.",
        "With {offices} sites and a turnover that has grown every year since {growth_year}, we are still expanding.",
        "We believe that happy colleagues make happy customers, and at {company} we act accordingly.",
        "As part of a larger group, {company} combines the stability of a big employer with the short lines of a "
        "small team.",
        "Our mission is simple: to be the {noun} that people in {hq} recommend to their friends.",
        "Every year we welcome around {hires} new colleagues in {hq} and elsewhere, from school leavers to "
        "experienced specialists.",
        "We were named one of the best places to work in {hq} in {award_year}.",
        "Sustainability matters to us: by {target_year} all our sites, from {hq} to the smallest, will run on "
        "renewable energy.",
        "Our {employees} staff come from more than {nationalities} countries, and we see that as one of our "
        "strengths.",
        "What started with two friends in a small unit in {hq} is now a business of {employees} people.",
        "We work closely with {customers}, and our reputation has been built on {values_lc}.",
        "{company} is an equal opportunities employer and welcomes applications from every part of the "
        "community.",
        "{company} holds {cert} and is audited every year.",
        "At {company}, our work makes a real difference to {customers} every single day.",
        "Over the past {age} years we have built a strong name for service and expertise in {hq} and beyond.",
    ],
    "nl": [
        "{company} is opgericht in {year} en uitgegroeid tot een van de toonaangevende {nouns} in de regio.",
        "Sinds {year} is {company} een vertrouwde naam voor {customers} in het hele land.",
        "Op dit moment werken ruim {employees} mensen bij ons, verdeeld over {offices} vestigingen.",
        "Wij zijn een {noun} met {employees} medewerkers en ons hoofdkantoor staat in {hq}.",
        "Ons hoofdkantoor staat in {hq}, maar onze teams werken door het hele land voor {customers}.",
        "{company} is een zelfstandige {noun} die nog steeds aanvoelt als een familiebedrijf.",
        "{company} werkt voor {customers} en is er trots op dat velen van hen al meer dan {loyal} jaar klant zijn.",
        "{values} staan centraal in alles wat we doen.",
        "Sinds {growth_year} hebben we flink geïnvesteerd in {investments}.",
        "Onze klanten variëren van {customers} tot kleine organisaties in {hq}.",
        "Met {offices} locaties en een omzet die sinds {growth_year} elk jaar groeit, zijn we nog altijd in "
        "beweging.",
        "Wij geloven dat tevreden collega's zorgen voor tevreden klanten, en daar handelen we bij {company} ook "
        "naar.",
        "Als onderdeel van een grotere groep combineert {company} de zekerheid van een grote werkgever met de "
        "korte lijnen van een klein team.",
        "Onze missie is eenvoudig: de {noun} zijn die mensen in {hq} aan hun vrienden aanraden.",
        "Elk jaar verwelkomen we in {hq} en daarbuiten zo'n {hires} nieuwe collega's, van schoolverlaters tot "
        "ervaren specialisten.",
        "In {award_year} werden we verkozen tot een van de beste werkgevers van {hq}.",
        "Duurzaamheid vinden we belangrijk: in {target_year} draaien al onze vestigingen, van {hq} tot de kleinste, "
        "op groene energie.",
        "Onze {employees} medewerkers komen uit meer dan {nationalities} landen, en dat zien wij als een van onze "
        "sterke punten.",
        "Wat begon met twee vrienden in een kleine bedrijfsruimte in {hq}, is nu een organisatie met {employees} "
        "mensen.",
        "We werken nauw samen met {customers} en danken onze goede naam aan {values_lc}.",
        "{company} voert een actief diversiteitsbeleid en nodigt iedereen uit om te solliciteren.",
        "{company} beschikt over {cert} en wordt elk jaar geaudit.",
        "Bij {company} maakt ons werk elke dag een echt verschil voor {customers}.",
        "In de afgelopen {age} jaar hebben we in {hq} en daarbuiten een sterke naam opgebouwd op het gebied van "
        "service en vakmanschap.",
    ],
}
ROLE = {
    "en": [
        "As {a_role} in {city} you will {task} and {task2}.",
        "We are looking for {a_role} to join our team at {place} in {city}.",
        "Your main responsibilities are to {task}, {task2} and {task3}.",
        "You report to the {manager} and work closely with {team_size} colleagues.",
        "Every day you {task}, and no two days are quite the same.",
        "In this role you will also {task2}.",
        "The position is based at {place} in {city}, with occasional visits to our other sites.",
        "Alongside your core duties you will regularly {task3}.",
        "You take ownership of your work: you {task} without someone looking over your shoulder.",
        "During your first weeks an experienced colleague will show you how we {task}.",
        "This is a hands-on role in which you {task} and {task2}.",
        "You will work closely with our {manager} and the rest of the team at {place}.",
        "Would you like to {task} in a team where people help each other?",
        "At {place} you will be one of {team_size} people, and your job is to {task}.",
        "We need {a_role} who enjoys responsibility and wants to {task}.",
        "Your week is a mix of planned work and surprises: you {task}, but you also {task2}.",
        "Because we are growing fast in {city}, we need an extra {role} straight away.",
        "In short: you {task}, you {task2} and you help your team wherever you can.",
        "From day one you will {task} for our customers in and around {city}.",
        "At our {city} branch you get plenty of freedom in how you organise your work.",
        "Part of the job is to {task}; the rest of the time you {task2}.",
        "The {role} we are looking for knows how to {task}.",
        "You will be working from {place}, together with a small, close-knit team.",
        "Do you want to grow as {a_role}? Then this vacancy in {city} is for you.",
    ],
    "nl": [
        "Als {role} in {city} ga je {task} en {task2}.",
        "Voor {place} in {city} zoeken wij een {role}.",
        "Jouw belangrijkste taken zijn {task}, {task2} en {task3}.",
        "Je valt onder de {manager} en werkt nauw samen met {team_size} collega's.",
        "Elke dag ga je {task}, en geen dag is hetzelfde.",
        "Daarnaast ga je ook {task2}.",
        "De functie is gevestigd in {place} in {city}; af en toe bezoek je onze andere locaties.",
        "Naast je vaste werkzaamheden ga je regelmatig {task3}.",
        "Je bent zelfstandig: je kunt {task} zonder dat iemand over je schouder meekijkt.",
        "In je eerste weken laat een ervaren collega je zien hoe wij {task}.",
        "Het is een praktische functie: je gaat vooral {task} en {task2}.",
        "Je werkt nauw samen met onze {manager} en de rest van het team in {place}.",
        "Wil jij {task} in een team waar mensen elkaar helpen?",
        "In {place} word je een van de {team_size} medewerkers; jouw taak is {task}.",
        "Wij zoeken een {role} die verantwoordelijkheid neemt; jij gaat {task}.",
        "Je week bestaat uit gepland werk en verrassingen: je gaat {task}, maar ook {task2}.",
        "Omdat we hard groeien in {city}, zoeken we per direct een extra {role}.",
        "Kortom: je gaat {task}, {task2} en je helpt je team waar je kunt.",
        "Vanaf de eerste dag ga je voor onze klanten in en rond {city} {task}.",
        "Bij onze vestiging in {city} krijg je veel vrijheid in hoe je je werk indeelt.",
        "Een deel van het werk is {task}; de rest van de tijd ga je {task2}.",
        "De {role} die wij zoeken, kan goed {task}.",
        "Je werkt vanuit {place}, samen met een klein en hecht team.",
        "Wil jij doorgroeien als {role}? Dan is deze vacature in {city} iets voor jou.",
    ],
}
REQUIREMENTS = {
    "en": [
        "You have {skill} and at least {years} years of relevant experience.",
        "You bring {skill}; {skill2} is a plus.",
        "We would like you to have {skill}.",
        "{skill} is essential for this role.",
        "Ideally you also have {skill2}.",
        "You are a team player with {skill}.",
        "You have at least {years} years of experience as {a_role} or in a similar job.",
        "You are {traits}.",
        "You communicate clearly with colleagues and customers, and you are {traits}.",
        "We ask for {skill} and a positive attitude.",
        "{skill2} is an advantage, not a requirement.",
        "You live within commuting distance of {place} in {city}.",
        "You have {skill}, or you are willing to work towards it with our help.",
        "No experience? If you have {skill2}, we will train you.",
        "You can work on your own, you are {traits} and you know when to ask for help.",
        "You are able to start as {a_role} within {notice} weeks.",
        "Do you have {skill}? Then {contact} would love to hear from you.",
        "You enjoy working with people and stay friendly when it gets busy at {place}.",
        "{skill2} will help you hit the ground running.",
        "You have the right to work in {country} and can travel to {city} every day.",
        "You take pride in your work as {a_role} and pay attention to detail.",
        "You have {years} or more years in a comparable position, and {skill}.",
        "Good spoken English is important, because you deal with customers in {city} every day.",
        "You are a problem solver who is {traits}.",
    ],
    "nl": [
        "Je hebt {skill} en minimaal {years} jaar relevante werkervaring.",
        "Je beschikt over {skill}; {skill2} is een pré.",
        "We vragen {skill}.",
        "{skill} is voor deze functie een vereiste.",
        "Bij voorkeur heb je ook {skill2}.",
        "Je bent een teamspeler met {skill}.",
        "Je hebt minimaal {years} jaar ervaring als {role} of in een vergelijkbare functie.",
        "Je bent {traits}.",
        "Je communiceert helder met collega's en klanten, en je bent {traits}.",
        "Wij vragen {skill} en een positieve instelling.",
        "{skill2} is mooi meegenomen, maar geen must.",
        "Je woont op reisafstand van {place} in {city}.",
        "Je hebt {skill}, of je wilt daar met onze hulp aan werken.",
        "Geen ervaring? Als je {skill2} hebt, leiden wij je op.",
        "Je kunt zelfstandig werken, je bent {traits} en je weet wanneer je hulp moet vragen.",
        "Je kunt binnen {notice} weken beginnen als {role}.",
        "Heb jij {skill}? Dan hoort {contact} graag van je.",
        "Je werkt graag met mensen en blijft vriendelijk als het druk is in {place}.",
        "Met {skill2} heb je een vliegende start.",
        "Je mag wettelijk werken in {country} en kunt elke dag naar {city} reizen.",
        "Als {role} ben je trots op je werk en heb je oog voor detail.",
        "Je hebt {years} jaar of meer ervaring in een vergelijkbare functie, en {skill}.",
        "Je spreekt goed Nederlands, want je hebt in {city} dagelijks contact met klanten.",
        "Je bent een oplosser en bovendien {traits}.",
    ],
}
OFFER = {
    "en": [
        "A salary of {salary}, depending on experience.",
        "A {contract} for {hours} hours a week.",
        "{holiday} days of holiday plus bank holidays, and {benefit}.",
        "{benefit} and {benefit2}.",
        "We offer {benefit}, {benefit2} and plenty of room to grow.",
        "Pay: {salary}, reviewed every year.",
        "Every chance to develop yourself, plus {benefit2}.",
        "A friendly team of {team_size} colleagues at {place} who will help you settle in.",
        "Working hours: {hours} a week, {schedule}.",
        "You will get {benefit} from your first day.",
        "After a trial period of {trial}, a permanent contract as {a_role} is the aim.",
        "On top of your salary you receive {benefit}.",
        "We pay {salary} and offer {benefit}.",
        "Room to grow, and {benefit2} on top.",
        "A {contract} at {place}, starting as soon as possible.",
        "Free parking at {place} and {benefit}.",
        "The salary for this position is {salary}.",
        "You choose between {hours_min} and {hours} hours a week.",
        "{holiday} days of annual leave at {place}, rising with service.",
        "A modern workplace in {city} with {benefit}.",
        "{benefit}, {benefit2} and a friendly place to work.",
        "Start date: {start}, at {place} in {city}.",
        "Hours: {hours} per week ({schedule}).",
        "A workplace where your opinion counts and {benefit} is standard.",
    ],
    "nl": [
        "Een salaris van {salary}, afhankelijk van je ervaring.",
        "Een {contract} voor {hours} uur per week.",
        "{holiday} vakantiedagen bij een fulltime dienstverband, en {benefit}.",
        "{benefit} en {benefit2}.",
        "Wij bieden {benefit}, {benefit2} en volop ruimte om te groeien.",
        "Salaris: {salary}, elk jaar opnieuw bekeken.",
        "Alle kansen om je te ontwikkelen, en daarnaast {benefit2}.",
        "Een gezellig team van {team_size} collega's in {place} dat je graag wegwijs maakt.",
        "Werktijden: {hours} uur per week, {schedule}.",
        "Vanaf je eerste werkdag krijg je {benefit}.",
        "Na een proeftijd van {trial} is een vast contract als {role} het doel.",
        "Bovenop je salaris ontvang je {benefit}.",
        "Wij betalen {salary} en bieden {benefit}.",
        "Ruimte om te groeien, en {benefit2} als extra.",
        "Een {contract} bij {place}, met een zo snel mogelijke startdatum.",
        "Gratis parkeren bij {place} en {benefit}.",
        "Het salaris voor deze functie bedraagt {salary}.",
        "Je kiest zelf tussen {hours_min} en {hours} uur per week.",
        "{holiday} vakantiedagen bij {place}, oplopend met je aantal dienstjaren.",
        "Een moderne werkplek in {city} met {benefit}.",
        "{benefit}, {benefit2} en een fijne werkplek.",
        "Startdatum: {start}, bij {place} in {city}.",
        "Uren: {hours} per week ({schedule}).",
        "Een werkplek waar jouw mening telt en {benefit} vanzelfsprekend is.",
    ],
}
APPLY = {
    "en": [
        "Send your CV and a short cover letter to {contact} at {email}.",
        "Questions? Call {contact} on {phone}.",
        "Apply before {deadline}; interviews take place in the week after.",
        "Please quote reference {ref} in your application.",
        "Apply online at {url} or e-mail {email}.",
        "For more information about this vacancy, call {phone}.",
        "{contact} reviews applications as they come in and aims to reply within {reply_days} working days.",
        "You are welcome to visit our office in {city} for a coffee and a chat first.",
        "Interested? Send your application to {email}, stating reference {ref}.",
        "The closing date is {deadline}.",
        "Recruitment agencies: thank you, but we fill this vacancy in {city} ourselves.",
        "{contact}, our recruiter, is happy to answer your questions on {phone}.",
        "A reference check and a trial day in {city} are part of the procedure.",
        "Apply by e-mail to {email} before {deadline}.",
        "Call {phone} between 9:00 and 17:00 if you would like to know more.",
        "Reference: {ref}. Closing date: {deadline}.",
    ],
    "nl": [
        "Stuur je cv en een korte motivatie naar {contact} via {email}.",
        "Vragen? Bel {contact} op {phone}.",
        "Solliciteer vóór {deadline}; de gesprekken vinden de week daarna plaats.",
        "Vermeld bij je sollicitatie het vacaturenummer {ref}.",
        "Solliciteer online via {url} of mail naar {email}.",
        "Voor meer informatie over deze vacature kun je bellen met {phone}.",
        "{contact} bekijkt sollicitaties zodra ze binnenkomen en reageert binnen {reply_days} werkdagen.",
        "Je bent van harte welkom om eerst een kop koffie te komen drinken op ons kantoor in {city}.",
        "Interesse? Stuur je sollicitatie naar {email} onder vermelding van {ref}.",
        "De sluitingsdatum is {deadline}.",
        "Acquisitie naar aanleiding van deze vacature in {city} wordt niet op prijs gesteld.",
        "{contact}, onze recruiter, beantwoordt graag je vragen op {phone}.",
        "Een referentiecheck en een meeloopdag in {city} maken deel uit van de procedure.",
        "Mail je sollicitatie vóór {deadline} naar {email}.",
        "Bel {phone} tussen 9.00 en 17.00 uur als je meer wilt weten.",
        "Vacaturenummer: {ref}. Reageren kan tot {deadline}.",
    ],
}
POOLS = {"company": COMPANY, "role": ROLE, "requirements": REQUIREMENTS, "offer": OFFER, "apply": APPLY}
#: Short ads: a title and two lines.
SHORT = {
    "en": [("{company} is looking for {a_role} in {city}. {hours} hours a week, {salary}.",
            "Call {phone} or e-mail {email}."),
           ("{Role} wanted in {city} - {contract}, {hours} hrs/week",
            "Ring {contact} on {phone} for details"),
           ("We need {a_role} for {place} in {city}, start {start}.",
            "CV to {email} or phone {phone}."),
           ("{Role} required, {city} area. Pay {salary}.",
            "Apply to {email} quoting {ref_or_title}.")],
    "nl": [("{company} zoekt een {role} in {city}. {hours} uur per week, {salary}.",
            "Bel {phone} of mail naar {email}."),
           ("Gevraagd: {role} in {city} - {contract}, {hours} u/w",
            "Bel {contact} via {phone} voor meer info"),
           ("Wij zoeken een {role} voor {place} in {city}, start {start}.",
            "Cv naar {email} of bel {phone}."),
           ("{Role} gezocht, regio {city}. Salaris {salary}.",
            "Reageer via {email} o.v.v. {ref_or_title}.")],
}

# --- small vocabularies (even entries tune, odd entries test) -------------------------------------------

BENEFITS = {
    "en": ["a company pension with a 6% employer contribution", "free meals during your shift",
           "a cycle-to-work scheme", "private medical insurance", "a company van", "a laptop and mobile phone",
           "a staff discount of 25%", "paid overtime", "a yearly bonus", "a free gym membership",
           "paid training and qualifications", "enhanced maternity and paternity pay",
           "an employee assistance programme", "hybrid working two days a week",
           "free uniforms and safety gear", "a long-service award scheme", "a season ticket loan",
           "an extra day off on your birthday"],
    "nl": ["een goede pensioenregeling", "gratis maaltijden tijdens je dienst", "een fietsplan",
           "een collectieve zorgverzekering", "een bedrijfsbus", "een laptop en telefoon van de zaak",
           "25% personeelskorting", "betaald overwerk", "een jaarlijkse bonus",
           "korting op een sportschoolabonnement", "betaalde opleidingen en cursussen", "een dertiende maand",
           "8% vakantiegeld", "twee dagen per week thuiswerken", "gratis werkkleding en veiligheidsschoenen",
           "een reiskostenvergoeding", "een persoonlijk opleidingsbudget", "een extra vrije dag op je verjaardag"],
}
TRAITS = {
    "en": ["reliable", "flexible", "punctual", "curious", "calm", "practical", "cheerful", "accurate", "organised",
           "eager to learn", "hands-on", "customer-friendly", "patient", "energetic"],
    "nl": ["betrouwbaar", "flexibel", "punctueel", "nieuwsgierig", "rustig", "praktisch ingesteld", "vrolijk",
           "nauwkeurig", "georganiseerd", "leergierig", "een aanpakker", "klantvriendelijk", "geduldig",
           "energiek"],
}
VALUES = {
    "en": ["quality", "honesty", "personal attention", "craftsmanship", "reliability", "curiosity", "teamwork",
           "respect", "openness", "ambition", "safety", "customer focus", "fairness", "care"],
    "nl": ["kwaliteit", "eerlijkheid", "persoonlijke aandacht", "vakmanschap", "betrouwbaarheid",
           "nieuwsgierigheid", "samenwerking", "respect", "openheid", "ambitie", "veiligheid", "klantgerichtheid",
           "rechtvaardigheid", "zorgzaamheid"],
}
INVESTMENTS = {
    "en": ["training", "new equipment", "sustainable ways of working", "digital tools", "electric vehicles",
           "solar panels on our buildings", "a new head office", "apprenticeships", "better working conditions",
           "our own academy", "modern workplaces", "data and automation"],
    "nl": ["opleidingen", "nieuwe apparatuur", "duurzaam werken", "digitale hulpmiddelen", "elektrische voertuigen",
           "zonnepanelen op onze gebouwen", "een nieuw hoofdkantoor", "leerwerkplekken",
           "betere arbeidsomstandigheden", "onze eigen academie", "moderne werkplekken", "data en automatisering"],
}
CERTS = {
    "en": ["ISO 9001 certification", "ISO 14001 certification", "the Investors in People award",
           "a Living Wage accreditation", "SafeContractor approval", "Cyber Essentials certification"],
    "nl": ["een ISO 9001-certificaat", "een ISO 14001-certificaat", "de erkenning als leerbedrijf",
           "een VCA-certificaat", "het keurmerk Goed Werkgeverschap", "een ISO 27001-certificaat"],
}
SCHEDULES = {
    "en": ["Monday to Friday", "on a rota that includes weekends", "in day shifts", "with flexible start times",
           "in early and late shifts", "over four days of nine hours"],
    "nl": ["van maandag tot en met vrijdag", "volgens rooster, ook in het weekend", "in dagdienst",
           "met flexibele begintijden", "in vroege en late diensten", "verdeeld over vier dagen van negen uur"],
}
MANAGERS = {
    "en": ["operations manager", "team leader", "site manager", "head of department", "regional manager",
           "general manager"],
    "nl": ["operationeel manager", "teamleider", "vestigingsmanager", "afdelingshoofd", "regiomanager",
           "algemeen directeur"],
}
CONTRACTS = {
    "en": ["permanent contract", "full-time permanent contract", "twelve-month contract with a view to permanent",
           "part-time contract", "fixed-term contract of six months", "contract with guaranteed hours"],
    "nl": ["vast contract", "contract voor onbepaalde tijd", "jaarcontract met uitzicht op een vaste baan",
           "parttime contract", "tijdelijk contract voor zes maanden", "contract met vaste uren"],
}
TRIALS = {"en": ["one month", "two months", "three months", "six months"],
          "nl": ["een maand", "twee maanden", "drie maanden", "zes maanden"]}
STARTS = {"en": ["as soon as possible", "by arrangement", "1 {month}", "in {month}"],
          "nl": ["zo snel mogelijk", "in overleg", "1 {month}", "in {month}"]}
#: Section headings: four per section, even tune, odd test.
HEADINGS = {
    "en": {"company": ["About us", "Who we are", "About {company}", "The company"],
           "role": ["The role", "Your role", "What you will do", "Job description"],
           "requirements": ["Requirements", "What we are looking for", "Your profile", "About you"],
           "offer": ["What we offer", "Benefits", "The package", "Our offer"],
           "apply": ["How to apply", "Interested?", "Apply", "Next steps"]},
    "nl": {"company": ["Over ons", "Wie zijn wij", "Over {company}", "De organisatie"],
           "role": ["Functieomschrijving", "Wat ga je doen?", "De functie", "Jouw rol"],
           "requirements": ["Functie-eisen", "Wat vragen wij?", "Jouw profiel", "Wie ben jij?"],
           "offer": ["Wat bieden wij?", "Arbeidsvoorwaarden", "Ons aanbod", "Wat krijg je?"],
           "apply": ["Solliciteren", "Interesse?", "Reageren", "Hoe solliciteer je?"]},
}
REF_FORMATS = ["VAC-{n:05d}", "REF{n:06d}", "{initials}/{yy}/{n:03d}", "JR{n:05d}", "{initials}-{n:04d}",
               "V{yy}{n:04d}"]
CAREERS = {  # a company's own careers page: header and footer, even tune, odd test
    "en": [(["{company} | Careers", "Home › Working at {company} › Vacancies"],
            ["Follow us on LinkedIn", "© {year} {organisation}"]),
           (["Careers at {company}", "Current vacancies"],
            ["Not the right job? Register for job alerts.", "{organisation} · Privacy · Cookies"]),
           (["{company}", "Jobs › {category} › {city}"],
            ["Share this vacancy", "Copyright {year} {organisation}. All rights reserved."]),
           (["Work for {company}", "Vacancy details"],
            ["Back to all vacancies", "{organisation} is registered in {country}."])],
    "nl": [(["{company} | Werken bij", "Home › Werken bij › Vacatures"],
            ["Volg ons op LinkedIn", "© {year} {organisation}"]),
           (["Werken bij {company}", "Actuele vacatures"],
            ["Niet de juiste baan? Meld je aan voor vacaturemeldingen.", "{organisation} · Privacy · Cookies"]),
           (["{company}", "Vacatures › {category} › {city}"],
            ["Deel deze vacature", "Copyright {year} {organisation}. Alle rechten voorbehouden."]),
           (["Kom werken bij {company}", "Vacaturedetails"],
            ["Terug naar alle vacatures", "{organisation} is ingeschreven bij de Kamer van Koophandel."])],
}
#: Rewording of a repost: each pair is swapped (either way) with some probability. Shared by both splits.
SYNONYMS = {
    "en": [("you will", "you'll"), ("we are", "we're"), ("experience", "background"), ("colleagues", "co-workers"),
           ("customers", "clients"), ("position", "role"), ("at least", "a minimum of"),
           ("looking for", "seeking"), ("would like", "want"), ("team", "crew"), ("job", "post"),
           ("offer", "provide"), ("every day", "daily"), ("friendly", "welcoming"), ("plenty of", "lots of"),
           ("regularly", "often"), ("straight away", "immediately"), ("happy", "glad"), ("phone", "telephone")],
    "nl": [("medewerkers", "collega's"), ("functie", "baan"), ("salaris", "loon"), ("klanten", "opdrachtgevers"),
           ("minimaal", "ten minste"), ("ervaring", "werkervaring"), ("Wij", "We"), ("wij", "we"),
           ("ga je", "zul je"), ("vacature", "functie"), ("bieden", "geven"), ("zoeken", "vragen"),
           ("bedrijf", "organisatie"), ("graag", "met plezier"), ("regelmatig", "vaak"),
           ("elke dag", "dagelijks"), ("goede", "prima"), ("ook", "eveneens"), ("snel", "vlot")],
}
READVERT = {"en": ["Re-advertised", "Reposted", "Still open", "Advertised again"],
            "nl": ["Herplaatst", "Opnieuw geplaatst", "Nog open", "Opnieuw gepubliceerd"]}
READVERT_LINE = {
    "en": ["This vacancy was first advertised on {date}; previous applicants need not apply again.",
           "We first posted this vacancy on {date}. If you applied then, your application is still being "
           "considered."],
    "nl": ["Deze vacature is eerder geplaatst op {date}; eerdere sollicitanten hoeven niet opnieuw te reageren.",
           "Deze vacature stond eerder online op {date}. Heb je toen al gereageerd, dan nemen we je sollicitatie "
           "nog mee."],
}
TEASER = {"en": ["Read the full job description and apply at {where}.",
                 "The complete vacancy text and the application form are at {where}."],
          "nl": ["Lees de volledige vacaturetekst en solliciteer via {where}.",
                 "De volledige vacaturetekst en het sollicitatieformulier vind je op {where}."]}


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


_ORDER_A = ("company", "role", "requirements", "offer", "apply")
_ORDER_B = ("role", "requirements", "offer", "company", "apply")
_ORDER_C = ("role", "company", "offer", "requirements", "apply")
_ORDER_D = ("apply", "role", "requirements", "offer", "company")

SITES = {
    "en": [
        Site("jobsnorth.co.uk", "en",
             ("JobsNorth - jobs across the North", "Home › Jobs › {category} › {city}",
              "Sign in | Register | Post a job"),
             ("Apply now", "More jobs near {city}", "Create a free account and get new jobs by e-mail every morning.",
              "© {year} JobsNorth Ltd. All rights reserved. | Privacy | Cookies | Terms"),
             {"organisation": "Company", "location": "Location", "category": "Category", "ref": "Reference",
              "posted": "Posted", "salary": "Salary"},
             "{title} – {city}", _ORDER_A, "plain", 0, "•", "national", "full", "tracking", "round", "long"),
        Site("careerpoint.co.uk", "en",
             ("CareerPoint", "Search over 120,000 jobs", "Job details"),
             ("Report this job", "CareerPoint is not responsible for the content of job adverts.",
              "Download the CareerPoint app for iOS and Android", "Copyright {year} CareerPoint Media"),
             {"organisation": "Employer", "location": "Where", "category": "Sector", "ref": "Job ref",
              "posted": "Date posted", "contract": "Job type"},
             "{title}", _ORDER_B, "caps", 0, "-", "intl", "short", "board", "exact", "slash", category=1,
             address=True),
        Site("hireireland.ie", "en",
             ("HireIreland.ie", "Jobs in {city} and across Ireland"),
             ("Save job | Share | Print", "HireIreland.ie - Ireland's friendliest job site",
              "Privacy statement | Cookie settings"),
             {"organisation": "Company", "location": "Location", "posted": "Published", "salary": "Pay",
              "hours": "Hours"},
             "{title} ({city})", _ORDER_C, "colon", 1, "", "intl_zero", "full", "company", "city", "iso",
             meta="inline", omits=("category",), category=2),
        Site("worksmart.ie", "en",
             ("WorkSmart", "Find work. Hire smart.", "Back to search results"),
             ("Apply with your WorkSmart profile in one click.", "Similar vacancies in {category}",
              "WorkSmart.ie © {year} | Terms of use | Accessibility"),
             {"organisation": "Hiring company", "location": "Job location", "category": "Industry",
              "ref": "Vacancy ID", "posted": "Listed"},
             "{title} | {company}", _ORDER_A, "plain", 1, "*", "compact", "upper", "tracking", "exact", "long",
             category=0, address=True),
        Site("localjobsdirect.co.uk", "en",
             ("Local Jobs Direct", "{city} » {category}"),
             ("Never pay for a job offer. If you are asked for money, report the advert.",
              "Local Jobs Direct © {year}"),
             {"location": "Town", "category": "Job category", "posted": "Added", "hours": "Hours per week"},
             "{title} in {city}", _ORDER_B, "none", 0, "", "paren", "none", "", "", "slash",
             omits=("url",), short=0.05, category=2),
        Site("thejobboard.co.uk", "en",
             ("The Job Board", "Your next job is here", "Jobs › {category}"),
             ("Apply for this job", "Tell a friend about this job", "Job alerts | Career advice | Salary checker",
              "The Job Board is a trading name of TJB Online Ltd."),
             {"organisation": "Recruiter", "location": "Location", "category": "Category", "ref": "Ref",
              "salary": "Salary", "contract": "Contract"},
             "{title}", _ORDER_D, "caps", 1, "•", "intl_compact", "legal_long", "board", "round", "iso",
             omits=("phone",), html=0.15, category=1),
        Site("skilledtrades.co.uk", "en",
             ("SkilledTrades", "Jobs for people who make things work", "Find jobs | Employers | Advice"),
             ("Follow SkilledTrades on Facebook and Instagram", "© {year} SkilledTrades. Registered in England."),
             {"organisation": "Company", "location": "Site location", "category": "Trade", "ref": "Our ref",
              "posted": "Posted on"},
             "{TITLE} - {city}", _ORDER_C, "plain", 0, "-", "national", "short", "tracking", "exact", "long",
             omits=("phone",), category=2, address=True),
        Site("recruitmenthub.co.uk", "en",
             ("RecruitmentHub", "Thousands of jobs, one place", "Job advert"),
             ("Apply now", "By applying you accept the RecruitmentHub terms and privacy notice.",
              "RecruitmentHub © {year}"),
             {"organisation": "Advertiser", "location": "Area", "category": "Sector", "ref": "Reference",
              "salary": "Salary"},
             "{title} - {city} - {salary}", _ORDER_A, "colon", 1, "", "intl", "full", "", "", "slash",
             meta="inline", short=0.05, category=0),
        Site("adsgazette.co.uk", "en",
             ("Gazette Classifieds", "Situations vacant"),
             ("Place your own ad from £5.", "Gazette Classifieds"),
             {"location": "Area"},
             "{TITLE}", _ORDER_B, "none", 0, "", "compact", "none", "", "", "slash",
             omits=("url", "category", "location"), short=0.5, html=0.1, kind="classifieds"),
        Site("classifiedsdirect.com", "en",
             ("Classifieds Direct", "Jobs & services"),
             ("Post a free ad", "ClassifiedsDirect.com"),
             {"location": "Town"},
             "{title}", _ORDER_B, "none", 1, "", "national", "none", "", "city", "iso",
             omits=("url", "category"), short=0.5, kind="classifieds"),
    ],
    "nl": [
        Site("vacaturesnoord.nl", "nl",
             ("VacaturesNoord - werk in de regio", "Home › Vacatures › {category} › {city}",
              "Inloggen | Registreren | Vacature plaatsen"),
             ("Solliciteer direct", "Meer vacatures in {city}",
              "Maak een gratis account aan en ontvang elke ochtend nieuwe vacatures per e-mail.",
              "© {year} VacaturesNoord B.V. Alle rechten voorbehouden. | Privacy | Cookies"),
             {"organisation": "Bedrijf", "location": "Locatie", "category": "Vakgebied", "ref": "Referentie",
              "posted": "Geplaatst", "salary": "Salaris"},
             "{title} – {city}", _ORDER_A, "plain", 0, "•", "dashed", "full", "tracking", "round", "long"),
        Site("banenbank.nl", "nl",
             ("Banenbank", "Zoek in meer dan 80.000 vacatures", "Vacaturedetails"),
             ("Meld deze vacature", "Banenbank is niet verantwoordelijk voor de inhoud van vacatures.",
              "Download de Banenbank-app voor iOS en Android", "Copyright {year} Banenbank Media"),
             {"organisation": "Werkgever", "location": "Standplaats", "category": "Branche",
              "ref": "Vacaturenummer", "posted": "Datum", "contract": "Dienstverband"},
             "{title}", _ORDER_B, "caps", 0, "-", "intl", "short", "board", "exact", "dash", category=1,
             address=True),
        Site("werkplein.be", "nl",
             ("Werkplein.be", "Vind je job in Vlaanderen"),
             ("Bewaar | Deel | Print", "Werkplein.be - de vriendelijkste jobsite van Vlaanderen",
              "Privacyverklaring | Cookie-instellingen"),
             {"organisation": "Bedrijf", "location": "Plaats", "posted": "Gepubliceerd", "salary": "Loon",
              "hours": "Uren"},
             "{title} ({city})", _ORDER_C, "colon", 1, "", "intl_spaced", "full", "company", "city", "iso",
             meta="inline", omits=("category",), category=2),
        Site("jobsinvlaanderen.be", "nl",
             ("JobsInVlaanderen", "Werk zoeken. Slim aanwerven.", "Terug naar de zoekresultaten"),
             ("Solliciteer met je profiel in één klik.", "Gelijkaardige jobs in {category}",
              "JobsInVlaanderen © {year} | Gebruiksvoorwaarden | Toegankelijkheid"),
             {"organisation": "Werkgever", "location": "Werkplaats", "category": "Sector",
              "ref": "Referentienummer", "posted": "Online sinds"},
             "{title} | {company}", _ORDER_A, "plain", 1, "*", "compact", "upper", "tracking", "exact", "long",
             category=0, address=True),
        Site("hetvacaturehuis.nl", "nl",
             ("Het Vacaturehuis", "{city} » {category}"),
             ("Betaal nooit voor een baan. Wordt er om geld gevraagd, meld de vacature dan.",
              "Het Vacaturehuis © {year}"),
             {"location": "Plaats", "category": "Categorie", "posted": "Toegevoegd", "hours": "Uren per week"},
             "{title} in {city}", _ORDER_B, "none", 0, "", "paren", "none", "", "", "dash",
             omits=("url",), short=0.05, category=2),
        Site("regiowerk.nl", "nl",
             ("RegioWerk", "Jouw volgende baan vind je hier", "Vacatures › {category}"),
             ("Solliciteer op deze vacature", "Tip een vriend", "Vacaturemeldingen | Loopbaanadvies | Salarischeck",
              "RegioWerk is een handelsnaam van RW Online B.V."),
             {"organisation": "Opdrachtgever", "location": "Regio", "category": "Categorie", "ref": "Ref.nr.",
              "salary": "Salaris", "contract": "Contract"},
             "{title}", _ORDER_D, "caps", 1, "•", "intl_compact", "legal_long", "board", "round", "iso",
             omits=("phone",), html=0.15, category=1),
        Site("technischebanen.nl", "nl",
             ("TechnischeBanen", "Vacatures voor vakmensen", "Vacatures | Werkgevers | Advies"),
             ("Volg TechnischeBanen op Facebook en Instagram", "© {year} TechnischeBanen"),
             {"organisation": "Bedrijf", "location": "Werklocatie", "category": "Vakgebied", "ref": "Onze ref",
              "posted": "Geplaatst op"},
             "{TITLE} - {city}", _ORDER_C, "plain", 0, "-", "national", "short", "tracking", "exact", "long",
             omits=("phone",), category=2, address=True),
        Site("werkzoekers.nl", "nl",
             ("Werkzoekers", "Duizenden vacatures op één plek", "Vacature"),
             ("Solliciteer nu", "Door te solliciteren ga je akkoord met de voorwaarden en de privacyverklaring.",
              "Werkzoekers © {year}"),
             {"organisation": "Adverteerder", "location": "Regio", "category": "Branche", "ref": "Referentie",
              "salary": "Salaris"},
             "{title} - {city} - {salary}", _ORDER_A, "colon", 1, "", "intl", "full", "", "", "dash",
             meta="inline", short=0.05, category=0),
        Site("prikbordplus.nl", "nl",
             ("Prikbord Plus", "Personeel gevraagd"),
             ("Plaats zelf een advertentie vanaf € 5.", "Prikbord Plus"),
             {"location": "Plaats"},
             "{TITLE}", _ORDER_B, "none", 0, "", "compact", "none", "", "", "dash",
             omits=("url", "category", "location"), short=0.5, html=0.1, kind="classifieds"),
        Site("buurtadvertenties.nl", "nl",
             ("Buurtadvertenties", "Vacatures en diensten"),
             ("Plaats gratis een advertentie", "Buurtadvertenties.nl"),
             {"location": "Gemeente"},
             "{title}", _ORDER_B, "none", 1, "", "national", "none", "", "city", "iso",
             omits=("url", "category"), short=0.5, kind="classifieds"),
    ],
    # International boards: Dutch ads under English labels and boilerplate (translated field labels).
    "intl": [
        Site("eurojobs.example", "en",
             ("EuroJobs - jobs across Europe", "Netherlands & Belgium › {category}"),
             ("Apply via the employer's website", "EuroJobs © {year} | Privacy"),
             {"organisation": "Company", "location": "Location", "category": "Category", "ref": "Reference",
              "posted": "Posted"},
             "{title} - {city}", _ORDER_A, "plain", 0, "•", "intl", "full", "tracking", "exact", "iso",
             category=1, kind="international"),
        Site("expatjobs.example", "en",
             ("ExpatJobs", "Work in the Low Countries", "Job details"),
             ("Share | Save | Report", "ExpatJobs © {year}. All rights reserved."),
             {"organisation": "Employer", "location": "City", "category": "Field", "posted": "Date"},
             "{title} ({city})", _ORDER_B, "caps", 1, "-", "intl_compact", "short", "board", "round", "slash",
             category=0, kind="international"),
    ],
}

#: Boards that carry ads of one country only (the others carry both countries of their language).
SITE_COUNTRIES = {"hireireland.ie": ("IE",), "worksmart.ie": ("IE",), "werkplein.be": ("BE",),
                  "jobsinvlaanderen.be": ("BE",)}


def serves(site: Site, country: str) -> bool:
    return country in SITE_COUNTRIES.get(site.name, (country,))


# --- helpers ----------------------------------------------------------------------------------------------

def slots(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _fill(template: str, values: dict) -> str:
    text = template.format_map(values)
    return text[:1].upper() + text[1:]


def km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance in km between two (lat, lon) points."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(min(1.0, h)))


def _article(phrase: str) -> str:
    """'a' or 'an' before an English phrase."""
    word = phrase.split()[0]
    if word.isupper() and len(word) > 1:
        return ("an " if word[0] in "AEFHILMNORSX" else "a ") + phrase
    return ("an " if word[0].lower() in "aeiou" and not word.lower().startswith(("uni", "eu")) else "a ") + phrase


def display_title(title: str, lang: str) -> str:
    """Title as a heading: English words capitalised (acronyms kept), Dutch only its first letter."""
    if lang == "nl" and not _is_english(title):
        return title[:1].upper() + title[1:]
    small = {"and", "of", "de", "in", "for"}
    out = []
    for i, word in enumerate(title.split()):
        if any(c.isupper() for c in word) or (i and word in small):
            out.append(word)
        else:
            out.append("-".join(p[:1].upper() + p[1:] for p in word.split("-")))
    return " ".join(out)


_ENGLISH_TITLES = {t for s in SECTORS for t in s.titles["en"]}


def _is_english(title: str) -> bool:
    return title.split(" ", 1)[-1] in _ENGLISH_TITLES or title in _ENGLISH_TITLES


def _join(items: list[str], lang: str) -> str:
    conj = " and " if lang == "en" else " en "
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + conj + items[-1]


def _slug(text: str) -> str:
    text = text.lower().replace("'", "")
    table = str.maketrans("éèëêïöüóáàç", "eeeeiouoaac")
    return re.sub(r"[^a-z0-9]+", "-", text.translate(table)).strip("-")


def _date(day: dt.date, lang: str, style: str = "long") -> str:
    if style == "slash":
        return f"{day.day:02d}/{day.month:02d}/{day.year}"
    if style == "dash":
        return f"{day.day:02d}-{day.month:02d}-{day.year}"
    if style == "iso":
        return day.isoformat()
    return f"{day.day} {MONTHS[lang][day.month - 1]} {day.year}"


def _phone_groups(digits: str) -> str:
    if len(digits) <= 4:
        return digits
    if len(digits) == 6:
        return f"{digits[:3]} {digits[3:]}"
    if len(digits) == 7:
        return f"{digits[:3]} {digits[3:]}"
    return f"{digits[:4]} {digits[4:]}"


def format_phone(area: str, number: str, country: str, style: str) -> str:
    """One phone number in a site's house style: area code national form ('0113'), subscriber digits."""
    cc = COUNTRY_CODE[country]
    trunk = area[1:]
    grouped = _phone_groups(number)
    if style == "intl":
        return f"+{cc} {trunk} {grouped}"
    if style == "intl_zero":
        return f"+{cc} (0){trunk} {grouped}"
    if style == "intl_compact":
        return f"+{cc}{trunk}{number}"
    if style == "intl_spaced":
        return f"+{cc} {trunk} " + " ".join(number[i:i + 2] for i in range(0, len(number), 2))
    if style == "compact":
        return area + number
    if style == "dashed":
        return f"{area}-{number}"
    if style == "paren":
        return f"({area}) {number}"
    return f"{area} {grouped}"  # national


def format_organisation(name: str, legal: str, country: str, style: str) -> str:
    if style == "short":
        return name
    if style == "upper":
        return f"{name} {legal}".upper()
    if style == "legal_long":
        other = [s for s in LEGAL[country] if s != legal]
        return f"{name} {other[0] if other else legal}"
    return f"{name} {legal}"


# --- the model: companies, templates, openings -----------------------------------------------------------

@dataclass
class Office:
    city: City
    coord: tuple[float, float]
    address: str
    phone: str     # subscriber digits; the area code is the city's
    email: str


@dataclass
class Company:
    index: int
    lang: str
    country: str
    sector: Sector
    name: str
    legal: str
    domain: str
    offices: list[Office]
    description: list[str]
    contacts: list[str]
    url_pattern: str
    ref_format: str
    careers: Site
    titles_used: set = field(default_factory=set)

    @property
    def canonical(self) -> str:
        return f"{self.name} {self.legal}"


@dataclass
class Template:
    company: Company
    index: int
    sentences: dict          # section → list of sentence templates
    overrides: dict          # section → per sentence, its own tasks, skills, benefits and traits
    values: dict             # slot values shared by every opening of the template
    primary: Site            # where its openings are first posted
    style_seed: int          # layout and messiness choices of first postings
    local_contacts: bool     # city variants give the local office's phone and e-mail


@dataclass
class Opening:
    key: int
    template: Template
    title: str
    office: Office
    ref: str
    jobid: int
    posted: dt.date
    years: int
    contact: str

    @property
    def city(self) -> City:
        return self.office.city


class Posting(NamedTuple):
    item: dict
    opening: Opening
    primary: bool


class JobAds(NamedTuple):
    items: list[dict]
    pairs: list[dict]


class Pools:
    """A split's share of every pool."""

    def __init__(self, split: str):
        self.split = split
        self.sentences = {lang: {section: half(pool[lang], split) for section, pool in POOLS.items()}
                          for lang in LANGS}
        self.short = {lang: half(SHORT[lang], split) for lang in LANGS}
        self.cities = {country: half(CITIES[country], split) for lang in LANGS for country in COUNTRIES[lang]}
        self.stems = {lang: half(COMPANY_STEMS[lang], split) for lang in LANGS}
        self.sites = {lang: half(SITES[lang], split) for lang in LANGS}
        self.intl = half(SITES["intl"], split)
        self.careers = {lang: half(CAREERS[lang], split) for lang in LANGS}
        self.headings = {lang: {s: half(h, split) for s, h in HEADINGS[lang].items()} for lang in LANGS}
        self.refs = half(REF_FORMATS, split)
        self.readvert = {lang: half(READVERT[lang], split) for lang in LANGS}
        self.readvert_line = {lang: half(READVERT_LINE[lang], split)[0] for lang in LANGS}
        self.teaser = {lang: half(TEASER[lang], split)[0] for lang in LANGS}
        vocab = {"benefits": BENEFITS, "traits": TRAITS, "values": VALUES, "investments": INVESTMENTS,
                 "certs": CERTS, "schedules": SCHEDULES, "managers": MANAGERS, "contracts": CONTRACTS,
                 "trials": TRIALS, "starts": STARTS, "streets": STREETS, "first": FIRST_NAMES, "last": LAST_NAMES}
        self.vocab = {name: {lang: half(pool[lang], split) for lang in LANGS} for name, pool in vocab.items()}
        self.sector = {(s.key, lang): {name: half(getattr(s, name)[lang], split)
                                       for name in ("titles", "tasks", "skills", "places", "customers")}
                       for s in SECTORS for lang in LANGS}


def template_pool(split: str) -> dict:
    """lang → section → the split's sentence templates (tests check the splits share none)."""
    return Pools(split).sentences


# --- the generator ------------------------------------------------------------------------------------------

class _Builder:
    def __init__(self, split: str, seed: int):
        self.split = split
        self.rng = random.Random(seed)
        self.pools = Pools(split)
        self.names: set[str] = set()
        self.companies: list[Company] = []
        self.templates: list[Template] = []
        self.openings: list[Opening] = []
        self.postings: list[Posting] = []
        self.grouped = 0  # items in a group of two or more

    # - companies -

    def _unique_name(self, lang: str, sector: Sector) -> str:
        rng = self.rng
        for _ in range(1000):
            stem = rng.choice(self.pools.stems[lang])
            word = rng.choice(sector.words[lang])
            if lang == "en":
                name = f"{stem} {word}"
            else:
                word, before = word
                name = f"{word} {stem}" if before else f"{stem} {word}"
            if name not in self.names:
                self.names.add(name)
                return name
        raise RuntimeError("company names exhausted")

    def _office(self, lang: str, city: City, domain: str, local: bool) -> Office:
        rng = self.rng
        bearing, dist = rng.uniform(0, 2 * math.pi), rng.uniform(0.2, 2.5)
        lat = city.lat + dist / 111.0 * math.cos(bearing)
        lon = city.lon + dist / (111.0 * math.cos(math.radians(city.lat))) * math.sin(bearing)
        street, num = rng.choice(self.pools.vocab["streets"][lang]), rng.randint(1, 180)
        letters = "ABDEFGHJLNPQRSTUWXYZ"
        if city.country == "UK":
            inward = f"{rng.randint(1, 9)}{rng.choice(letters)}{rng.choice(letters)}"
            address = f"{num} {street}, {city.name} {city.postcode} {inward}"
        elif city.country == "IE":
            code = "".join(rng.choice(letters + "0123456789") for _ in range(4))
            address = f"{num} {street}, {city.name}, {city.postcode} {code}"
        elif city.country == "NL":
            postcode = f"{int(city.postcode) + rng.randint(0, 40)} {rng.choice(letters)}{rng.choice(letters)}"
            address = f"{street} {num}, {postcode} {city.name}"
        else:
            address = f"{street} {num}, {city.postcode} {city.name}"
        if city.country == "IE":
            length = 7 if city.area in ("01", "021") else 6
        else:
            length = {"UK": 11, "NL": 10, "BE": 9}[city.country] - len(city.area)
        number = str(rng.randint(2, 9)) + "".join(str(rng.randrange(10)) for _ in range(length - 1))
        box = _slug(city.name).replace("-", "") if local else rng.choice(
            ["jobs", "recruitment", "careers", "hr"] if lang == "en" else ["vacatures", "werkenbij", "hr", "jobs"])
        return Office(city, (round(lat, 6), round(lon, 6)), address, number, f"{box}@{domain}")

    def company(self, lang: str) -> Company:
        rng, pools = self.rng, self.pools
        country = COUNTRIES[lang][0] if rng.random() < 0.72 else COUNTRIES[lang][1]
        sector = rng.choice(SECTORS)
        name = self._unique_name(lang, sector)
        legal = LEGAL[country][0]
        domain = _slug(name).replace("-", "") + "." + TLD[country]
        cities = pools.cities[country][:]
        rng.shuffle(cities)
        chosen: list[City] = []
        wanted = rng.randint(4, 7)
        for city in cities:  # offices at least MIN_VARIANT_KM apart, so city variants are far apart
            if all(km((city.lat, city.lon), (c.lat, c.lon)) >= MIN_VARIANT_KM for c in chosen):
                chosen.append(city)
            if len(chosen) == wanted:
                break
        offices = [self._office(lang, chosen[0], domain, local=False)]
        offices += [self._office(lang, city, domain, local=True) for city in chosen[1:]]
        values = self._company_values(lang, sector, name, offices[0].city)
        pool = pools.sentences[lang]["company"]
        customers = rng.sample(self.pools.sector[sector.key, lang]["customers"], 2)
        description = [_fill(t, dict(values, customers=customers[k % 2]))
                       for k, t in enumerate(rng.sample(pool, rng.randint(4, 6)))]
        first, last = pools.vocab["first"][lang], pools.vocab["last"][lang]
        contacts = [f"{rng.choice(first)} {rng.choice(last)}" for _ in range(2)]
        stem = "careers" if lang == "en" else "vacatures"
        url_pattern = rng.choice([f"https://www.{domain}/{stem}/{{jobid}}",
                                  f"https://www.{domain}/{stem}/{{slug}}-{{jobid}}",
                                  f"https://{'careers' if lang == 'en' else 'werkenbij'}.{domain}/"
                                  f"{'vacancy' if lang == 'en' else 'vacature'}/{{jobid}}"])
        header, footer = rng.choice(pools.careers[lang])
        careers = Site(domain, lang, tuple(header), tuple(footer),
                       {"location": "Location" if lang == "en" else "Locatie",
                        "ref": "Reference" if lang == "en" else "Vacaturenummer",
                        "hours": "Hours" if lang == "en" else "Uren"},
                       "{title}", rng.choice([_ORDER_A, _ORDER_B]), rng.choice(["plain", "colon"]),
                       rng.randrange(2), rng.choice(["", "•", "-"]), rng.choice(["national", "intl"]), "full",
                       "company", rng.choice(["exact", "round", ""]), rng.choice(["long", "iso"]),
                       omits=rng.choice([(), ("category",)]), short=0.0, html=0.03, category=rng.randrange(3),
                       kind="careers")
        company = Company(len(self.companies), lang, country, sector, name, legal, domain, offices, description,
                          contacts, url_pattern, rng.choice(pools.refs), careers)
        self.companies.append(company)
        return company

    def _company_values(self, lang: str, sector: Sector, name: str, hq: City) -> dict:
        rng, vocab = self.rng, self.pools.vocab
        year = rng.randint(1982 if sector.key == "it" else 1921, 2016)
        values = rng.sample(vocab["values"][lang], 3)
        return {
            "company": name, "year": year, "age": 2025 - year, "hq": hq.name,
            "employees": rng.choice([35, 60, 85, 120, 180, 240, 350, 420, 600, 850, 1200, 2300, 4100]),
            "offices": rng.randint(2, 40), "customers": rng.choice(self.pools.sector[sector.key, lang]["customers"]),
            "noun": sector.noun[lang][0], "nouns": sector.noun[lang][1], "loyal": rng.choice([5, 10, 15, 20]),
            "values": _join(values, lang), "values_lc": _join(values, lang),
            "investments": _join(rng.sample(vocab["investments"][lang], 2), lang),
            "growth_year": rng.randint(2010, 2021), "hires": rng.choice([20, 30, 40, 50, 75, 100, 150, 200]),
            "award_year": rng.randint(2018, 2025), "target_year": rng.choice([2028, 2030, 2032, 2035]),
            "nationalities": rng.choice([10, 15, 20, 25, 30, 40]), "cert": rng.choice(vocab["certs"][lang]),
        }

    # - templates and openings -

    def _title(self, company: Company, mixed: bool) -> str:
        lang = "en" if mixed else company.lang
        titles = [t for t in self.pools.sector[company.sector.key, lang]["titles"] if t not in company.titles_used]
        title = self.rng.choice(titles or self.pools.sector[company.sector.key, lang]["titles"])
        company.titles_used.add(title)
        return title

    def template(self, company: Company) -> Template:
        rng, pools, lang = self.rng, self.pools, company.lang
        sector = pools.sector[company.sector.key, lang]
        vocab = pools.vocab
        low, high = company.sector.salary[lang]
        step = 100 if lang == "nl" else 500
        lo = rng.randrange(low, high - (high - low) // 4, step)
        hi = lo + step * rng.randint(max(1, (high - low) // 8 // step), max(2, (high - low) // 3 // step))
        if lang == "en":
            cur = "£" if company.country == "UK" else "€"
            salary = (f"{cur}{lo:,} to {cur}{hi:,} a year" if rng.random() < 0.5
                      else f"{cur}{lo:,} - {cur}{hi:,} per annum")
        else:
            salary = (f"€ {lo:,} tot € {hi:,} bruto per maand" if rng.random() < 0.5
                      else f"€{lo:,} - €{hi:,} bruto p/m").replace(",", ".")
        hours = rng.choice([16, 20, 24, 28, 32, 36, 37.5, 38, 40])
        hours_text = f"{hours:g}" if lang == "en" else f"{hours:g}".replace(".", ",")
        month = MONTHS[lang][rng.randrange(12)]
        values = {
            "place": rng.choice(sector["places"]), "manager": rng.choice(vocab["managers"][lang]),
            "team_size": rng.randint(4, 40), "notice": rng.choice([2, 4, 6, 8]),
            "country": COUNTRY_NAME[company.country], "salary": salary, "hours": hours_text,
            "hours_min": f"{max(8, hours - 8):g}", "holiday": rng.randint(25, 33),
            "contract": rng.choice(vocab["contracts"][lang]), "schedule": rng.choice(vocab["schedules"][lang]),
            "trial": rng.choice(vocab["trials"][lang]), "start": rng.choice(vocab["starts"][lang]).format(month=month),
            "reply_days": rng.choice([3, 5, 7, 10]),
        }
        # each sentence names other tasks, skills and benefits of the template's own few (rotated)
        tasks = rng.sample(sector["tasks"], 4)
        skills = rng.sample(sector["skills"], 3)
        benefits = rng.sample(vocab["benefits"][lang], 3)
        chosen, overrides = {}, {}
        for section, low_n, high_n in (("role", 3, 5), ("requirements", 3, 5), ("offer", 3, 5), ("apply", 2, 3)):
            pool = pools.sentences[lang][section][:]
            rng.shuffle(pool)
            wanted, used, picked = rng.randint(low_n, high_n), set(), []
            for sentence in pool:  # no two sentences of a section giving the same salary, hours, e-mail, ...
                exclusive = slots(sentence) & EXCLUSIVE_SLOTS
                if exclusive & used:
                    continue
                used |= exclusive
                picked.append(sentence)
                if len(picked) == wanted:
                    break
            chosen[section] = picked
            overrides[section] = [
                {"task": tasks[k % 4], "task2": tasks[(k + 1) % 4], "task3": tasks[(k + 2) % 4],
                 "skill": skills[k % 3], "skill2": skills[(k + 1) % 3], "benefit": benefits[k % 3],
                 "benefit2": benefits[(k + 1) % 3], "traits": _join(rng.sample(vocab["traits"][lang], 3), lang)}
                for k in range(len(picked))]
        boards = [s for s in pools.sites[lang] if serves(s, company.country)]
        # a classified-ads board (mostly two-line ads) is rarely where a template is first posted
        board = rng.choice([s for s in boards if s.kind != "classifieds" or rng.random() < 0.15])
        primary = company.careers if rng.random() < 0.3 else board
        template = Template(company, len(self.templates), chosen, overrides, values, primary,
                            rng.randrange(2 ** 32), rng.random() < 0.5)
        self.templates.append(template)
        return template

    def opening(self, template: Template, title: str, office: Office, posted: dt.date, years: int) -> Opening:
        rng, company = self.rng, template.company
        n = rng.randint(100, 99999)
        ref = company.ref_format.format(n=n, yy=posted.year % 100,
                                        initials="".join(w[0] for w in company.name.split()[:2]).upper())
        contact = company.contacts[0] if office is company.offices[0] or not template.local_contacts else \
            company.contacts[1]
        opening = Opening(len(self.openings), template, title, office, ref, rng.randint(1000, 999999), posted,
                          years, contact)
        self.openings.append(opening)
        return opening

    def contact_office(self, opening: Opening) -> Office:
        """The office whose phone and e-mail an ad gives: the branch's own, or head office's."""
        template = opening.template
        return opening.office if template.local_contacts else template.company.offices[0]

    # - rendering -

    def content(self, opening: Opening, posted: dt.date, readvert_of: dt.date | None) -> tuple[dict, dict]:
        """The opening's sections (lists of sentences) and the values its ads are filled with."""
        template, company = opening.template, opening.template.company
        lang = company.lang
        contact_office = self.contact_office(opening)
        role = opening.title
        deadline = posted + dt.timedelta(days=21 + (opening.jobid % 22))
        url = company.url_pattern.format(jobid=opening.jobid, slug=_slug(role))
        values = dict(template.values)
        values.update({
            "company": company.name, "role": role, "Role": display_title(role, lang), "city": opening.city.name,
            "a_role": _article(role), "years": opening.years, "ref": opening.ref, "contact": opening.contact,
            "email": contact_office.email,
            "phone": format_phone(contact_office.city.area, contact_office.phone, company.country, "national"),
            "deadline": _date(deadline, lang), "url": url,
        })
        sections = {"company": list(company.description)}
        for section in ("role", "requirements", "offer", "apply"):
            sections[section] = [_fill(t, {**values, **o})
                                 for t, o in zip(template.sentences[section], template.overrides[section])]
        if readvert_of is not None:
            sections["apply"].append(self.pools.readvert_line[lang].format(date=_date(readvert_of, lang)))
        return sections, values

    def render(self, opening: Opening, site: Site, posted: dt.date, rng: random.Random, *, repost: bool,
               readvert_of: dt.date | None = None) -> dict:
        company = opening.template.company
        lang = company.lang
        sections, values = self.content(opening, posted, readvert_of)
        contact_office = self.contact_office(opening)
        country = company.country
        phone = format_phone(contact_office.city.area, contact_office.phone, country, site.phone)
        email = contact_office.email
        organisation = format_organisation(company.name, company.legal, country, site.organisation)
        category = company.sector.category[lang][site.category]
        title = display_title(opening.title, lang)
        if readvert_of is not None and rng.random() < 0.6:
            title = f"{title} ({rng.choice(self.pools.readvert[site.lang]).lower()})"
        short = rng.random() < site.short or (repost and rng.random() < 0.01)

        # the text of phone numbers inside sentences follows the site's style
        values = dict(values, phone=phone, organisation=organisation, category=category)
        for section in sections:
            sections[section] = [s.replace(format_phone(contact_office.city.area, contact_office.phone, country,
                                                        "national"), phone) for s in sections[section]]

        teaser = False
        if repost and not short:
            drop = rng.choice([0.0, 0.05, 0.1, 0.15, 0.2, 0.3])
            for section in ("role", "requirements", "offer", "apply"):
                kept = [s for s in sections[section] if rng.random() >= drop]
                sections[section] = kept or sections[section][:1]
            if rng.random() < 0.2:
                sections["company"] = sections["company"][:rng.randint(0, 2)]
            if rng.random() < 0.2:
                for section in sections:
                    rng.shuffle(sections[section])
            swaps = [pair for pair in SYNONYMS[lang] if rng.random() < 0.25]
            for section in sections:
                sections[section] = [_swap(s, swaps) for s in sections[section]]
            if rng.random() < 0.2:
                rate = rng.choice([0.02, 0.04])
                for section in sections:
                    sections[section] = [edited(s, lang, rate, rng)[0] if rng.random() < 0.5 else s
                                         for s in sections[section]]
            teaser = rng.random() < 0.04

        order = list(site.order)
        if repost and rng.random() < 0.3:
            middle = order[1:-1]
            rng.shuffle(middle)
            order = [order[0], *middle, order[-1]]

        fill = {"category": category, "city": opening.city.name, "year": posted.year, "company": company.name,
                "organisation": organisation, "country": COUNTRY_NAME[country]}
        header = [line.format(**fill).replace("..", ".") for line in site.header]
        footer = [line.format(**fill).replace("..", ".") for line in site.footer]
        title_line = site.title.format(title=title, TITLE=title.upper(), city=opening.city.name,
                                       company=company.name, salary=values["salary"])
        if rng.random() < 0.06:
            title_line = title_line.upper()
        title_field = title_line

        lines: list[str] = []  # the ad itself, between the site's header and footer
        meta_end = 0           # lines before it are the site's labelled fields
        if short:
            header, footer = header[:1], footer[-1:]
            line1, line2 = rng.choice(self.pools.short[lang])
            short_values = dict(values, ref_or_title=opening.ref if rng.random() < 0.5 else title)
            lines += [_fill(line1, short_values), _fill(line2, short_values)]
        else:
            meta = self._meta(site, opening, organisation, category, values, posted, contact_office, rng)
            if meta:
                lines += meta if site.meta == "lines" else [" | ".join(meta)]
            if readvert_of is not None:
                lines.append(f"{self.pools.readvert[site.lang][0]}: {_date(posted, site.lang, site.date)}")
            meta_end = len(lines)
            if teaser:
                order = ["role", "requirements"]
                sections["role"] = sections["role"][:2]
                sections["requirements"] = sections["requirements"][:2]
            for section in order:
                sentences = sections.get(section) or []
                if not sentences:
                    continue
                heading = self.pools.headings[lang][section][site.heading_choice].format(company=company.name)
                lines.append("")
                if site.headings == "caps":
                    lines.append(heading.upper())
                elif site.headings == "colon":
                    lines.append(heading.rstrip("?") + ":")
                elif site.headings == "plain":
                    lines.append(heading)
                if site.bullets and section in ("role", "requirements", "offer"):
                    lines += [f"{site.bullets} {s}" for s in sentences]
                else:
                    lines.append(" ".join(sentences))
            if teaser:
                where = values["url"] if "url" not in site.omits and site.url else company.domain
                lines += ["", self.pools.teaser[lang].format(where=where)]
            lines.append("")

        # messiness of the ad (the site's own boilerplate is generated, and clean)
        prose = "\n".join(lines[meta_end:])
        if rng.random() < 0.25:
            prose = _typos(prose, rng.randint(1, 4), rng)
        ad = "\n".join([*lines[:meta_end], prose])
        if rng.random() < 0.05:
            ad = _unpunctuated(ad)
        if rng.random() < site.html:
            ad = _html(ad, rng)
        body = "\n".join([*header, ad, *footer])

        fields: dict = {"title": title_field, "body": body}
        if site.organisation != "none" and "organisation" not in site.omits and not short:
            fields["organisation"] = organisation
        if "phone" not in site.omits and (not short or rng.random() < 0.5):
            fields["phone"] = phone
        if "email" not in site.omits and rng.random() < 0.85:
            fields["email"] = email if rng.random() < 0.9 else _case_variant(email, company.domain)
        url = self._url(site, opening, values["url"], rng)
        if url:
            fields["url"] = url
        if "category" not in site.omits:
            fields["category"] = category
        location = self._location(site, opening)
        if location:
            fields["location"] = location
        return {"id": "", "lang": lang, "site": site.name, "group": "", "company": company.canonical,
                "posted": posted.isoformat(), "fields": fields, "text": f"{title_field}\n\n{body}"}

    def _meta(self, site: Site, opening: Opening, organisation: str, category: str, values: dict,
              posted: dt.date, contact_office: Office, rng: random.Random) -> list[str]:
        out = []
        shown = {"organisation": organisation if site.organisation != "none" else "",
                 "location": opening.city.name, "category": category, "ref": opening.ref,
                 "posted": _date(posted, site.lang if site.kind != "international" else "en", site.date),
                 "salary": values["salary"], "hours": values["hours"], "contract": values["contract"]}
        for key, label in site.labels.items():
            if shown.get(key):
                out.append(f"{label}: {shown[key]}")
        if site.address or (rng.random() < 0.15):
            out.append(("Address" if site.lang == "en" else "Adres") + ": " + opening.office.address)
        if rng.random() < 0.15:
            out.append(("Contact" if site.lang == "en" else "Contactpersoon") + f": {opening.contact}, "
                       + format_phone(contact_office.city.area, contact_office.phone, opening.template.company.country,
                                      site.phone))
        return out

    def _url(self, site: Site, opening: Opening, canonical: str, rng: random.Random) -> str:
        if not site.url or "url" in site.omits:
            return ""
        if site.url == "board":
            path = "job" if site.lang == "en" else "vacature"
            return f"https://www.{site.name}/{path}/{rng.randint(10 ** 6, 10 ** 7)}"
        url = canonical
        if rng.random() < 0.3:
            url = url.replace("https://", "http://")
        if rng.random() < 0.3:
            url = url.replace("://www.", "://")
        if rng.random() < 0.3:
            url += "/"
        if site.url == "tracking" or rng.random() < 0.2:
            source = site.name.split(".")[0]
            url += rng.choice([f"?utm_source={source}&utm_medium=jobboard&utm_campaign=vacancies",
                               f"?src={source}", f"?ref={source}&id={rng.randint(100, 9999)}",
                               f"?utm_source={source}#apply"])
        return url

    def _location(self, site: Site, opening: Opening) -> dict | None:
        if not site.geo or "location" in site.omits:
            return None
        if site.geo == "city":
            return {"lat": round(opening.city.lat, 4), "lon": round(opening.city.lon, 4)}
        digits = 3 if site.geo == "round" else 6
        return {"lat": round(opening.office.coord[0], digits), "lon": round(opening.office.coord[1], digits)}

    # - the corpus of one language -

    def post(self, opening: Opening, site: Site, posted: dt.date, rng: random.Random, *, primary: bool,
             repost: bool, readvert_of: dt.date | None = None) -> None:
        item = self.render(opening, site, posted, rng, repost=repost, readvert_of=readvert_of)
        item["group"] = f"{self.split[:2]}g{opening.key:05d}"
        self.postings.append(Posting(item, opening, primary))

    def company_block(self, lang: str) -> int:
        """One company with its templates, openings and postings; returns the number of items added."""
        rng = self.rng
        before = len(self.postings)
        company = self.company(lang)
        n_templates = rng.choices([1, 2, 3], [0.55, 0.3, 0.15])[0]
        for _ in range(n_templates):
            template = self.template(company)
            mixed = lang == "nl" and company.sector.key in MIXED_SECTORS and rng.random() < 0.15
            title = self._title(company, mixed)
            base_office = rng.choice(company.offices)
            posted = dt.date(2025, 1, 6) + dt.timedelta(days=rng.randrange(330))
            years = rng.randint(1, 3)
            openings = [self.opening(template, title, base_office, posted, years)]
            others = [o for o in company.offices if o is not base_office]
            if others and rng.random() < 0.45:  # the same template for other cities
                for office in rng.sample(others, min(len(others), rng.randint(1, 4))):
                    openings.append(self.opening(template, title, office, posted + dt.timedelta(
                        days=rng.randint(0, 3)), years))
            if rng.random() < 0.25:  # another title: seniority or another role of the sector
                for _ in range(rng.randint(1, 2)):
                    if rng.random() < 0.5 and not title.split()[0] in SENIORITY["en"] + SENIORITY["nl"]:
                        word = rng.choice(SENIORITY["en" if mixed else lang])
                        other = f"{word} {title}"
                        years_other = 6 if word in ("senior", "lead", "ervaren") else 1
                    else:
                        other = self._title(company, mixed)
                        years_other = rng.randint(1, 4)
                    if other == title or other in {o.title for o in openings}:
                        continue
                    office = base_office if rng.random() < 0.6 else rng.choice(company.offices)
                    openings.append(self.opening(template, other, office, posted + dt.timedelta(
                        days=rng.randint(0, 10)), years_other))
            if rng.random() < 0.15:  # a new vacancy for the same job, months later
                openings.append(self.opening(template, title, base_office, posted + dt.timedelta(
                    days=rng.randint(60, 210)), years))
            for opening in openings:
                self.post_opening(opening)
        return len(self.postings) - before

    def post_opening(self, opening: Opening) -> None:
        rng, template = self.rng, opening.template
        lang = template.company.lang
        # first postings of one template share site and layout choices: hard negatives look alike
        self.post(opening, template.primary, opening.posted, random.Random(template.style_seed), primary=True,
                  repost=False)
        share = self.grouped / max(1, len(self.postings))
        before = len(self.postings)
        if rng.random() < (0.3 if share < REPOST_SHARE else 0.08):
            # classified ads (mostly two lines) carry a repost less often than boards do
            candidates = [s for s in self.pools.sites[lang] if s is not template.primary
                          and serves(s, template.company.country)
                          and (s.kind != "classifieds" or rng.random() < 0.08)]
            if template.primary is not template.company.careers:
                candidates.append(template.company.careers)
            if lang == "nl":
                candidates += self.pools.intl
            count = rng.choices([1, 2, 3, 4], [0.45, 0.3, 0.15, 0.1])[0]
            for site in rng.sample(candidates, min(count, len(candidates))):
                posted = opening.posted + dt.timedelta(days=rng.randint(0, 6))
                self.post(opening, site, posted, random.Random(rng.randrange(2 ** 32)), primary=False,
                          repost=True)
            if rng.random() < 0.2:
                self._readvert(opening)
        elif rng.random() < 0.04:
            self._readvert(opening)
        if len(self.postings) > before:
            self.grouped += 1 + len(self.postings) - before

    def _readvert(self, opening: Opening) -> None:
        rng, template = self.rng, opening.template
        site = template.primary if rng.random() < 0.6 else rng.choice(
            [s for s in self.pools.sites[template.company.lang]
             if serves(s, template.company.country) and s.kind != "classifieds"])
        posted = opening.posted + dt.timedelta(days=rng.randint(21, 56))
        self.post(opening, site, posted, random.Random(template.style_seed if site is template.primary
                                                      else rng.randrange(2 ** 32)),
                  primary=False, repost=site is not template.primary, readvert_of=opening.posted)

    def singleton(self, lang: str) -> None:
        """A company with one ad posted once (fills the last places up to the size)."""
        company = self.company(lang)
        template = self.template(company)
        title = self._title(company, False)
        posted = dt.date(2025, 1, 6) + dt.timedelta(days=self.rng.randrange(330))
        opening = self.opening(template, title, company.offices[0], posted, self.rng.randint(1, 3))
        self.post(opening, template.primary, posted, random.Random(template.style_seed), primary=True, repost=False)

    def language(self, lang: str, quota: int) -> None:
        start = len(self.postings)
        while len(self.postings) - start < quota:
            remaining = quota - (len(self.postings) - start)
            mark = (len(self.postings), len(self.openings), len(self.templates), len(self.companies), self.grouped)
            added = self.company_block(lang)
            if added > remaining:  # undo the block, fill with one-ad companies instead
                del self.postings[mark[0]:], self.openings[mark[1]:], self.templates[mark[2]:]
                for company in self.companies[mark[3]:]:
                    self.names.discard(company.name)
                del self.companies[mark[3]:]
                self.grouped = mark[4]
                for _ in range(remaining):
                    self.singleton(lang)


def _swap(sentence: str, swaps: list[tuple[str, str]]) -> str:
    for a, b in swaps:
        if re.search(rf"\b{re.escape(a)}\b", sentence):
            sentence = re.sub(rf"\b{re.escape(a)}\b", b, sentence)
        elif re.search(rf"\b{re.escape(b)}\b", sentence):
            sentence = re.sub(rf"\b{re.escape(b)}\b", a, sentence)
    return sentence


def _typos(text: str, count: int, rng: random.Random) -> str:
    """A few typing errors in longer words: two letters swapped, one dropped or doubled."""
    words = [m for m in re.finditer(r"[^\W\d_]{5,}", text)]
    if not words:
        return text
    chosen = sorted(rng.sample(words, min(count, len(words))), key=lambda m: m.start(), reverse=True)
    for match in chosen:
        word = match.group()
        i = rng.randrange(1, len(word) - 1)
        kind = rng.randrange(3)
        new = (word[:i] + word[i + 1] + word[i] + word[i + 2:] if kind == 0 else
               word[:i] + word[i + 1:] if kind == 1 else word[:i] + word[i] + word[i:])
        text = text[:match.start()] + new + text[match.end():]
    return text


def _unpunctuated(text: str) -> str:
    """Sentence stops and commas gone, as in ads typed in a hurry."""
    return re.sub(r"[.,;!](?=\s|$)", "", text)


def _html(text: str, rng: random.Random) -> str:
    """Remnants of the HTML the ad was scraped from."""
    text = text.replace("&", "&amp;").replace("€", "&euro;" if rng.random() < 0.5 else "€")
    text = text.replace("'", "&#39;") if rng.random() < 0.5 else text
    lines = text.split("\n")
    out = []
    for line in lines:
        if line.startswith(("• ", "- ", "* ")):
            line = "<li>" + line[2:] + "</li>"
        elif line and rng.random() < 0.3:
            line += "<br>"
        if rng.random() < 0.1:
            line = line.replace(" ", "&nbsp;", 1)
        out.append(line)
    return "\n".join(out).replace("\n\n", "\n</p><p>\n", rng.randint(1, 3))


def _case_variant(email: str, domain: str) -> str:
    box, _, host = email.partition("@")
    parts = host.split(".")
    return box.capitalize() + "@" + ".".join([parts[0].capitalize(), *parts[1:]])


# --- pairs ------------------------------------------------------------------------------------------------

def relation(a: Opening, b: Opening) -> str:
    """The kind of two postings' openings (of one company)."""
    if a is b:
        return "repost"
    if a.template is not b.template:
        return "same_company"
    if a.title != b.title:
        return "title_variant"
    if a.city is not b.city:
        return "city_variant"
    return "new_opening"


def _pairs(postings: list[Posting], rng: random.Random) -> list[dict]:
    pairs: dict[tuple[str, str], str] = {}

    def add(x: Posting, y: Posting, kind: str) -> None:
        a, b = sorted((x.item["id"], y.item["id"]))
        pairs.setdefault((a, b), kind)

    by_opening: dict[int, list[Posting]] = defaultdict(list)
    by_company: dict[int, list[Posting]] = defaultdict(list)
    for posting in postings:
        by_opening[posting.opening.key].append(posting)
        by_company[posting.opening.template.company.index].append(posting)
    for members in by_opening.values():
        for x, y in itertools.combinations(members, 2):
            days = abs((dt.date.fromisoformat(x.item["posted"]) - dt.date.fromisoformat(y.item["posted"])).days)
            add(x, y, "readvert" if days > REPOST_DAYS else "repost")
    for members in by_company.values():
        openings = sorted({p.opening.key: p.opening for p in members}.values(), key=lambda o: o.key)
        by_templates: dict[tuple[int, int], list[tuple[Posting, Posting]]] = defaultdict(list)
        for oa, ob in itertools.combinations(openings, 2):
            kind = relation(oa, ob)
            cross = [(x, y) for x in by_opening[oa.key] for y in by_opening[ob.key]]
            if kind == "same_company":  # sampled per pair of templates, below
                by_templates[oa.template.index, ob.template.index] += cross
                continue
            # the first postings (same site, same layout) always; up to VARIANT_PAIRS in all
            firsts = [(x, y) for x, y in cross if x.primary and y.primary]
            rest = [c for c in cross if c not in firsts]
            for x, y in firsts + rng.sample(rest, min(len(rest), max(0, VARIANT_PAIRS - len(firsts)))):
                add(x, y, kind)
        for key in sorted(by_templates):
            cross = by_templates[key]
            for x, y in rng.sample(cross, min(len(cross), COMPANY_PAIRS)):
                add(x, y, "same_company")
    by_lang: dict[str, list[Posting]] = defaultdict(list)
    for posting in postings:
        by_lang[posting.item["lang"]].append(posting)
    wanted = round(len(postings) * UNRELATED_PAIRS)
    for lang, members in sorted(by_lang.items()):
        share = round(wanted * len(members) / len(postings))
        added = 0
        while added < share:
            x, y = rng.sample(members, 2)
            if x.opening.template.company is y.opening.template.company:
                continue
            a, b = sorted((x.item["id"], y.item["id"]))
            if (a, b) not in pairs:
                pairs[a, b] = "unrelated"
                added += 1
    return [{"a": a, "b": b, "duplicate": KINDS[kind], "kind": kind} for (a, b), kind in sorted(pairs.items())]


def generate(split: str = DEFAULT_SPLIT, size: int = DEFAULT_SIZE, seed: int | None = None) -> JobAds:
    """The split's items (`size` of them, half English, half Dutch) and labelled pairs."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    if size < 20:
        raise ValueError("size must be at least 20")
    builder = _Builder(split, SPLIT_SEEDS[split] if seed is None else seed)
    builder.language("en", size // 2)
    builder.language("nl", size - size // 2)
    postings = builder.postings
    order = list(range(len(postings)))
    builder.rng.shuffle(order)  # ids say nothing about groups
    for number, index in enumerate(order):
        postings[index].item["id"] = f"{split[:2]}j{number:06d}"
    pairs = _pairs(postings, builder.rng)
    items = sorted((p.item for p in postings), key=lambda item: item["id"])
    return JobAds(items, pairs)


# --- files and statistics ---------------------------------------------------------------------------------

def write(data: JobAds, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("items.jsonl", data.items), ("pairs.jsonl", data.pairs)):
        with (out / name).open("w", encoding="utf-8", newline="\n") as stream:
            for row in rows:
                stream.write(json.dumps(row, ensure_ascii=False) + "\n")


def read(directory: Path) -> JobAds:
    def rows(name: str) -> list[dict]:
        with (directory / name).open(encoding="utf-8") as stream:
            return [json.loads(line) for line in stream]
    return JobAds(rows("items.jsonl"), rows("pairs.jsonl"))


_WORD = re.compile(r"\w+")


def word3(text: str) -> set[str]:
    """The set of lowercased word 3-grams of a text."""
    words = _WORD.findall(text.lower())
    return {" ".join(words[i:i + 3]) for i in range(max(1, len(words) - 2))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def overlaps(data: JobAds) -> dict[tuple[str, str], list[float]]:
    """(kind, lang) → word 3-gram Jaccard of each pair's texts."""
    by_id = {item["id"]: item for item in data.items}
    cache: dict[str, set] = {}

    def grams(doc_id: str) -> set:
        if doc_id not in cache:
            cache[doc_id] = word3(by_id[doc_id]["text"])
        return cache[doc_id]

    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for pair in data.pairs:
        out[pair["kind"], by_id[pair["a"]]["lang"]].append(jaccard(grams(pair["a"]), grams(pair["b"])))
    return out


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return (values[0],) * 3 if values else (math.nan,) * 3
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def report(data: JobAds, split: str) -> str:
    """Counts per kind and language and the word 3-gram Jaccard quartiles, as markdown."""
    items = data.items
    by_lang = Counter(item["lang"] for item in items)
    group_sizes = Counter(item["group"] for item in items)
    grouped = sum(1 for item in items if group_sizes[item["group"]] > 1)
    lines = [f"{split}: {len(items)} items ({', '.join(f'{lang} {n}' for lang, n in sorted(by_lang.items()))}), "
             f"{len({i['company'] for i in items})} companies, {len(group_sizes)} openings, "
             f"{grouped} items ({grouped / max(1, len(items)):.0%}) in a group of two or more; {len(data.pairs)} pairs",
             "", "| kind | duplicate | lang | pairs | Jaccard q1 | median | q3 | < 0.5 | > 0.6 |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    stats = overlaps(data)
    for kind in KINDS:
        for lang in LANGS:
            values = stats.get((kind, lang), [])
            if not values:
                lines.append(f"| {kind} | {KINDS[kind]} | {lang} | 0 | | | | | |")
                continue
            q1, q2, q3 = quartiles(values)
            low = sum(v < 0.5 for v in values) / len(values)
            high = sum(v > 0.6 for v in values) / len(values)
            lines.append(f"| {kind} | {KINDS[kind]} | {lang} | {len(values)} | {q1:.2f} | {q2:.2f} | {q3:.2f} | "
                         f"{low:.0%} | {high:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default=DEFAULT_SPLIT)
    parser.add_argument("--seed", type=int, help="the split's seed unless given")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="items (half English, half Dutch)")
    parser.add_argument("--out", type=Path, help="directory for items.jsonl and pairs.jsonl "
                        "(default benchmarks/out/jobads-SPLIT)")
    args = parser.parse_args(argv)
    if args.size < 20:
        parser.error("--size must be at least 20")
    out = args.out or Path(__file__).resolve().parent / "out" / f"jobads-{args.split}"
    data = generate(args.split, args.size, args.seed)
    write(data, out)
    print(report(data, args.split))


if __name__ == "__main__":
    main()
