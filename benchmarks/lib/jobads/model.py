"""What a job-ad set is made of once generated: offices, companies, templates, openings, postings, and the set
itself (items and labelled pairs) with its files, items.jsonl and pairs.jsonl."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from benchmarks.lib.jobads.world import City, Sector, Site


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

