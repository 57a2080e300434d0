"""Items with fields (issue 13): the schema and the item sketch, per-field similarity and rules as super tokens,
through `neardup index --fields` and a real server (Dedup, FindSimilar, Upsert, `neardup pairs`), bad field input
refused with INVALID_ARGUMENT saying what to fix, and the groupings over given pair scores against reference.py."""
from __future__ import annotations

import json
import random
import re
import struct

import grpc
import numpy as np
import pytest

from neardup.core import kernel
from neardup.core.fields import FieldSpec, geohash, geohash_cells, GeoPoint, normalized
from neardup.core.item_scoring import ItemScorer, pair_features
from neardup.core.vocabulary import COMPLETE, COMPONENTS, GREEDY
from neardup.core.reference import _group
from neardup.core.sketcher import ItemSketcher
from neardup.core.sketch_config import SketchConfig
from neardup.core.errors import InvalidArgument
from neardup.service import converters
from neardup_client import Document, NearDupClient, NearDupClientError
from neardup_client.v1 import neardup_pb2 as pb
from server_process import run_neardup, serving, write_jsonl
from textgen import ITEMS, SCHEMA

@pytest.fixture(scope="module")
def schema_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory, schema_path):
    root = tmp_path_factory.mktemp("items")
    corpus = write_jsonl(root / "items.jsonl", [{"id": doc_id, "lang": "en", "fields": fields}
                                                for doc_id, fields in ITEMS.items()])
    done = run_neardup("index", str(corpus), "--store", str(root / "store"), "--fields", str(schema_path))
    assert done.returncode == 0, done.stderr
    return root / "store"


def config() -> SketchConfig:
    return SketchConfig(kind="items", fields=tuple(FieldSpec.from_dict(f) for f in SCHEMA["fields"]),
                        rules=tuple(map(tuple, SCHEMA["rules"])))


# --- core ------------------------------------------------------------------------------------------------------

def test_geohash_cells_and_normalisation():
    assert geohash(57.64911, 10.40744, 11) == "u4pruydqqvj"  # the geohash article's example
    cells = geohash_cells(GeoPoint(53.8008, -1.5491), 5)
    assert len(cells) == 9 and geohash(53.8008, -1.5491, 5) in cells
    assert set(cells) & set(geohash_cells(GeoPoint(53.81, -1.53), 5))
    assert not set(cells) & set(geohash_cells(GeoPoint(53.4808, -2.2426), 5))
    phone, url = FieldSpec("p", kind="exact", normalize="digits"), FieldSpec("u", kind="exact", normalize="url")
    assert normalized(phone, "+44 113 496 0123") == normalized(phone, "(0113) 4960123")
    assert normalized(url, "https://www.x.co.uk/job/7/?utm_source=a#apply") == normalized(url, "http://x.co.uk/job/7")
    org = FieldSpec("o", kind="exact", drop_words=("ltd", "limited"))
    assert normalized(org, "Acme LIMITED") == normalized(org, "acme ltd") == "acme"


def test_schema_and_config_round_trip_and_refusals():
    items = config()
    assert SketchConfig.from_dict(json.loads(json.dumps(items.to_dict()))) == items
    assert "fields" not in SketchConfig().to_dict()  # a text store's saved configuration is what it always was
    with pytest.raises(InvalidArgument, match="unknown fields nope"):
        SketchConfig(kind="items", fields=(FieldSpec("title"),), rules=(("title", "nope"),))
    with pytest.raises(InvalidArgument, match="unknown kind 'geo'"):
        FieldSpec("place", kind="geo")
    with pytest.raises(InvalidArgument, match="belong to an items store"):
        SketchConfig(fields=(FieldSpec("title"),))


def test_synonyms_make_variants_one_word_before_sketching_and_are_carried_by_every_form_of_the_config():
    """A text field's synonyms apply to whole words before shingling (so "colour" and "color" texts get one
    sketch), an exact field's before its token is made; they survive JSON, the proto and back; misuse is refused."""
    schema = SketchConfig(kind="items", rules=(("body",), ("org",)), fields=(
        FieldSpec("body", unit="word:2", synonyms={"colour": "color", "Verkoper": "sales"}),
        FieldSpec("org", kind="exact", drop_words=("ltd",), synonyms=[("gmbh", "ltd"), ("bv", "ltd")])))
    plain = SketchConfig(kind="items", rules=schema.rules, fields=(FieldSpec("body", unit="word:2"),
                                                                   FieldSpec("org", kind="exact", drop_words=("ltd",))))
    british, american = "The colour team needs a Verkoper today", "The color team needs a sales today"
    assert ItemSketcher(schema).sketch({"body": british}) == ItemSketcher(schema).sketch({"body": american})
    assert ItemSketcher(plain).sketch({"body": british}) != ItemSketcher(plain).sketch({"body": american})
    assert ItemSketcher(schema).sketch({"body": "colours discoloured"}) == \
        ItemSketcher(plain).sketch({"body": "colours discoloured"})  # whole words only
    org = schema.fields[1]
    assert normalized(org, "Acme GmbH") == normalized(org, "ACME BV") == normalized(org, "acme ltd") == "acme"
    assert normalized(schema.fields[1], "Acme AG") != normalized(org, "Acme GmbH")
    assert SketchConfig.from_dict(json.loads(json.dumps(schema.to_dict()))) == schema
    assert "synonyms" not in plain.to_dict()["fields"][0]  # configurations without them saved as before
    assert converters.sketch_config(converters.sketch_config_message(schema)) == schema
    for settings, message in [({"kind": "location", "synonyms": {"a": "b"}}, "apply to text fields"),
                              ({"kind": "exact", "normalize": "url", "synonyms": {"a": "b"}}, "apply to text fields"),
                              ({"synonyms": {"sales rep": "sales"}}, "each is one word"),
                              ({"synonyms": {"a": "b", "b": "c"}}, "map every word to the final one"),
                              ({"synonyms": "colour=color"}, "pairs of words")]:
        with pytest.raises(InvalidArgument, match=message):
            FieldSpec.from_dict({"name": "f", **settings})


def test_item_sketch_layout_and_bad_values():
    sketcher = ItemSketcher(config())
    sketch = sketcher.sketch(ITEMS["ad-1"], "en")
    words = struct.unpack(f"<{len(sketch) // 4}I", sketch)
    assert words[0] == 6 and len(words) == 7 + sum(words[1:7])
    assert words[1 + 2] == 1 and words[1 + 4] == 9  # one phone token, nine cells
    assert sketcher.sketch({"title": "Only a title"})  # missing fields are empty sections
    for values, message in [({"salary": "30k"}, "unknown field 'salary'"),
                            ({"location": {"lat": 91, "lon": 0}}, r"latitude must be a number in \[-90, 90\]"),
                            ({"location": "Leeds"}, "is a location"),
                            ({"title": 3}, "give a string")]:
        with pytest.raises(InvalidArgument, match=message):
            sketcher.sketch(values)


def test_pairs_that_share_no_super_token_are_never_compared():
    sketcher, fields = ItemSketcher(config()), config().fields
    sketches = [sketcher.sketch(ITEMS[name], "en") for name in ("ad-1", "ad-1-repost", "ad-2-manchester", "other")]
    found = pair_features(fields, sketches)
    pairs = set(zip(found.i.tolist(), found.j.tolist()))
    assert (0, 1) in pairs and (0, 2) in pairs and not any(3 in pair for pair in pairs)
    row = dict(zip(pairs_order := list(zip(found.i.tolist(), found.j.tolist())), found.features))
    repost, variant = row[(0, 1)], row[(0, 2)]
    assert repost[4] == 1.0 and variant[4] == 1.0  # the phone matches in both
    assert repost[5] == 1.0 and variant[5] == 0.0  # the URL only in the repost
    assert repost[6] > 0 and variant[6] == 0.0    # so does the place
    scores = ItemScorer(fields).scores(found.features)
    assert scores[pairs_order.index((0, 1))] > 0.8 > 0.5 > scores[pairs_order.index((0, 2))]


@pytest.mark.parametrize("grouping", [GREEDY, COMPONENTS, COMPLETE])
def test_groupings_over_given_scores_equal_the_reference(grouping):
    rng = random.Random(13)
    for _ in range(200):
        n = rng.randint(0, 30)
        scores = np.array([rng.choice([np.nan, rng.random()]) for _ in range(n * (n - 1) // 2)])
        threshold = rng.choice([0.0, 0.3, 0.5, 0.9])

        def score(i, j):
            value = scores[j * (j - 1) // 2 + i]
            return 0.0 if np.isnan(value) else float(value)

        expected = _group(n, lambda i, j: score(i, j) >= threshold and not np.isnan(scores[j * (j - 1) // 2 + i]),
                          score, grouping)
        assert kernel.group_scores(scores, n, threshold, grouping) == expected


# --- through a real server -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client(server):
    with NearDupClient(server.target, timeout=10) as connected:
        yield connected


def test_dedup_merges_the_repost_and_keeps_the_city_variant_apart(client):
    info = client.info()
    assert info.sketch_config["kind"] == "items" and info.default_metric == "fields" and info.pair_model == ""
    assert [f["name"] for f in info.sketch_config["fields"]] == [f["name"] for f in SCHEMA["fields"]]
    assert info.sketch_config["rules"] == SCHEMA["rules"]
    answer = client.dedup(["ad-1", "ad-2-manchester", "ad-1-repost", "other"])
    assert answer.keep == ["ad-1", "ad-2-manchester", "other"]
    assert [(d.id, d.duplicate_of) for d in answer.duplicates] == [("ad-1-repost", "ad-1")]
    inline = client.dedup([Document("fresh", fields={**ITEMS["ad-1-repost"], "title": "Forklift driver, Leeds"}),
                           "ad-1"])
    assert [(d.id, d.duplicate_of) for d in inline.duplicates] == [("ad-1", "fresh")]


def test_find_similar_and_upsert_use_fields(client):
    assert [m.id for m in client.find_similar("ad-1", threshold=0.5).matches] == ["ad-1-repost"]
    client.upsert([Document("ad-1-again", fields=ITEMS["ad-1"])])
    matches = client.find_similar("ad-1", threshold=0.5).matches
    assert [m.id for m in matches] == ["ad-1-again", "ad-1-repost"] and matches[0].similarity == 1.0


@pytest.mark.parametrize("fields, message", [
    ({"title": pb.FieldValue(text="x"), "salary": pb.FieldValue(text="30k")}, "unknown field 'salary'"),
    ({"location": pb.FieldValue(location=pb.GeoPoint(lat=91, lon=0))}, r"latitude must be a number in \[-90, 90\]"),
    ({"location": pb.FieldValue(text="Leeds")}, "is a location"),
    ({"title": pb.FieldValue(exact="Forklift")}, "is a text field: send its value as text"),
    ({"title": pb.FieldValue()}, "has no value"),
])
def test_bad_field_input_is_invalid_argument_saying_what_to_fix(server, fields, message):
    request = pb.DedupRequest(documents=[pb.Document(id="bad", fields=fields), pb.Document(id="ad-1")])
    with grpc.insecure_channel(server.target) as channel:
        call = channel.unary_unary("/neardup.v1.NearDup/Dedup", request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=pb.DedupResponse.FromString)
        with pytest.raises(grpc.RpcError) as refused:
            call(request, timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith("document 'bad'") and re.search(message, refused.value.details())


def test_a_text_on_an_items_store_and_fields_on_a_text_store_are_refused(client, indexed_store):
    with pytest.raises(NearDupClientError, match="metric containment does not apply to this store's items") as refused:
        client.dedup(["ad-1", "ad-1-repost"], metric="containment")
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    fields = r"holds items with fields \(title, body, phone, url, location\): send its fields"
    with pytest.raises(NearDupClientError, match=fields) as refused:
        client.dedup([Document("t", text="Forklift driver wanted"), "ad-1"])
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    text_store = indexed_store("texts", {"a": "some text here", "b": "other text there"})
    with serving(text_store) as server, NearDupClient(server.target, timeout=10) as text_client:
        with pytest.raises(NearDupClientError, match="has fields, but this store holds bottomk") as refused:
            text_client.dedup([Document("f", fields={"title": "x"}), "a"])
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.slow
def test_pairs_of_an_items_store(store, tmp_path):
    out = tmp_path / "pairs.jsonl"
    done = run_neardup("pairs", "--store", str(store), "--threshold", "0.5", "--output", str(out))
    assert done.returncode == 0, done.stderr
    pairs = {(p["a"], p["b"]) for p in map(json.loads, out.read_text().splitlines())}
    assert ("ad-1", "ad-1-repost") in pairs and not any("ad-2-manchester" in p or "other" in p for p in pairs)


def test_the_command_line_sends_fields_and_clusters_items(server, store, tmp_path):
    jsonl = write_jsonl(tmp_path / "results.jsonl", [{"id": "fresh", "fields": ITEMS["ad-1-repost"]}, {"id": "ad-1"},
                                                    {"id": "ad-2-manchester"}])
    done = run_neardup("dedup", "--jsonl", str(jsonl), "--target", server.target)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["keep"] == ["fresh", "ad-2-manchester"]
    done = run_neardup("cluster", "--store", str(store), "--threshold", "0.5", "--method", "components")
    assert done.returncode == 0, done.stderr
    done = run_neardup("clusters", "--store", str(store), "--export", str(tmp_path / "clusters.jsonl"))
    cluster = {row["id"]: row["cluster"] for row in map(json.loads, (tmp_path / "clusters.jsonl").open())}
    assert cluster["ad-1"] == cluster["ad-1-repost"] != cluster["ad-2-manchester"] != cluster["other"]


@pytest.mark.slow
def test_index_refuses_a_bad_schema_and_text_records(tmp_path, schema_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"fields": [{"name": "title", "kind": "geo"}]}))
    done = run_neardup("index", "-", "--store", str(tmp_path / "s"), "--fields", str(bad), input="")
    assert done.returncode == 2 and "unknown kind 'geo'" in done.stderr and len(done.stderr.splitlines()) <= 2
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": "t", "text": "a text"}])
    done = run_neardup("index", str(corpus), "--store", str(tmp_path / "s"), "--fields", str(schema_path), "--strict")
    assert done.returncode == 1 and "give the record's \"fields\"" in done.stderr


def test_every_backend_keeps_items_and_the_pair_model(store_location):
    """The items store and its model go through the store interface only: Redis carries them as LMDB does."""
    from neardup.runtime.deduplicator import Deduplicator
    from neardup.runtime.params import DedupParams, SimilarParams
    from neardup.runtime.served_store import ServedStore
    from neardup.runtime.similar_search import SimilarSearch
    from neardup.store import create_store, open_store

    sketcher = ItemSketcher(config())
    with create_store(store_location, config(), []) as store:
        store.put_many([(doc_id, sketcher.sketch(fields, "en")) for doc_id, fields in ITEMS.items()])
        assert store.model() is None
        store.set_model(b'{"a": "model"}')
    with open_store(store_location) as store:
        assert store.config == config() and store.model() == b'{"a": "model"}'
        store.set_model(None)
        served = ServedStore(store)
        grouping = kernel.unpack(Deduplicator(served).dedup_ids(["ad-1", "ad-2-manchester", "ad-1-repost"],
                                                  DedupParams(0.81, "fields")).packed_grouping)
        assert grouping.duplicate_of == [-1, -1, 0]
        found = SimilarSearch(served).find_similar("ad-1", SimilarParams(threshold=0.5, metric="fields"))
        assert [m.id for m in found.matches] == ["ad-1-repost"]


# --- the store described in its own terms ---------------------------------------------------------------------------

def test_an_items_store_is_described_by_its_fields_and_rules():
    """Not as a store of texts (no shingle unit, K or language of its own): each field with what applies to its kind
    and its weight, then the rules."""
    assert config().describe() == (
        "items: 5 fields (title: text word:1 k=16 jaccard, weight 2; body: text word:3 k=64 containment, weight 1; "
        "phone: exact (digits), weight 1; url: exact (url), weight 4; location: location (geohash precision 5), "
        "weight 4); rules: title+body | title+location | url")
    assert SketchConfig().describe() == "bottomk: unit=word:3 k=128 lang=english min_word_len=1"
    assert SketchConfig(kind="simhash", unit="sentence").describe() == \
        "simhash: unit=sentence sketch=simhash lang=english min_word_len=1"


@pytest.mark.slow
def test_index_and_info_describe_an_items_store_in_its_own_terms(tmp_path, schema_path, server):
    corpus = write_jsonl(tmp_path / "items.jsonl", [{"id": doc_id, "fields": fields}
                                                    for doc_id, fields in ITEMS.items()])
    done = run_neardup("index", str(corpus), "--store", str(tmp_path / "store"), "--fields", str(schema_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"indexed into {tmp_path / 'store'} ({config().describe()})"
    assert "stop-listed" not in done.stdout and "unit=" not in done.stdout and "lang=" not in done.stdout
    done = run_neardup("info", "--target", server.target)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["description"] == config().describe()
