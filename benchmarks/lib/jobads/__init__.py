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
(SPLIT_SEEDS). Every pool (benchmarks/data/jobads, read by world.py) is a list whose even entries belong to `tune`
and odd entries to `test`, so the splits also share none of its texts (world.py lists them; `template_pool(split)`
gives a split's sentence templates). With a seed given, a split keeps its pools and only the draws change.

Item (`items.jsonl`, one JSON object a line):
  {"id", "lang": "en"|"nl", "site", "group" (the opening), "company" (canonical name, for evaluation only),
   "posted" (ISO date), "fields": {"title", "body", "organisation", "phone", "email", "url", "category",
   "location": {"lat", "lon"}}, "text": title + blank line + body}
A field a site does not carry is absent. Pair (`pairs.jsonl`): {"a", "b", "duplicate", "kind"}, a < b.


The modules: world (the data: places, sectors, sites, pools, a split's half of them), model (companies, templates,
openings, postings; the set's files), text (formatting and messiness), render (one posting), build (the generator),
pairs (the labelled pairs), overlap (text shared per kind: the report), fields (the items-with-fields loader and
schema). This package's names are the set's public ones.
"""
from benchmarks.lib.jobads.build import DEFAULT_SIZE, DEFAULT_SPLIT, SPLIT_SEEDS, generate
from benchmarks.lib.jobads.model import JobAds, read, write
from benchmarks.lib.jobads.overlap import jaccard, overlaps, report, word3
from benchmarks.lib.jobads.pairs import KINDS, REPOST_DAYS
from benchmarks.lib.jobads.text import km
from benchmarks.lib.jobads.world import LANGS, SECTIONS, SECTORS, template_pool

__all__ = ["DEFAULT_SIZE", "DEFAULT_SPLIT", "KINDS", "LANGS", "REPOST_DAYS", "SECTIONS", "SECTORS", "SPLIT_SEEDS",
           "JobAds", "generate", "jaccard", "km", "overlaps", "read", "report", "template_pool", "word3", "write"]
