"""The labelled pairs of a job-ad set: every two postings of an opening (repost or readvert), some postings of
related openings of one company (city, title and new-opening variants, other jobs of the company), and unrelated
pairs of other companies; each with whether it is a duplicate."""
from __future__ import annotations

import datetime as dt
import itertools
import random
from collections import defaultdict

from benchmarks.lib.jobads.model import Opening, Posting

#: Relation kind → whether its pairs are duplicates.
KINDS = {"repost": True, "readvert": True, "city_variant": False, "title_variant": False, "new_opening": False,
         "same_company": False, "unrelated": False}
#: Re-advertisements come 3–8 weeks after the first posting; reposts within this many days count as reposts.
REPOST_DAYS = 14
#: Pairs written: at most this many postings pairs per two related openings (the first postings always among
#: them), per two templates of one company, and unrelated pairs per item.
VARIANT_PAIRS = 3
COMPANY_PAIRS = 4
UNRELATED_PAIRS = 0.5


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


def labelled_pairs(postings: list[Posting], rng: random.Random) -> list[dict]:
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

