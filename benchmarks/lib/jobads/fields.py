"""Job ads as items with fields: the schema of the job-ad set (benchmarks/data/jobads/schema.json) and the loader
that maps an ad to it (items_with_fields), as jobads.md leaves to a loader.

The schema's weights were chosen on the tune split (`python -m benchmarks.fields_eval --tune-weights`), its rules by
what reposts share: their title with their body, their place or their contact, or their URL or reference (a teaser
or a two-line ad shares little body). Eight title and eight body match tokens: with three, a title padded with city
and salary ("Transport Planner - Oxford - £27,000 - £30,000 per annum") shares none with the bare one; a rule of the
body alone made ten times the candidate pairs (shared phrases), for the same recall, on tune.

The loader keeps the URL only when it is not the job board's own listing page (its host is the ad's site: another
site's copy of the ad has another one), else takes the vacancy's page named in the body (a URL of another host whose
path holds its number), and adds the vacancy's reference number (`VAC-56527`, `REF012121`, `SA/25/6852`) from the
body as an exact field."""
from __future__ import annotations

import re

from benchmarks.lib.data import load_json

#: The job-ad schema, as `neardup index --fields` reads it.
SCHEMA: dict = load_json("jobads/schema.json")
#: A vacancy reference: one to four capitals, then digits (at least four, maybe cut by / or -): VAC-56527,
#: REF012121, V2554989, SA/25/6852; not a postcode (LS1, D02) nor a salary.
_REFERENCE = re.compile(r"\b[A-Z]{1,4}[-/]?\d[\d/-]*\d\b")
_URL = re.compile(r"https?://[^\s<>\"')]+")
_HOST = re.compile(r"^(?:[a-z]+:)?//(?:www\.)?([^/?#]+)", re.IGNORECASE)


def _own_url(url: str, site: str) -> bool:
    """Whether a URL is the job board's own page (its host is the ad's site): no other site's copy has it."""
    host = _HOST.match(url)
    return bool(host) and host.group(1).lower().endswith(site.lower())


def items_with_fields(items: list[dict]) -> list[dict]:
    """Index records {"id", "lang", "fields"} of job ads (see the module docstring for the loader's rules)."""
    records = []
    for item in items:
        fields = dict(item["fields"])
        body = fields.get("body", "")
        if fields.get("url") and _own_url(fields["url"], item["site"]):
            del fields["url"]
        if not fields.get("url"):  # the vacancy's own page named in the text (a path with its number)
            found = [url for url in _URL.findall(body) if not _own_url(url, item["site"])
                     and sum(map(str.isdigit, url.split("//", 1)[-1].partition("/")[2])) >= 4]
            if found:
                fields["url"] = found[0].rstrip(".,;")
        references = [r for r in _REFERENCE.findall(body) if sum(map(str.isdigit, r)) >= 4]
        if references:
            fields["reference"] = re.sub(r"[-/]", "", references[0])
        records.append({"id": item["id"], "lang": item["lang"], "fields": fields})
    return records
