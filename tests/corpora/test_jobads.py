"""The job-ad development set (benchmarks/lib/jobads) is reproducible, its splits share no company and no text
template, its pairs are labelled consistently with their kinds, and it holds what it claims: every kind in both
languages, template variants in other cities and reposts in the same place, hard positives (reposts with little
text in common) and hard negatives (variants with much)."""
from __future__ import annotations

import datetime as dt
import re
import string
from collections import Counter

import pytest

from benchmarks import jobads as jobads_script
from benchmarks.lib import jobads

SIZE = 600
FIELDS = {"title", "body", "organisation", "phone", "email", "url", "category", "location"}


@pytest.fixture(scope="module")
def tune() -> jobads.JobAds:
    return jobads.generate("tune", SIZE)


@pytest.fixture(scope="module")
def test_split() -> jobads.JobAds:
    return jobads.generate("test", SIZE)


@pytest.fixture(scope="module")
def both(tune, test_split) -> dict[str, jobads.JobAds]:
    return {"tune": tune, "test": test_split}


def by_id(data: jobads.JobAds) -> dict[str, dict]:
    return {item["id"]: item for item in data.items}


def test_same_arguments_same_bytes(tmp_path, capsys):
    small = 200
    data = jobads.generate("tune", small)
    jobads.write(data, tmp_path / "api")
    jobads.write(jobads.generate("tune", small), tmp_path / "again")
    jobads_script.main(["--split", "tune", "--size", str(small), "--out", str(tmp_path / "cli")])
    assert "repost" in capsys.readouterr().out
    for name in ("items.jsonl", "pairs.jsonl"):
        first = (tmp_path / "api" / name).read_bytes()
        assert first == (tmp_path / "again" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert jobads.read(tmp_path / "api") == data
    assert jobads.generate("tune", small, seed=99).items != data.items


def test_items_have_the_schema(both):
    for split, data in both.items():
        assert len(data.items) == SIZE
        assert Counter(item["lang"] for item in data.items) == {"en": SIZE // 2, "nl": SIZE - SIZE // 2}
        assert len({item["id"] for item in data.items}) == SIZE
        for item in data.items:
            assert set(item) == {"id", "lang", "site", "group", "company", "posted", "fields", "text"}
            assert item["id"].startswith(split[:2] + "j")
            fields = item["fields"]
            assert {"title", "body"} <= set(fields) <= FIELDS
            assert item["text"] == fields["title"] + "\n\n" + fields["body"]
            if "location" in fields:
                assert set(fields["location"]) == {"lat", "lon"}
                assert 49 < fields["location"]["lat"] < 59 and -11 < fields["location"]["lon"] < 8
        # real ads lack fields: some of each optional field is missing
        for name in FIELDS - {"title", "body"}:
            present = sum(name in item["fields"] for item in data.items)
            assert 0.3 * SIZE < present < SIZE, name


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(item: dict):
    for line in item["fields"]["body"].split("\n"):
        line = re.sub(r"^(<li>|[•*-] )", "", line.strip()).replace("</li>", "").replace("<br>", "")
        yield from (s for s in _SENTENCE.split(line) if s)


def template_matcher(split: str, lang: str) -> re.Pattern:
    """Any of the split's sentence templates as a whole sentence: literal text, slots filled by anything
    (templates with fewer than three literal words would match too much and are left out)."""
    def skeleton(template: str) -> str:
        return "".join(re.escape(literal) + (".+?" if name else "")
                       for literal, name, _, _ in string.Formatter().parse(template))
    templates = [t for pool in jobads.template_pool(split)[lang].values() for t in pool
                 if len(re.findall(r"\w+", re.sub(r"\{\w+\}", "", t))) >= 3]
    return re.compile("|".join(f"(?:{skeleton(t)})" for t in templates), re.I)


def test_splits_share_no_company_id_or_template(both):
    tune, test = both["tune"], both["test"]
    assert not {i["company"] for i in tune.items} & {i["company"] for i in test.items}
    assert not {i["id"] for i in tune.items} & {i["id"] for i in test.items}
    assert not {i["site"] for i in tune.items} & {i["site"] for i in test.items}
    organisations = [{re.sub(r"\s+(ltd|limited|b\.?v\.?)$", "", i["fields"].get("organisation", ""), flags=re.I).lower()
                      for i in data.items} - {""} for data in (tune, test)]
    assert not organisations[0] & organisations[1]
    pools = {split: jobads.template_pool(split) for split in ("tune", "test")}
    for lang in jobads.LANGS:
        for section in jobads.SECTIONS:
            assert pools["tune"][lang][section] and pools["test"][lang][section]
            assert not set(pools["tune"][lang][section]) & set(pools["test"][lang][section])
    # in the data: no sentence of one split is made from the other split's templates, while many are made from
    # its own (so the check can see a template at all)
    for split, other in (("tune", "test"), ("test", "tune")):
        for lang in jobads.LANGS:
            own, foreign = template_matcher(split, lang), template_matcher(other, lang)
            found = [s for i in both[split].items if i["lang"] == lang for s in sentences(i)]
            assert sum(bool(own.fullmatch(s)) for s in found) > 0.3 * len(found)
            assert [s for s in found if foreign.fullmatch(s)] == []
    prose = [{s for i in data.items for s in sentences(i) if s.endswith(".") and len(s.split()) >= 6}
             for data in (tune, test)]
    assert not prose[0] & prose[1]


def test_pairs_refer_to_items_and_labels_follow_kinds(both):
    for data in both.values():
        items = by_id(data)
        seen = set()
        for pair in data.pairs:
            a, b = items[pair["a"]], items[pair["b"]]
            assert pair["a"] < pair["b"] and (pair["a"], pair["b"]) not in seen
            seen.add((pair["a"], pair["b"]))
            assert set(pair) == {"a", "b", "duplicate", "kind"}
            assert pair["duplicate"] is jobads.KINDS[pair["kind"]]
            assert pair["duplicate"] == (a["group"] == b["group"])
            assert a["lang"] == b["lang"]
            assert (a["company"] == b["company"]) == (pair["kind"] != "unrelated")
            days = abs((dt.date.fromisoformat(a["posted"]) - dt.date.fromisoformat(b["posted"])).days)
            if pair["kind"] == "repost":
                assert days <= jobads.REPOST_DAYS
            elif pair["kind"] == "readvert":
                assert days > jobads.REPOST_DAYS
        # every pair of postings of one opening is labelled
        groups = Counter(item["group"] for item in data.items)
        assert sum(pair["duplicate"] for pair in data.pairs) == sum(n * (n - 1) // 2 for n in groups.values())


def test_every_kind_in_both_languages(both):
    for data in both.values():
        items = by_id(data)
        counts = Counter((pair["kind"], items[pair["a"]]["lang"]) for pair in data.pairs)
        for kind in jobads.KINDS:
            for lang in jobads.LANGS:
                assert counts[kind, lang] >= 5, (kind, lang)


def test_about_thirty_percent_of_items_are_in_a_repost_group(both):
    for data in both.values():
        groups = Counter(item["group"] for item in data.items)
        share = sum(1 for item in data.items if groups[item["group"]] > 1) / len(data.items)
        assert 0.25 <= share <= 0.35


def where(item: dict) -> tuple[float, float] | None:
    location = item["fields"].get("location")
    return (location["lat"], location["lon"]) if location else None


def test_variants_are_elsewhere_and_reposts_in_the_same_place(both):
    for data in both.values():
        items = by_id(data)
        checked = Counter()
        for pair in data.pairs:
            a, b = where(items[pair["a"]]), where(items[pair["b"]])
            if a is None or b is None:
                continue
            if pair["kind"] == "city_variant":
                assert jobads.km(a, b) > 10
                checked["variant"] += 1
            elif pair["duplicate"]:
                assert jobads.km(a, b) < 5
                checked["repost"] += 1
        assert checked["variant"] >= 50 and checked["repost"] >= 50


def test_hard_positives_and_hard_negatives(both):
    for data in both.values():
        stats = jobads.overlaps(data)
        for lang in jobads.LANGS:
            reposts = stats["repost", lang]
            variants = stats["city_variant", lang]
            assert sum(j < 0.5 for j in reposts) >= 0.3 * len(reposts)   # little text in common, yet duplicates
            assert sum(j < 0.3 for j in reposts) <= 0.5 * len(reposts)   # ... but most share a good part
            assert sum(j > 0.6 for j in variants) >= 0.5 * len(variants)  # much text in common, not duplicates
            assert max(stats["unrelated", lang]) < 0.3


def test_word3_jaccard():
    assert jobads.word3("A b c d") == {"a b c", "b c d"}
    assert jobads.jaccard(jobads.word3("one two three four"), jobads.word3("one two three five")) == 1 / 3


def test_the_world_is_messy(tune):
    items = tune.items
    titles = [item["fields"]["title"] for item in items]
    bodies = [item["fields"]["body"] for item in items]
    assert sum(t.isupper() for t in titles) >= 10
    assert sum("&amp;" in b or "<br>" in b or "<li>" in b or "&nbsp;" in b for b in bodies) >= 5
    assert sum("\n• " in b for b in bodies) >= 10
    assert sum(len(b.split("\n")) <= 4 for b in bodies) >= 5  # two-line ads between a header and a footer
    english_titles = {t for s in jobads.SECTORS for t in s.titles["en"]} - {t for s in jobads.SECTORS
                                                                            for t in s.titles["nl"]}
    assert sum(item["lang"] == "nl" and any(e.lower() in t.lower() for e in english_titles)
               for item, t in zip(items, titles)) >= 3  # Dutch ads with English job titles
    assert sum(item["fields"].get("url", "").count("utm_source") for item in items) >= 10


_ENGLISH = {"the", "and", "you", "with", "for", "our", "we", "will", "your", "are", "to", "is", "in"}  # not "of"
_DUTCH = {"de", "het", "en", "je", "van", "een", "wij", "we", "voor", "met", "is", "in", "naar", "bij"}


def test_dutch_ads_are_dutch(tune):
    """Dutch ads on Dutch sites are Dutch prose: English function words are rare, Dutch ones common."""
    words = Counter()
    for item in tune.items:
        if item["lang"] == "nl" and not item["site"].endswith(".example"):
            words.update(re.findall(r"[a-zà-ÿ]+", item["fields"]["body"].lower()))
    total = sum(words.values())
    english = sum(words[w] for w in _ENGLISH - _DUTCH)
    dutch = sum(words[w] for w in _DUTCH - _ENGLISH)
    assert english < 0.005 * total < dutch
