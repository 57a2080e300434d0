"""The compiled wire reader and writer of Dedup's hot path (service/_wire.c) against the protobuf runtime: the same
ids and tag out of every request it accepts, None for every request the runtime would refuse or that carries more,
and byte-identical responses; and the servicer's two paths (plain ids, general) giving the same answers."""
from __future__ import annotations

import random
import struct

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core import kernel
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.runtime.params import Limits
from neardup.service import _wire, converters
from neardup.service.servicer import NearDupServicer
from neardup.core.errors import InvalidArgument
from neardup.store import MAX_ID_BYTES, check_ids, create_store
from neardup_client.v1 import neardup_pb2 as pb

REQUEST = pb.DedupRequest.DESCRIPTOR.fields_by_name
RESPONSE = pb.DedupResponse.DESCRIPTOR.fields_by_name


def test_field_numbers_are_the_protos():
    assert (_wire.REQUEST_IDS, _wire.REQUEST_TAG) == (REQUEST["ids"].number, REQUEST["tag"].number)
    for name in ("duplicate_of", "group", "missing", "threshold", "metric", "grouping", "similarity", "cluster"):
        assert getattr(_wire, f"RESPONSE_{name.upper()}") == RESPONSE[name].number, name


ids_strategy = st.lists(st.text(max_size=12), max_size=30)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, deadline=None)
@given(ids=ids_strategy, tag=st.one_of(st.none(), st.integers(0, 2**64 - 1)))
def test_a_request_of_ids_reads_as_the_runtime_reads_it(ids, tag):
    request = pb.DedupRequest(ids=ids)
    if tag is not None:
        request.tag = tag
    data = request.SerializeToString()
    plain = _wire.parse_dedup_ids(data, MAX_ID_BYTES)
    if any("\ud800" <= c <= "\udfff" for doc_id in ids for c in doc_id):
        return  # hypothesis text may hold lone surrogates, which protobuf cannot serialize in the first place
    if "" in ids:  # the id rule refuses it: the general path says so
        assert plain is None
        return
    assert plain is not None
    parsed_ids, parsed_tag, key = plain
    assert parsed_ids == ids and parsed_tag == (tag or 0)
    assert key == pb.DedupRequest(ids=ids).SerializeToString()
    assert (key is data) == (not tag)


def test_a_tag_written_as_zero_or_twice_is_read_as_the_runtime_reads_it():
    ids = pb.DedupRequest(ids=["a", "b"]).SerializeToString()
    zero, five, seven = (pb.DedupRequest(tag=t).SerializeToString() or b"\x38\x00" for t in (0, 5, 7))
    for data in (ids + zero, zero + ids, five + ids + seven, ids + five + ids):
        runtime = pb.DedupRequest.FromString(data)
        parsed_ids, tag, key = _wire.parse_dedup_ids(data, MAX_ID_BYTES)
        assert (parsed_ids, tag) == (list(runtime.ids), runtime.tag)
        runtime.ClearField("tag")
        assert key == runtime.SerializeToString()


@pytest.mark.parametrize("request_message", [
    pb.DedupRequest(ids=["a"], threshold=0.5),
    pb.DedupRequest(ids=["a"], metric=pb.METRIC_JACCARD),
    pb.DedupRequest(ids=["a"], grouping=pb.GROUPING_COMPONENTS),
    pb.DedupRequest(documents=[pb.Document(id="a", text="x")]),
    pb.DedupRequest(ids=["a"], sketch_config=pb.SketchConfig(k=3)),
], ids=["threshold", "metric", "grouping", "documents", "sketch_config"])
def test_a_request_with_anything_but_ids_and_tag_takes_the_general_path(request_message):
    assert _wire.parse_dedup_ids(request_message.SerializeToString(), MAX_ID_BYTES) is None


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=40))
def test_bytes_the_runtime_refuses_are_never_read(data):
    try:
        runtime = pb.DedupRequest.FromString(data)
    except DecodeError:
        runtime = None
    plain = _wire.parse_dedup_ids(data, MAX_ID_BYTES)
    if plain is not None:
        assert runtime is not None, data
        assert (plain[0], plain[1]) == (list(runtime.ids), runtime.tag)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.text(min_size=0, max_size=200).map(lambda text: text * 3), min_size=1, max_size=5))
def test_the_reader_admits_exactly_the_ids_the_id_rule_admits(ids):
    """The screen the plain path relies on to skip check_ids: an id the rule refuses (empty, over MAX_ID_BYTES
    UTF-8 bytes) sends the request to the general path, where check_ids names it."""
    ids = [doc_id.encode("utf-8", "replace").decode("utf-8") for doc_id in ids]
    plain = _wire.parse_dedup_ids(pb.DedupRequest(ids=ids).SerializeToString(), MAX_ID_BYTES)
    try:
        check_ids(ids)
    except InvalidArgument:
        assert plain is None
    else:
        assert plain is not None and plain[0] == ids


def test_the_longest_id_is_read_and_one_byte_more_is_not():
    for limit_id, longer in (("x" * MAX_ID_BYTES, "x" * (MAX_ID_BYTES + 1)),
                             ("é" * (MAX_ID_BYTES // 2), "é" * (MAX_ID_BYTES // 2) + "é")):
        assert _wire.parse_dedup_ids(pb.DedupRequest(ids=["a", limit_id]).SerializeToString(),
                                     MAX_ID_BYTES)[0] == ["a", limit_id]
        assert _wire.parse_dedup_ids(pb.DedupRequest(ids=["a", longer]).SerializeToString(), MAX_ID_BYTES) is None


def test_an_id_that_is_not_utf8_or_a_truncated_message_is_left_to_the_runtime():
    good = pb.DedupRequest(ids=["abc", "déjà"]).SerializeToString()
    for data in (b"\x0a\x02\xed\xa0",                  # a surrogate's UTF-8 form
                 b"\x0a\x01\xff",                      # not UTF-8 at all
                 good[:-1],                            # an id cut short
                 b"\x0a\x80",                          # a length cut short
                 b"\x38" + b"\xff" * 11):              # a varint longer than ten bytes
        assert _wire.parse_dedup_ids(data, MAX_ID_BYTES) is None, data
        with pytest.raises(DecodeError):
            pb.DedupRequest.FromString(data)


def _packed(duplicate_of: list[int], group: list[int], similarity: list[float]) -> bytes:
    n = len(duplicate_of)
    return struct.pack(f"={n}i{n}i{n}d", *duplicate_of, *group, *similarity)


answers = st.integers(0, 60).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-1, max(n - 1, 0)), min_size=n, max_size=n),
    st.lists(st.integers(0, max(n - 1, 0)), min_size=n, max_size=n),
    st.lists(st.floats(allow_nan=False), min_size=n, max_size=n),
    st.lists(st.integers(0, max(n - 1, 0)), max_size=n, unique=True).map(sorted),
    st.one_of(st.none(), st.lists(st.integers(-1, 2**40), min_size=n, max_size=n)),
))


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, deadline=None)
@given(answer=answers, threshold=st.sampled_from([0.0, -0.0, 0.52, 1.0, 1e-300, 46 / 64]),
       metric=st.sampled_from([0, 1, 2, 3]), grouping=st.sampled_from([0, 1, 2, 3]))
def test_a_response_is_byte_for_byte_the_runtimes(answer, threshold, metric, grouping):
    duplicate_of, group, similarity, missing, clusters = answer
    written = _wire.encode_dedup_response(_packed(duplicate_of, group, similarity), missing, threshold, metric,
                                          grouping, clusters)
    expected = pb.DedupResponse(duplicate_of=duplicate_of, group=group, similarity=similarity, missing=missing,
                                threshold=threshold, metric=metric, grouping=grouping, cluster=clusters)
    assert written == expected.SerializeToString()


def test_a_packed_answer_of_a_wrong_size_is_refused():
    with pytest.raises(ValueError, match="16 bytes a result"):
        _wire.encode_dedup_response(b"\x00" * 15, [], 0.5, 1, 1, None)


def test_the_kernels_packed_answer_unpacks_to_its_grouping():
    rng = random.Random(7)
    base = sorted(rng.sample(range(1 << 32), 128))
    sketches = [encode_sketch(base), encode_sketch(sorted(base[:100] + rng.sample(range(1 << 32), 28))), None,
                encode_sketch(sorted(rng.sample(range(1 << 32), 128)))]
    for grouping in ("greedy", "components", "complete"):
        assert kernel.unpack(kernel.dedup(sketches, 128, 0.5, "containment", grouping, packed=True)) == \
            kernel.dedup(sketches, 128, 0.5, "containment", grouping)


@pytest.fixture(scope="module")
def servicer(tmp_path_factory):
    """A servicer on a real store of edited copies, session cache off, as `serve` builds it."""
    rng = random.Random(11)
    sketches = {}
    for original in range(30):
        values = rng.sample(range(1 << 32), 200)
        sketches[f"doc-{original}"] = encode_sketch(sorted(values)[:128])
        for copy in range(rng.randrange(3)):
            edited = values[:]
            for _ in range(rng.randrange(10, 120)):
                edited[rng.randrange(len(edited))] = rng.randrange(1 << 32)
            sketches[f"doc-{original}-copy-{copy}-ü"] = encode_sketch(sorted(set(edited))[:128])
    store = create_store(tmp_path_factory.mktemp("wire") / "store", SketchConfig(), [])
    store.put_many(list(sketches.items()))
    yield NearDupServicer.for_store(store, Limits(), 0, 0), sorted(sketches)
    store.close()


def test_both_paths_answer_a_result_set_alike(servicer):
    served, ids = servicer
    rng, duplicates = random.Random(5), 0
    for _ in range(40):
        result_set = rng.sample(ids, rng.randrange(1, 40)) + ["not-stored"] * rng.randrange(2)
        rng.shuffle(result_set)
        plain = pb.DedupRequest(ids=result_set).SerializeToString()
        # the server's own defaults written out: another request on the wire, the same result set
        general = pb.DedupRequest(ids=result_set, threshold=served.defaults.threshold).SerializeToString()
        assert converters.plain_dedup_request(plain) is not None
        assert converters.plain_dedup_request(general) is None
        answer = pb.DedupResponse.FromString(served.Dedup(plain, None))
        assert answer == pb.DedupResponse.FromString(served.Dedup(general, None))
        duplicates += sum(d >= 0 for d in answer.duplicate_of)
        assert list(answer.missing) == [p for p, doc_id in enumerate(result_set) if doc_id == "not-stored"]
        tagged = pb.DedupResponse.FromString(served.Dedup(plain + pb.DedupRequest(tag=9).SerializeToString(), None))
        assert tagged.tag == 9 and (tagged.duplicate_of, tagged.similarity) == (answer.duplicate_of,
                                                                              answer.similarity)
    assert duplicates >= 20  # the sets held copies, and both paths found them
