"""The corpus builders' parts (benchmarks/lib): the edits that republish a text, the development corpus's split
and distinctness rules and result sets, the families' result sets and rewrites, the job ads' formats, world and
loader. The golden digests pin the job-ad set and the edits as they were before their word lists moved to
benchmarks/data: a changed data file or draw changes them."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import random

import pytest

from benchmarks.lib import devcorpus, devcorpus_sets, edits, family_sets, jobads, rewrites
from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.jobads import fields, text, world
from benchmarks.lib.sources import Source

TEXT = ("The council met on Tuesday. It agreed, after a long debate, to build a new bridge over the river -- at a "
        "cost of 12,000 pounds, or 5 per cent of the budget. \"We are pleased\", said the mayor.\n\nWork starts in "
        "May. Residents were told that traffic will be diverted for 3 months!")


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


# --- edits ----------------------------------------------------------------------------------------------------------

def test_the_edits_are_those_of_before_the_data_files():
    sites = edits.news_sites(random.Random(3))
    copies = [edits.republish(TEXT, "en", family, sites[0], random.Random(seed))
              for family in edits.EDIT_FAMILIES for seed in range(3)]
    assert hashlib.sha256(json.dumps([copies, [site.__dict__ for site in sites]], ensure_ascii=False).encode()
                          ).hexdigest() == "fa1c74de915d6c3e33e67ae4021f2f6198a8d49b67a4321fe0f60541a84a1540"


def test_news_sites_carry_their_name_and_language():
    sites = edits.news_sites(random.Random(1))
    assert [s.name for s in sites] == [name for names in edits.SITE_NAMES.values() for name in names]
    for site in sites:
        assert site.name in site.header[0] and site.lang in edits.BOILERPLATE
        assert len(site.header) == len(edits.BOILERPLATE[site.lang][0])
    copy = edits.with_boilerplate("Body.", sites[0], random.Random(2))
    assert copy.startswith("\n".join(sites[0].header)) and copy.endswith("\n".join(sites[0].footer))


def test_paragraphs_sentences_wrapping_and_cutting():
    assert edits.split_paragraphs("a b.\n \nc.\n\n\n") == ["a b.", "c."]
    assert edits.split_sentences("One  two. Three!\n\nFour?") == ["One two.", "Three!", "Four?"]
    wrapped = edits.wrap_text("aaa bbb ccc ddd", 8)
    assert wrapped == "aaa bbb\nccc ddd"
    sentence = "Word " * 9 + "end."
    assert edits.cut_text(sentence + " " + "more " * 20, 0.4) == sentence  # back to the sentence end in the last fifth
    assert edits.cut_text("w " * 100, 0.5) == ("w " * 50).strip()  # none: cut mid-sentence


def test_an_edited_copy_says_the_share_it_edited_and_a_seed_repeats_it():
    words = " ".join(f"w{i}" for i in range(200))
    copy, share = edits.edited(words, "en", 0.05, random.Random(7))
    assert share == 0.05 and copy != words
    assert edits.edited(words, "en", 0.05, random.Random(7)) == (copy, share)
    assert edits.republish(TEXT, "en", "truncate", edits.news_sites(random.Random(1))[0], random.Random(1))[1] == 0.0
    with pytest.raises(ValueError, match="unknown edit family"):
        edits.republish(TEXT, "en", "shout", None, random.Random(1))


# --- the development corpus ------------------------------------------------------------------------------------------

def test_length_buckets_and_splits():
    assert [devcorpus.length_bucket("w " * n) for n in (119, 120, 499, 500)] == ["short", "medium", "medium", "long"]
    assert devcorpus.in_split(Source("bgwiki", "x", "none", "t"), "test")
    assert not devcorpus.in_split(Source("bgwiki", "x", "none", "t"), "tune")
    assert devcorpus.in_split(Source("manpages", "pl/ls.1.gz", "none", "t"), "test")
    assert devcorpus.in_split(Source("pydoc", "3", "en", "t"), "tune")
    news = Source("news", "lee.cor:5", "en", "t", topic="")
    assert devcorpus.in_split(news, "tune") != devcorpus.in_split(news, "test")  # one side by a stable hash
    assert devcorpus.TEMPLATES[0][0] == "en" and "{key}" in devcorpus.TEMPLATES[0][1]


def test_texts_sharing_over_a_third_of_their_5_grams_are_not_distinct():
    base = " ".join(f"w{i}" for i in range(60))
    half = " ".join(f"w{i}" for i in range(30)) + " " + " ".join(f"x{i}" for i in range(30))
    other = " ".join(f"y{i}" for i in range(60))
    kept = devcorpus.distinct([Source("c", k, "en", t) for k, t in (("a", base), ("b", half), ("c", other))])
    assert [s.key for s in kept] == ["a", "c"]


def corpus() -> list[Doc]:
    """Originals with copies, template variants, pages of one site, a text quoting another, unrelated texts."""
    docs = []
    for g in range(40):
        docs.append(Doc(f"o{g}", "t", "en", f"g{g}", "original", length="short"))
        for c in range(g % 3):
            docs.append(Doc(f"o{g}c{c}", "t", "en", f"g{g}", "edit", rate=(0.01, 0.1)[c], length="short"))
    docs += [Doc(f"t{v}", "t", "en", f"t{v}", "template", template="t0") for v in range(6)]
    docs += [Doc(f"s{v}", "t", "en", f"s{v}", "shared_boilerplate", site="News") for v in range(6)]
    docs += [Doc("q", "t", "en", "gq", "quoting", quotes="g1")]
    docs += [Doc(f"u{n}", "t", "en", f"u{n}", "original", length="long") for n in range(150)]
    return docs


def test_result_sets_hold_a_fifth_to_two_fifths_duplicates_and_hard_negatives():
    docs = corpus()
    sets = devcorpus_sets.draw_result_sets(docs, 6, seed=3)
    assert sets == devcorpus_sets.draw_result_sets(docs, 6, seed=3)
    for indexes in sets:
        assert len(indexes) == 100 == len(set(indexes))
        groups = [docs[i].group for i in indexes]
        assert 20 <= len(groups) - len(set(groups)) <= 41
        assert sum(docs[i].family == "template" for i in indexes) >= 2
        assert sum(docs[i].family == "shared_boilerplate" for i in indexes) >= 2
    scoped = devcorpus_sets.draw_result_sets(docs, 3, seed=3, scope=devcorpus_sets.scopes()["rate 10%"])
    for indexes in scoped:
        copies = [docs[i] for i in indexes if docs[i].family == "edit"]
        assert copies and all(devcorpus_sets.nominal_rate(d) == 0.10 for d in copies)


def test_nominal_rates_and_scopes():
    assert devcorpus_sets.nominal_rate(Doc("a", "t", "en", "g", "combined", rate=0.047)) == 0.05
    assert devcorpus_sets.nominal_rate(Doc("a", "t", "en", "g", "truncate")) is None
    names = devcorpus_sets.scopes()
    assert {"family edit", "rate 1%", "length long"} <= set(names)
    assert set(devcorpus_sets.language_scopes([Doc("a", "t", "nl", "g", "edit"), Doc("b", "t", "de", "g", "original")])
               ) == {"lang nl"}


# --- the families' result sets and rewrites --------------------------------------------------------------------------

def test_family_documents_are_shuffled_numbered_and_grouped_original_first():
    docs = [Doc("", "t", "en", f"g{n // 3}", "copy" if n % 3 else "original") for n in range(30)]
    groups = family_sets.shuffle_numbered(docs, "tune", random.Random(1))
    assert sorted(d.id for d in docs) == [f"tu{n:06d}" for n in range(30)]
    assert all(docs[members[0]].family == "original" and len(members) == 3 for members in groups.values())


def test_a_family_result_set_draws_no_group_twice():
    docs = [Doc(f"d{n}", "t", "en", f"g{n // 2}" if n < 60 else f"u{n}", "original" if n % 2 == 0 or n >= 60
                else "copy", site="S" if 100 <= n < 110 else "") for n in range(300)]
    groups = family_sets.group_members(docs)
    duplicates = [m for m in groups.values() if len(m) > 1]
    fill = [m[0] for m in groups.values()]
    negatives = [[n for n in range(100, 110)]]
    chosen = family_sets.draw_set(random.Random(2), docs, duplicates, fill, negatives)
    assert len(chosen) == family_sets.RESULT_SET_SIZE == len(set(chosen))
    pairs = len(chosen) - len({docs[i].group for i in chosen})
    assert 20 <= pairs <= 41
    assert sum(100 <= i < 110 for i in chosen) >= 2
    filled = family_sets.filled([1, 2], [2, 3, 4], random.Random(0), size=3)
    assert sorted(filled) in ([1, 2, 3], [1, 2, 4])  # the chosen two and one more, none twice, in some order


def test_changed_share_counts_the_words_not_kept_in_order():
    assert rewrites.changed_share("one two three four", "one two three four") == 0.0
    assert rewrites.changed_share("one two three four", "one two THREE five") == 0.25
    assert rewrites.changed_share("one two", "three four") == 1.0


def test_synonyms_and_a_rewrite_in_the_asked_range(tmp_path):
    table = tmp_path / "synonyms.txt"
    table.write_text("# comment\nbig, large, huge\nsaid, told reporters\n", encoding="utf-8")
    assert rewrites.synonym_table(table) == {"big": ["large", "huge"], "large": ["big", "huge"],
                                             "huge": ["big", "large"], "said": ["told reporters"]}
    synonyms = rewrites.synonym_table()
    source = " ".join(["The big council said that the river was large, and the town agreed."] * 6)
    rewrite, share = rewrites.rewritten(source, synonyms, random.Random(5))
    assert rewrites.REWRITE_RATES[0] <= share <= rewrites.REWRITE_RATES[1]
    assert share == rewrites.changed_share(source, rewrite)


# --- job ads ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("split, expected", [
    ("tune", "a14e3443d409cd2158823f811db6cf74684903c42f6c40997e5b7dcc84a4a07e"),
    ("test", "942335936dcaa7c1ea4d69ce4005e5f98ab3c106aadad79cdfbb650ef51381aa")])
def test_the_job_ad_set_is_that_of_before_the_data_files(split, expected):
    data = jobads.generate(split, 300)
    assert digest([data.items, data.pairs]) == expected


def test_the_job_ad_world_is_that_of_before_the_data_files():
    """Every table read from benchmarks/data/jobads, as Python values (a tuple that became a list would show)."""
    tables = [world.CITIES, world.COUNTRIES, world.COUNTRY_CODE, world.COUNTRY_NAME, world.TLD, world.LEGAL,
              world.MONTHS, world.SECTORS, sorted(world.MIXED_SECTORS), world.SENIORITY, world.POOLS, world.SHORT,
              world.SYNONYMS, world.ORDERS, world.SITES, world.SITE_COUNTRIES, world.CAREERS, world._VOCABULARY,
              world._SENTENCES["readvert_line"], world._SENTENCES["teaser"], world._PLACES["streets"],
              world._PLACES["first_names"], world._PLACES["last_names"], world._SECTORS["company_stems"]]
    assert hashlib.sha256(repr(tables).encode()).hexdigest() == \
        "cceae2d1928feec78e3d1a18a71a8661537dbf7a2431b11aee140df7ca76ef5c"


def test_phone_numbers_and_organisations_in_a_sites_house_style():
    styles = {"national": "0113 496 0123", "intl": "+44 113 496 0123", "intl_zero": "+44 (0)113 496 0123",
              "intl_compact": "+441134960123", "compact": "01134960123", "dashed": "0113-4960123",
              "paren": "(0113) 4960123"}
    for style, expected in styles.items():
        assert text.format_phone("0113", "4960123", "UK", style) == expected
    assert text.format_organisation("Kestrel Care", "Ltd", "UK", "legal_long") == "Kestrel Care Limited"
    assert text.format_organisation("Kestrel Care", "Ltd", "UK", "upper") == "KESTREL CARE LTD"


def test_titles_articles_dates_and_distances():
    assert [text.with_article(p) for p in ("engineer", "university lecturer", "HGV driver", "care assistant")] == \
        ["an engineer", "a university lecturer", "an HGV driver", "a care assistant"]
    assert text.display_title("senior HGV driver", "en") == "Senior HGV Driver"
    assert text.display_title("verpleegkundige", "nl") == "Verpleegkundige"
    day = dt.date(2025, 3, 7)
    assert [text.format_date(day, "nl", s) for s in ("long", "slash", "dash", "iso")] == \
        ["7 maart 2025", "07/03/2025", "07-03-2025", "2025-03-07"]
    assert text.km((0.0, 0.0), (0.0, 1.0)) == pytest.approx(111.19, abs=0.01)
    assert text.slug("Den Haag's Zorg-Ééntje") == "den-haags-zorg-eentje"
    assert text.join_words(["a", "b", "c"], "nl") == "a, b en c"
    assert text.swap_synonyms("we are a team", [("we are", "we're"), ("crew", "team")]) == "we're a crew"
    assert text.slots("{company} in {city}, {city}") == {"company", "city"}


def test_the_world_keeps_the_types_its_code_relies_on_and_splits_every_pool():
    assert world.half([0, 1, 2, 3, 4], "tune") == [0, 2, 4] and world.half([0, 1, 2, 3, 4], "test") == [1, 3]
    with pytest.raises(ValueError, match="unknown split"):
        world.half([0], "dev")
    london = world.CITIES["UK"][0]
    assert (london.name, london.country, london.lat) == ("London", "UK", 51.5074)
    site = world.SITES["en"][0]
    assert isinstance(site.header, tuple) and site.order in world.ORDERS.values() and site.kind == "board"
    assert all(isinstance(words, tuple) for s in world.SECTORS for words in s.words["nl"])
    assert world.serves(next(s for s in world.SITES["en"] if s.name == "hireireland.ie"), "IE")
    assert not world.serves(next(s for s in world.SITES["en"] if s.name == "hireireland.ie"), "UK")
    tune, test = world.Pools("tune"), world.Pools("test")
    for name in tune.vocab:
        for lang in world.LANGS:
            assert tune.vocab[name][lang] and not set(tune.vocab[name][lang]) & set(test.vocab[name][lang])
    assert not {s.name for s in tune.sites["en"]} & {s.name for s in test.sites["en"]}


def test_the_loader_keeps_the_vacancys_own_url_and_reference():
    items = [{"id": "a", "lang": "en", "site": "jobsnorth.co.uk",
              "fields": {"title": "T", "url": "https://www.jobsnorth.co.uk/job/123",
                         "body": "Apply at https://careers.kestrel.co.uk/vacancy/55123. Ref: VAC-56527, LS1 area."}},
             {"id": "b", "lang": "nl", "site": "banenbank.nl", "fields": {"title": "T", "body": "Geen nummer."}}]
    records = fields.items_with_fields(items)
    assert records[0] == {"id": "a", "lang": "en", "fields": {
        "title": "T", "url": "https://careers.kestrel.co.uk/vacancy/55123", "reference": "VAC56527",
        "body": items[0]["fields"]["body"]}}
    assert records[1]["fields"] == {"title": "T", "body": "Geen nummer."}
    assert {spec["name"] for spec in fields.SCHEMA["fields"]} >= {"title", "body", "url", "reference"}
