"""The A/B tool of the request path (benchmarks/request_cost.py, benchmarks/lib/ab.py): a revision is installed into
an environment of its own and served beside this one, the rounds alternate, and the report says per figure each
side's median and spread and the paired difference. A short HEAD-against-HEAD run checks the report's shape, never a
timing."""
from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from benchmarks import request_cost
from benchmarks.lib import ab, load
from benchmarks.lib.paths import ROOT


def test_the_sides_alternate_which_goes_first():
    assert [ab.order(n, ["a", "b"]) for n in range(4)] == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]


def test_a_summary_gives_each_sides_median_and_spread_and_the_paired_difference():
    rounds = [{"a": {"x": 1.0, "y": 2.0}, "b": {"x": 1.5, "y": 2.1}},
              {"a": {"x": 1.2, "y": 2.2}, "b": {"x": 1.6, "y": 2.0}},
              {"a": {"x": 1.1, "y": 2.1}, "b": {"x": 1.4, "y": 2.3}}]
    summary = ab.summarize(rounds)
    assert summary["sides"]["a"]["x"] == {"median": 1.1, "min": 1.0, "max": 1.2, "rounds": [1.0, 1.2, 1.1]}
    assert summary["sides"]["b"]["y"]["median"] == 2.1
    x = summary["difference"]["x"]  # b - a per round: 0.5, 0.4, 0.3: B is worse in every round
    assert x["median"] == pytest.approx(0.4) and x["min"] == pytest.approx(0.3) and not x["within_spread"]
    y = summary["difference"]["y"]  # 0.1, -0.2, 0.2: holds 0
    assert y["min"] == pytest.approx(-0.2) and y["max"] == pytest.approx(0.2) and y["within_spread"]


def test_one_side_has_no_difference():
    summary = ab.summarize([{"a": {"x": 1.0}}, {"a": {"x": 3.0}}])
    assert summary["sides"]["a"]["x"]["median"] == 2.0 and "difference" not in summary


def test_a_revision_that_names_no_commit_is_one_clear_error(tmp_path):
    with pytest.raises(ab.RevisionError, match="'no-such-revision' names no commit"):
        ab.install("no-such-revision", tmp_path)
    assert not any(tmp_path.iterdir())


def test_bad_arguments_are_refused_in_one_line(capsys):
    with pytest.raises(SystemExit) as refused:
        request_cost.parse_arguments(["--store-from", "b"])
    assert refused.value.code == 2 and "--store-from b needs --against" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        request_cost.parse_arguments(["--rounds", "0"])


def test_this_environment_is_the_checkouts():
    side = ab.this_environment()
    assert side.commit == ab.commit_of("HEAD") and side.label == "this checkout"


@pytest.mark.redis
@pytest.mark.parametrize("backend", ["redis", "cluster"])
def test_with_a_redis_backend_each_built_store_is_served_from_its_own_copy(tmp_path, backend):
    """--backend: the stores the sides built, copied by the builder's `neardup migrate` into a Redis (a Redis
    Cluster) the tool starts; two sides of one store share one copy, a side of its own store gets its own."""
    from contextlib import ExitStack

    from neardup.store import open_store
    from server_process import write_jsonl
    from textgen import article, text

    this = ab.this_environment()
    corpus = write_jsonl(tmp_path / "texts.jsonl", [{"id": f"text-{n}", "text": text(article(n))} for n in range(40)])
    built = tmp_path / "store-a"  # a small corpus: what is checked is the copies, not the store's size
    subprocess.run([*this.neardup, "index", str(corpus), "--store", str(built)], check=True, capture_output=True)
    other = tmp_path / "store-b"
    subprocess.run([*this.neardup, "migrate", "--no-progress", str(built), str(other)], check=True)
    with ExitStack() as stack:
        shared = request_cost.copied_to_redis(backend, {"a": built, "b": built}, {"a": this, "b": this},
                                              tmp_path / "shared", stack)
        own = request_cost.copied_to_redis(backend, {"a": built, "b": other}, {"a": this, "b": this},
                                           tmp_path / "own", stack)
        assert shared["a"] == shared["b"] and own["a"] != own["b"]
        assert shared["a"].startswith("redis+cluster://" if backend == "cluster" else "redis://")
        with open_store(built, readonly=True) as source:
            digest, count = source.digest(), source.count()
        for url in (shared["a"], *own.values()):
            with open_store(url, readonly=True) as copy:
                assert (copy.digest(), copy.count()) == (digest, count)


def test_the_backend_is_one_of_the_stores_a_server_reads():
    assert request_cost.parse_arguments([]).backend == "lmdb"
    with pytest.raises(SystemExit):
        request_cost.parse_arguments(["--backend", "sqlite"])


def test_head_against_head_reports_every_figure_for_both_sides(tmp_path):
    """The whole tool on a short run: HEAD installed into its own environment, both servers on one store, two
    rounds. Checks what the report holds and that no call failed, never how fast anything was."""
    results = request_cost.main(["--against", "HEAD", "--rounds", "2", "--seconds", "1", "--calls", "60",
                                 "--out", str(tmp_path)])
    head = ab.commit_of("HEAD")
    assert results["sides"]["a"]["commit"] == results["sides"]["b"]["commit"] == head
    installed = ab.REVISIONS / head
    # named relative to the repository, so that no result file holds this machine's paths
    python = ROOT / results["sides"]["b"]["python"]
    assert not Path(results["sides"]["b"]["python"]).is_absolute() and python == installed / "venv" / "bin" / "python"
    where = subprocess.run([str(python), "-c", "import neardup; print(neardup.__file__)"],
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(installed / "venv"))  # its own neardup, not this environment's
    assert Path(ab.install("HEAD").python) == python  # kept: the second run reuses it

    assert len(results["rounds"]) == 2
    for row in results["rounds"]:
        for side in ("a", "b"):
            assert set(row[side]["ratios"]) == set(request_cost.FIGURES)
            assert all(math.isfinite(v) and v > 0 for v in row[side]["ratios"].values())
            assert row[side]["failed_calls"] == 0
    assert set(results["summary"]["difference"]) == set(request_cost.FIGURES)
    answers = results["answers"]  # one build, one store: the same answers, and some duplicates found
    assert answers["a"] == answers["b"] and answers["same_duplicates"] == answers["a"]["results"]
    assert 0 < answers["a"]["duplicates"] < answers["a"]["results"]
    for side in ("a", "b"):
        assert results["servers"][side] == {"exit_code": 0, "internal_errors_logged": 0}
        assert results["goals"][side][-1] == {"goal": "no failed call", "ratio": 0.0, "met": True}
    written = json.loads((tmp_path / "request_cost.json").read_text())
    assert written["summary"] == results["summary"]
    report = (tmp_path / "request_cost.md").read_text()
    assert "| figure | A | B | B − A | within the rounds' spread |" in report
    assert results["result_set_size"] == 100 and "drawn result sets of 100 ids" in report
    assert all(what in report for what, _, _ in request_cost.FIGURES.values())


def test_a_profiles_stacks_go_to_the_innermost_part_they_reach():
    from benchmarks import request_profile

    handler = "_worker (thread.py:1);_unary_response_in_pool (_server.py:2);NearDupServicer.Dedup (servicer.py:3)"
    collapsed = "\n".join([
        f"{handler};Deduplicator.dedup_ids (deduplicator.py:4);_Memo.get_many (view.py:5) 3",
        f"{handler};Deduplicator.dedup_ids (deduplicator.py:4);Deduplicator.group (deduplicator.py:6);"
        "dedup (kernel.py:7) 5",
        f"{handler};Deduplicator.dedup_ids (deduplicator.py:4) 1",
        "_worker (thread.py:1);_unary_response_in_pool (_server.py:2);_status (_server.py:8) 4",
        "_worker (thread.py:1);Condition.wait (threading.py:9) 2",
        "<module> (neardup:1);run_worker (server.py:10) 1",
    ])
    summary = request_profile.summarize(collapsed)
    samples = {name: row["samples"] for name, row in summary["buckets"].items() if row["samples"]}
    assert summary["samples"] == 16
    assert samples == {request_profile.BUCKETS[0][0]: 5, request_profile.BUCKETS[1][0]: 3,
                       request_profile.BUCKETS[5][0]: 1, request_profile.BUCKETS[6][0]: 4,
                       request_profile.BUCKETS[7][0]: 2, request_profile.OTHER: 1}


def test_a_dedups_cpu_over_the_empty_call_splits_into_the_call_and_the_work_round_by_round():
    from benchmarks.request_profile import CACHED, CHECK, COMPUTED, cpu_split

    def kind(rate: float, cpu: float, errors: int = 0) -> dict:
        return {"calls_per_s": rate, "cpu_us": cpu, "errors": errors}

    rounds = [{CHECK: kind(2000, 500), CACHED: kind(1800, 540), COMPUTED: kind(1500, 700)},
              {CHECK: kind(1000, 800), CACHED: kind(950, 820, 1), COMPUTED: kind(800, 1000)},
              {CHECK: kind(2200, 450), CACHED: kind(2000, 500), COMPUTED: kind(1650, 640)}]
    split = cpu_split(rounds)
    assert split["call_us"] == 40 and split["work_us"] == 160  # medians of (40, 20, 50) and (160, 180, 140)
    assert split["kinds"][COMPUTED]["cpu_us"] == 700 and split["kinds"][CHECK]["calls_per_s"] == 2000
    assert split["kinds"][COMPUTED]["rate_ratio"] == 0.75  # of 0.75, 0.8, 0.75: each round over its own Check
    assert split["kinds"][CHECK]["cpu_ratio"] == 1.0 and split["errors"] == 1


def test_the_popular_corpus_adds_copies_of_one_story_and_every_result_set_holds_some():
    from benchmarks.lib import load

    drawn, popular = load.corpus("drawn"), load.corpus("popular")
    assert popular[:len(drawn)] == drawn  # the development corpus, then the copies
    copies = popular[len(drawn):]
    assert len(copies) == load.POPULAR_COPIES and {d.group for d in copies} == {load.POPULAR_GROUP}
    assert len({d.text for d in copies}) > load.POPULAR_COPIES // 2  # republished with edits, not one text
    id_sets, _ = load.dedup_bodies(popular, 3, "popular")
    copy_ids = {d.id for d in copies}
    for ids in id_sets:
        assert len(ids) == len(set(ids)) == 100 and len(copy_ids & set(ids)) == load.POPULAR_IN_SET
    assert id_sets[0] != id_sets[1]
    with pytest.raises(ValueError, match="unknown kind of result set"):
        load.corpus("hot")


def test_news_result_sets_hold_news_articles_only_with_duplicates_among_them():
    from benchmarks.lib import load

    docs = load.corpus("news")
    assert docs == load.corpus("drawn")  # the same store; only the result sets differ
    id_sets, bodies = load.dedup_bodies(docs, 5, "news")
    by_id = {doc.id: doc for doc in docs}
    for ids in id_sets:
        assert len(ids) == len(set(ids)) == load.NEWS_SET_SIZE
        assert {by_id[i].source for i in ids} == {"news"}
        duplicates = len(ids) - len({by_id[i].group for i in ids})
        assert 0.2 * len(ids) - 1 <= duplicates <= 0.4 * len(ids) + 1
    assert len(bodies) == 5 and id_sets[0] != id_sets[1]


def test_a_c_source_is_matched_to_the_extension_it_is_compiled_into(tmp_path):
    """_search_file.c is part of _search: its build is _search's .so, not one of its own name."""
    for name in ("_search.cpython-311-x86_64-linux-gnu.so", "_shingle.cpython-311-x86_64-linux-gnu.so"):
        (tmp_path / name).write_bytes(b"")
    assert ab._built_from(tmp_path, "_search_file").name.startswith("_search.")
    assert ab._built_from(tmp_path, "_search").name.startswith("_search.")
    assert ab._built_from(tmp_path, "_shingle").name.startswith("_shingle.")
    assert ab._built_from(tmp_path, "_stem") is None


def test_a_sketch_size_indexes_the_store_both_sides_serve_with_it(tmp_path):
    """--sketch-size K: the store is indexed with `neardup index -k K` (what a store re-indexed on train's advice
    of a larger sketch serves)."""
    from neardup.store import open_store

    args = request_cost.parse_arguments(["--sketch-size", "256"])
    assert args.sketch_size == 256 and request_cost.parse_arguments([]).sketch_size is None
    docs, store, built = load.build_store(tmp_path, kind="drawn", options=("-k", str(args.sketch_size)))
    with open_store(store, readonly=True) as opened:
        assert opened.config.k == 256 and opened.count() == len(docs)
    assert built["command"].endswith("--store STORE -k 256")
