"""Generates a job-ad set: companies with offices, ad templates and openings, each opening posted on one or more
sites (reposts, re-advertisements) and rendered (render.py), then the ids shuffled and the pairs labelled (pairs.py).
Deterministic: a split and a seed give the same items and pairs."""
from __future__ import annotations

import datetime as dt
import math
import random

from benchmarks.lib.devcorpus import SPLITS
from benchmarks.lib.jobads.model import Company, JobAds, Office, Opening, Posting, Template
from benchmarks.lib.jobads.pairs import labelled_pairs
from benchmarks.lib.jobads.render import Renderer
from benchmarks.lib.jobads.text import fill_template, join_words, km, slots, slug
from benchmarks.lib.jobads.world import (COUNTRIES, COUNTRY_NAME, LEGAL, MIXED_SECTORS, MONTHS, ORDERS, SECTORS,
                                         SENIORITY, TLD, City, Pools, Sector, Site, serves)

DEFAULT_SPLIT = "tune"
#: Each split has its own seed, so nothing of the test split was drawn while tuning.
SPLIT_SEEDS = {"tune": 13, "test": 2027}
DEFAULT_SIZE = 2000
#: Share of items that are in a group of two or more postings (a repost or re-advertisement group).
REPOST_SHARE = 0.30
MIN_VARIANT_KM = 20.0
#: At most one sentence of a section fills each of these slots (one salary, one closing date, ...).
EXCLUSIVE_SLOTS = {"salary", "holiday", "hours", "deadline", "ref", "url", "contract", "start", "years", "email",
                   "phone"}


class _Builder:
    def __init__(self, split: str, seed: int):
        self.split = split
        self.rng = random.Random(seed)
        self.pools = Pools(split)
        self.renderer = Renderer(self.pools)
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
        box = slug(city.name).replace("-", "") if local else rng.choice(
            ["jobs", "recruitment", "careers", "hr"] if lang == "en" else ["vacatures", "werkenbij", "hr", "jobs"])
        return Office(city, (round(lat, 6), round(lon, 6)), address, number, f"{box}@{domain}")

    def company(self, lang: str) -> Company:
        rng, pools = self.rng, self.pools
        country = COUNTRIES[lang][0] if rng.random() < 0.72 else COUNTRIES[lang][1]
        sector = rng.choice(SECTORS)
        name = self._unique_name(lang, sector)
        legal = LEGAL[country][0]
        domain = slug(name).replace("-", "") + "." + TLD[country]
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
        description = [fill_template(t, dict(values, customers=customers[k % 2]))
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
                       "{title}", rng.choice([ORDERS["A"], ORDERS["B"]]), rng.choice(["plain", "colon"]),
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
            "values": join_words(values, lang), "values_lc": join_words(values, lang),
            "investments": join_words(rng.sample(vocab["investments"][lang], 2), lang),
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
                 "benefit2": benefits[(k + 1) % 3], "traits": join_words(rng.sample(vocab["traits"][lang], 3), lang)}
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

    # - the corpus of one language -

    def post(self, opening: Opening, site: Site, posted: dt.date, rng: random.Random, *, primary: bool,
             repost: bool, readvert_of: dt.date | None = None) -> None:
        item = self.renderer.render(opening, site, posted, rng, repost=repost, readvert_of=readvert_of)
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
    pairs = labelled_pairs(postings, builder.rng)
    items = sorted((p.item for p in postings), key=lambda item: item["id"])
    return JobAds(items, pairs)


