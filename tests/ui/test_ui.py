# Whole on purpose: its tests share module-scoped servers, `neardup ui` processes and a browser, started once.
"""The web page (`neardup ui`) in a real browser: a real `neardup serve` on a store made by `neardup index`, a real
`neardup ui` process in front of it, and Debian's chromium driven by Playwright. What the page shows must be what
the server answers the Python client: the groups of a result set (as a shared link, and after the threshold slider
moved), the highlighted passages of a pair (Explain's spans, in code points, on texts with characters beyond
U+FFFF), and the server's own message for a request it refuses. With --store on a store clustered by `neardup
cluster`, the Store view lists the largest clusters `neardup clusters --export` has and finds the cluster of an id.
With --store and --labels on an items store of re-entered records, the Label pairs view shows the pair `neardup
label`'s session proposes (a session of the test on the same store says which), and its buttons and keys write the
answers file line by line, undo included; on a store of texts it shows the pair's texts with Explain's highlights.

Chromium (Debian's package) and Playwright (the `test` extra) are installed by .ci/run; without them these tests
fail and say so, they are not skipped. `NEARDUP_SCREENSHOTS=docs/images pytest tests/test_ui.py` also saves a
screenshot of each view there (docs/ui.md shows them).
"""
from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from neardup.core.explain import merge_spans
from neardup.jobs.label import LabelSession
from neardup.store import open_store
from neardup_client import Document, NearDupClientError
from server_process import NEARDUP, free_port, serving, write_jsonl
from textgen import RECORD_SCHEMA, article, records_with_typos, text

FOOTER = "Subscribe to our newsletter for more stories like this one, every single morning."
STORY, OTHER, THIRD = article(61), article(62), article(63)
EDITED = [sentence.replace(sentence.split()[1], "harbourmaster", 1) if n % 2 else sentence
          for n, sentence in enumerate(article(64))]
TEXTS = {
    "story": text(STORY),
    "story-copy": "From the wire: " + text(STORY) + " Share this story.",
    "story-part": text(STORY[:6]) + " " + text(OTHER[:8]),
    "other": text(OTHER),
    "third": text(THIRD),
    "edited-source": text(article(64)),
    "edited": text(EDITED),
    # a site's articles, all with its footer: the footer is learned as boilerplate
    **{f"site-{i}": text(article(80 + i)) + " " + FOOTER for i in range(12)},
}
IDS = ["story", "other", "story-copy", "site-1", "edited-source", "nowhere", "story-part", "edited", "third"]
#: Pasted documents: characters beyond U+FFFF (two UTF-16 code units each) and İ (two code points in lowercase)
#: before and inside the shared passages, and the site's footer.
PASTED = [
    {"id": "wire", "text": "Wire 𝔘𝔭𝔡𝔞𝔱𝔢: " + text(STORY[:9])},
    {"id": "blog", "text": "İstanbul blog 😀 reposts: " + text(STORY[:9]).replace("the", "thé", 2) + " " + FOOTER},
    {"id": "story", "text": None},  # only an id: read from the store
    {"id": "unrelated", "text": text(THIRD[:5]) + " " + FOOTER},
]
SCREENSHOTS = os.environ.get("NEARDUP_SCREENSHOTS")


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the web page's tests need Playwright: pip install playwright (the `test` extra has it; "
                    "bash .ci/run installs it)")
    if shutil.which("chromium") is None:
        pytest.fail("the web page's tests need Debian's chromium: apt-get install chromium (as .ci/run does)")
    return sync_playwright


@pytest.fixture(scope="module")
def store(indexed_store):
    return indexed_store("ui", TEXTS)


def as_shown(value: float) -> str:
    """A similarity or threshold as the page shows it (app.js's fixed): four decimals at most, no trailing zeros."""
    return f"{round(value, 4):g}"


def _running_ui(target: str, log: Path, *args: str, cwd: Path | None = None):
    """`neardup ui` for the server at target, as a user starts it, with args (in cwd); yields its URL. It must stop
    cleanly on SIGTERM."""
    port = free_port()
    with open(log, "w") as output:
        process = subprocess.Popen([*NEARDUP, "ui", "--target", target, "--port", str(port), *args],
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True, cwd=cwd)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    try:
        while True:
            assert process.poll() is None, f"neardup ui exited with {process.returncode}: {log.read_text()}"
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"neardup ui did not answer within 30 s: {log.read_text()}"
            time.sleep(0.05)
        yield url
    finally:  # also when the test failed (the generator closed): no page process is left behind
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
    assert code == 0, log.read_text()
    assert "Traceback" not in log.read_text()


@contextlib.contextmanager
def _ui_process(target: str, log: Path, *args: str, cwd: Path | None = None):
    """_running_ui as a with block: the page stops when the block ends, failed or not, and must have stopped
    cleanly when it did not fail."""
    running = _running_ui(target, log, *args, cwd=cwd)
    url = next(running)
    try:
        yield url
    except BaseException:
        running.close()
        raise
    next(running, None)


@pytest.fixture(scope="module")
def ui(server, tmp_path_factory):
    """`neardup ui` for the module's server, without --store."""
    yield from _running_ui(server.target, tmp_path_factory.mktemp("ui") / "ui.log")


@pytest.fixture(scope="module")
def browser():
    sync_playwright = _playwright()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=shutil.which("chromium"))
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], errors  # no script error on any page


def _screenshot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def _wait_ready(page, selector: str) -> None:
    page.wait_for_selector(f"{selector}[data-state=ready], {selector}[data-state=error]", state="attached",
                           timeout=20_000)


# --- what the page shows, read from the page ----------------------------------------------------------------------

_GROUPS = """() => Array.from(document.querySelectorAll('#results > li.kept')).map(li => ({
  id: li.dataset.id,
  missing: li.querySelector(':scope > .row .missing') !== null,
  duplicates: Array.from(li.querySelectorAll(':scope > ol.duplicates > li')).map(d => ({
    id: d.dataset.id, of: Number(d.dataset.duplicateOf), similarity: Number(d.dataset.similarity),
    shown: d.querySelector('.similarity').textContent})),
}))"""

_SEGMENTS = """(selector) => Array.from(document.querySelector(selector).childNodes).map(node =>
  [node.textContent, node.nodeType === Node.ELEMENT_NODE ? Array.from(node.classList) : []])"""


def _expected_groups(answer) -> list[dict]:
    missing = set(answer.missing_positions)
    return [{"id": doc_id, "missing": position in missing,
             "duplicates": [{"id": answer.ids[q], "of": position, "similarity": answer.similarity[q]}
                            for q, of in enumerate(answer.duplicate_of) if of == position]}
            for position, doc_id in enumerate(answer.ids) if answer.duplicate_of[position] < 0]


def _shown_groups(page) -> list[dict]:
    """The groups as the page shows them; each similarity is shown to three decimals."""
    groups = page.evaluate(_GROUPS)
    for group in groups:
        for duplicate in group["duplicates"]:
            shown = duplicate.pop("shown")
            assert shown.startswith("≈ ") and abs(float(shown[2:]) - duplicate["similarity"]) < 0.0005 + 1e-12
    return groups


def _highlighted(page, selector: str) -> tuple[str, dict[str, list[tuple[int, int]]]]:
    """The text a pair's column shows and, per highlight class, the merged spans it covers, in code points (a
    Python str's indexes: the page's UTF-16 strings arrive here as code points)."""
    spans: dict[str, list[tuple[int, int]]] = {"shared": [], "sketch_shared": [], "boilerplate": []}
    shown, offset = [], 0
    for piece, classes in page.evaluate(_SEGMENTS, selector):
        for name in classes:
            spans[name].append((offset, offset + len(piece)))
        shown.append(piece)
        offset += len(piece)
    return "".join(shown), {name: merge_spans(found) for name, found in spans.items()}


# --- the result set -----------------------------------------------------------------------------------------------

def test_a_shared_link_shows_the_groups_dedup_answers(page, ui, client):
    page.goto(f"{ui}?ids={','.join(IDS)}")
    _wait_ready(page, "#results")
    answer = client.dedup(IDS)
    assert page.get_attribute("#results", "data-state") == "ready"
    assert _shown_groups(page) == _expected_groups(answer)
    assert answer.duplicates and answer.missing == ["nowhere"]  # the page had groups and a missing id to show
    assert float(page.get_attribute("#results", "data-threshold")) == answer.threshold
    assert page.input_value("#input").split("\n") == IDS
    _screenshot(page, "results")


def _move_slider(page, fraction: float) -> float:
    """Clicks the slider's track at `fraction` of its width, as a person would; the value it took."""
    box = page.locator("#threshold").bounding_box()
    page.mouse.click(box["x"] + box["width"] * fraction, box["y"] + box["height"] / 2)
    value = float(page.input_value("#threshold"))
    page.wait_for_function("value => document.getElementById('results').dataset.state === 'ready' && "
                           "Number(document.getElementById('results').dataset.threshold) === value", arg=value,
                           timeout=20_000)
    return value


def test_moving_the_slider_regroups_to_dedups_answer_at_its_threshold(page, ui, client):
    page.goto(f"{ui}?ids={','.join(IDS)}")
    _wait_ready(page, "#results")
    groupings = []
    for fraction in (0.97, 0.25, 0.75):
        threshold = _move_slider(page, fraction)
        answer = client.dedup(IDS, threshold=threshold)
        assert _shown_groups(page) == _expected_groups(answer), threshold
        groupings.append(answer.duplicate_of)
    assert len(set(groupings)) == 3  # each position of the slider grouped the results differently
    assert f"threshold={page.input_value('#threshold')}" in page.url  # the link to share says where it stood


def test_the_pair_of_pasted_documents_highlights_explains_spans(page, ui, client):
    page.goto(ui)
    page.fill("#input", "\n".join(json.dumps({key: value for key, value in doc.items() if value is not None},
                                             ensure_ascii=False) for doc in PASTED))
    page.click("#run")
    _wait_ready(page, "#results")
    documents = [Document(doc["id"], text=doc["text"]) if doc["text"] else doc["id"] for doc in PASTED]
    assert _shown_groups(page) == _expected_groups(client.dedup(documents))
    page.click("li.duplicate[data-id=blog] button.explain")
    _wait_ready(page, "#pair")
    assert page.get_attribute("#pair", "data-state") == "ready"
    wire, blog = (Document(doc["id"], text=doc["text"]) for doc in PASTED[:2])
    answer = client.explain(wire, blog)
    for selector, doc, explained in (("#pair-comparison article.side-a .text", wire, answer.a), ("#pair-comparison article.side-b .text", blog, answer.b)):
        shown, spans = _highlighted(page, selector)
        assert shown == doc.text
        assert spans == {name: getattr(explained, name) for name in ("shared", "sketch_shared", "boilerplate")}
    assert answer.a.shared and answer.b.sketch_shared and answer.b.boilerplate  # there was something to show
    assert page.text_content("#pair-summary").startswith(f"similarity {as_shown(answer.similarity)} (containment): "
                                                         "near-duplicates")
    _screenshot(page, "pair")


def test_any_two_results_can_be_compared(page, ui, client):
    page.goto(ui)
    page.fill("#input", "\n".join(json.dumps({key: value for key, value in doc.items() if value is not None},
                                             ensure_ascii=False) for doc in PASTED))
    page.click("#run")
    _wait_ready(page, "#results")
    page.check("li[data-id=wire] input.pick")
    page.click("li[data-id=unrelated] input.pick")  # the second pick opens the pair, and both are unchecked
    _wait_ready(page, "#pair")
    answer = client.explain(Document("wire", text=PASTED[0]["text"]), Document("unrelated", text=PASTED[3]["text"]))
    assert not answer.duplicate and "not near-duplicates" in page.text_content("#pair-summary")
    shown, spans = _highlighted(page, "#pair-comparison article.side-b .text")
    assert shown == PASTED[3]["text"] and spans["boilerplate"] == answer.b.boilerplate != []
    # a pasted line with only an id is read from the store: its text is not there to show
    page.check("li[data-id=wire] input.pick")
    page.click("li[data-id=story] input.pick")
    _wait_ready(page, "#pair")
    assert page.text_content("#pair-comparison article.side-b .text") == "text not stored"


def test_a_pair_of_stored_ids_shows_the_similarity_and_says_texts_are_not_stored(page, ui, client):
    page.goto(f"{ui}?ids=story,story-copy")
    _wait_ready(page, "#results")
    page.click("li.duplicate button.explain")
    _wait_ready(page, "#pair")
    answer = client.explain("story", "story-copy")
    assert page.text_content("#pair-summary").startswith(f"similarity {as_shown(answer.similarity)}")
    note = page.text_content("#pair-note")
    assert note.count(answer.note) == 1 and note.count("not texts") == 1  # said once, by the server
    assert "Paste JSON Lines documents with their texts" in note
    shared = page.evaluate("() => Array.from(document.querySelectorAll('#pair-counts tr')).find(row => "
                           "row.cells[0].textContent === 'shared').cells[1].textContent")
    assert shared == f"– shingles · {answer.shared_sketch_values} sketch values"  # unknown without texts, not 0


@pytest.mark.parametrize("query", ["ids=story,{long},other", "ids=story,other&threshold=2"])
def test_a_request_the_server_refuses_shows_its_message(page, ui, client, query):
    long_id = "x" * 600
    page.goto(f"{ui}?{query.format(long=long_id)}")
    _wait_ready(page, "#results")
    ids = ["story", long_id, "other"] if "long" in query else ["story", "other"]
    with pytest.raises(NearDupClientError) as refused:
        client.dedup(ids, threshold=2.0 if "threshold" in query else None)
    assert page.get_attribute("#results", "data-state") == "error"
    assert page.text_content("#results-error") == f"{refused.value.code.name}: {refused.value.details}"
    assert page.is_visible("#results-error") and page.locator("#results > li").count() == 0


def test_a_malformed_json_line_is_named_before_anything_is_sent(page, ui):
    page.goto(ui)
    page.fill("#input", '{"id": "a", "text": "one"}\n{"id": 3}')
    page.click("#run")
    page.wait_for_selector("#results-error:not([hidden])")
    assert page.text_content("#results-error") == 'BAD_INPUT: line 2: a JSON object with a string "id" is expected'


def test_a_line_that_is_not_json_is_described_as_neardup_index_describes_it(page, ui, tmp_path):
    """An unterminated string: the page says what `neardup index` says of the same line, with its number."""
    bad = '{"id": "b", "text": "a quote never closed}'
    page.goto(ui)
    page.fill("#input", '{"id": "a", "text": "one"}\n' + bad)
    page.click("#run")
    page.wait_for_selector("#results-error:not([hidden])")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "one"}\n' + bad + "\n")
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "store"), "--strict"],
                          capture_output=True, text=True)
    said = re.search(r"line 2: [^;]*", done.stderr.strip().splitlines()[-1]).group(0)  # less "; nothing was ..."
    assert said == "line 2: bad JSON at column 21: a string is not closed (its closing quote is missing)"
    assert page.text_content("#results-error") == f"BAD_INPUT: {said}"


# --- the store and a search ---------------------------------------------------------------------------------------

def test_the_store_view_shows_info(page, ui, client):
    page.goto(f"{ui}#store")
    page.wait_for_selector("#info tr")
    info = client.info()
    rows = dict(page.evaluate("() => Array.from(document.querySelectorAll('#info tr')).map(row => "
                              "[row.cells[0].textContent, row.cells[1].textContent])"))
    assert rows["Articles"] == str(info.articles) and rows["Shingle unit"] == info.sketch_config["unit"]
    assert rows["Stop-list (boilerplate shingles)"].startswith(f"{info.stoplist_size} · digest ")
    assert info.stoplist_size > 0
    assert rows["Default threshold"].startswith(f"{info.default_threshold} — ")
    source = {"learned": "learned by", "fixed": "fixed default", "set": "set by hand"}[info.default_threshold_source]
    assert source in rows["Default threshold"]
    assert rows["Default metric"] == info.default_metric


def test_a_threshold_reads_the_same_in_the_header_the_store_view_and_the_slider(page, store, tmp_path):
    """One rule for the page's numbers: a learned threshold of four decimals is not 0.537 beside 0.5375."""
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    done = subprocess.run([*NEARDUP, "configure", "--store", str(copy), "--threshold", "0.5375"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    with serving(copy) as server, _ui_process(server.target, tmp_path / "ui.log") as url:
        page.goto(url)
        page.wait_for_function("() => document.getElementById('server-line').textContent.includes('threshold')")
        assert "default threshold 0.5375 (set)" in page.text_content("#server-line")
        assert page.text_content("#threshold-value") == "0.5375"
        page.goto(f"{url}#store")
        page.wait_for_selector("#info tr")
        row = page.evaluate("() => Array.from(document.querySelectorAll('#info tr')).find(row => "
                            "row.cells[0].textContent === 'Default threshold').cells[1].textContent")
        assert row.startswith("0.5375 — ")


def test_find_similar_lists_the_servers_matches_best_first(page, ui, client):
    page.goto(f"{ui}#similar")
    page.fill("#similar-id", "story")
    page.fill("#similar-threshold", "0.3")
    page.click("#similar-run")
    _wait_ready(page, "#matches")
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#matches > li')).map(li => li.dataset.id)")
    assert shown == [match.id for match in client.find_similar("story", threshold=0.3).matches]
    assert shown == ["story-copy", "story-part"]
    _screenshot(page, "similar")
    page.fill("#similar-id", "")
    page.fill("#similar-threshold", "")
    page.fill("#similar-text", PASTED[1]["text"])
    page.click("#similar-run")
    page.wait_for_function("() => document.getElementById('matches').dataset.state === 'ready'")
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#matches > li')).map(li => li.dataset.id)")
    assert shown == [m.id for m in client.find_similar(document=Document("", text=PASTED[1]["text"])).matches]
    assert "story" in shown
    page.fill("#similar-id", "nowhere")
    page.click("#similar-run")
    page.wait_for_function("() => document.getElementById('matches').dataset.state === 'error'")
    assert page.text_content("#similar-error") == "NOT_FOUND: no article 'nowhere' is stored"


# --- the store's clusters (neardup ui --store) ----------------------------------------------------------------------

WIRE = text(article(90))
#: Near-duplicate groups of 53 (more than the 50 members the page lists of a cluster), 4, 3 and 2, and singletons.
CLUSTER_TEXTS = {
    **{f"wire-{n:02}": f"Edition {n}: " + WIRE for n in range(53)},
    **{f"story-{n}": prefix + text(STORY) for n, prefix in enumerate(["", "From the wire: ", "Reposted: ", "Via: "])},
    **{f"edit-{n}": prefix + text(article(64)) for n, prefix in enumerate(["", "Update: ", "Correction: "])},
    **{f"pair-{n}": prefix + text(article(91)) for n, prefix in enumerate(["", "Also: "])},
    **{f"single-{n}": text(article(100 + n)) for n in range(8)},
}


@pytest.fixture(scope="module")
def clustered_store(indexed_store):
    """A store made by `neardup index` and clustered by `neardup cluster`, both run in this process."""
    from neardup.cli.main import main

    location = indexed_store("ui-clusters", CLUSTER_TEXTS)
    assert main(["cluster", "--store", str(location)]) == 0
    return location


@pytest.fixture(scope="module")
def clustered_server(clustered_store):
    with serving(clustered_store) as running:
        yield running


@pytest.fixture(scope="module")
def clustered_ui(clustered_server, clustered_store, tmp_path_factory):
    """`neardup ui --store` on the clustered store, in front of its server."""
    yield from _running_ui(clustered_server.target, tmp_path_factory.mktemp("ui") / "ui.log", "--store",
                           str(clustered_store))


def _exported_clusters(store: Path) -> list[dict]:
    """`neardup clusters --export -` grouped by cluster, largest first (ties: smaller cluster id first), members in
    id order."""
    exported = subprocess.run([*NEARDUP, "clusters", "--store", str(store), "--export", "-"], capture_output=True,
                              text=True, check=True).stdout
    members: dict[int, list[str]] = {}
    for line in exported.splitlines():
        record = json.loads(line)
        assert record["cluster"] >= 0, record
        members.setdefault(record["cluster"], []).append(record["id"])
    return [{"cluster": cluster, "size": len(ids), "members": sorted(ids)}
            for cluster, ids in sorted(members.items(), key=lambda item: (-len(item[1]), item[0]))]


_CLUSTERS = """(selector) => Array.from(document.querySelectorAll(selector)).map(li => ({
  cluster: Number(li.dataset.cluster), size: Number(li.dataset.size),
  members: Array.from(li.querySelectorAll('li.member')).map(m => m.dataset.id),
  more: li.querySelector('li.more') ? li.querySelector('li.more').textContent : null}))"""


def _shown_clusters(page, selector: str = "#clusters-list > li.cluster") -> list[dict]:
    """The clusters the page lists; a cut list's members are the first 50, and it says how many more."""
    shown = page.evaluate(_CLUSTERS, selector)
    for cluster in shown:
        more = cluster.pop("more")
        assert more == (f"… and {cluster['size'] - 50} more" if cluster["size"] > 50 else None), cluster
    return shown


def _cut(clusters: list[dict]) -> list[dict]:
    return [{**cluster, "members": cluster["members"][:50]} for cluster in clusters]


def _open_store_view(page, url: str) -> None:
    page.goto(f"{url}#store")
    page.wait_for_selector("#clusters[data-state=ready], #clusters[data-state=error]", state="attached",
                           timeout=20_000)
    page.wait_for_selector("#info tr")


def test_the_store_view_lists_the_largest_clusters_the_export_has(page, clustered_ui, clustered_store):
    _open_store_view(page, clustered_ui)
    assert page.get_attribute("#clusters", "data-kind") == "clustered"
    expected = _exported_clusters(clustered_store)
    assert _shown_clusters(page) == _cut(expected[:20])
    assert [cluster["size"] for cluster in expected[:5]] == [53, 4, 3, 2, 1]  # the groups were clustered
    note = page.text_content("#clusters-note")
    assert note.startswith(f"{len(CLUSTER_TEXTS)} articles in {len(expected)} clusters (8 of one article; complete")
    _screenshot(page, "store")


def test_the_cluster_of_an_id_is_found(page, clustered_ui, clustered_store):
    _open_store_view(page, clustered_ui)
    expected = {member: cluster for cluster in _exported_clusters(clustered_store) for member in cluster["members"]}
    for doc_id in ("story-2", "wire-07", "single-3"):
        page.fill("#cluster-id", doc_id)
        page.click("#cluster-find")
        page.wait_for_function("id => document.getElementById('cluster-found').dataset.state === 'ready' && "
                               "document.getElementById('cluster-found').dataset.id === id", arg=doc_id)
        assert page.text_content("#cluster-found .found") == f"{doc_id} is in cluster {expected[doc_id]['cluster']}:"
        assert _shown_clusters(page, "#cluster-found li.cluster") == _cut([expected[doc_id]])
    page.fill("#cluster-id", "nowhere")
    page.click("#cluster-find")
    page.wait_for_function("() => document.getElementById('cluster-found').dataset.id === 'nowhere'")
    assert page.text_content("#cluster-found") == "nowhere is not stored"
    assert page.get_attribute("#cluster-found", "data-kind") == "not-stored"


def test_the_clusters_are_read_again_when_the_store_changed(page, clustered_ui, clustered_store,
                                                            clustered_server):
    """An article upserted through the server gets its cluster when written (the store is clustered); the page
    reads the clusters again since the store's generation changed."""
    from neardup_client import NearDupClient

    _open_store_view(page, clustered_ui)
    before = {cluster["cluster"]: cluster["size"] for cluster in _shown_clusters(page)}
    with NearDupClient(clustered_server.target, timeout=10) as client:
        assert client.upsert([Document("pair-2", text="Again: " + text(article(91)))]) == 1
    expected = _exported_clusters(clustered_store)
    (grown,) = [cluster for cluster in expected if "pair-2" in cluster["members"]]
    assert grown["size"] == 3 and before[grown["cluster"]] == 2
    page.reload()
    page.wait_for_selector("#clusters[data-state=ready]", state="attached", timeout=20_000)
    assert _shown_clusters(page) == _cut(expected[:20])
    status, answer = _call(clustered_ui + "api/clusters?id=pair-2")
    assert status == 200 and answer["cluster"] == grown["cluster"] and answer["members"] == grown["members"]


def test_the_clusters_api_answers_json_and_names_a_bad_parameter(clustered_ui, clustered_store):
    expected = _exported_clusters(clustered_store)
    status, answer = _call(clustered_ui + "api/clusters?top=2&members=3")
    assert status == 200 and answer["clustered"] and answer["store"] == str(clustered_store)
    assert answer["largest"] == [{**cluster, "members": cluster["members"][:3], "more": cluster["size"] - 3}
                                 for cluster in expected[:2]]
    status, answer = _call(clustered_ui + "api/clusters?top=0")
    assert (status, answer["error"]["code"]) == (400, "BAD_REQUEST") and "top" in answer["error"]["message"]
    status, answer = _call(clustered_ui + "api/clusters?id=" + "x" * 600)
    assert status == 200 and answer["stored"] is False and answer["cluster"] == -1


def test_without_store_the_view_says_how_to_show_clusters(page, ui):
    _open_store_view(page, ui)
    assert page.get_attribute("#clusters", "data-kind") == "no-store"
    assert page.text_content("#clusters-note") == ("Clusters are shown when the page is started with the server's "
                                                   "store: neardup ui --store LOCATION.")
    assert page.is_hidden("#cluster-form") and page.is_hidden("#clusters-error")
    assert page.locator("#clusters-list > li").count() == 0
    status, answer = _call(ui + "api/clusters?id=story")
    assert (status, answer["error"]["code"]) == (412, "FAILED_PRECONDITION")


def test_a_store_not_clustered_says_how_to_cluster_it(page, server, store, tmp_path):
    with _ui_process(server.target, tmp_path / "ui.log", "--store", str(store)) as url:
        _open_store_view(page, url)
        assert page.get_attribute("#clusters", "data-kind") == "not-clustered"
        assert page.text_content("#clusters-note") == (f"The store {store} is not clustered: run neardup cluster "
                                                       f"--store {store} to give its articles cluster ids.")
        status, answer = _call(url + "api/clusters?id=story")
        assert status == 200 and answer["stored"] and answer["cluster"] == -1 and not answer["clustered"]


@pytest.mark.parametrize("where", ["missing", "not-a-store"])
def test_a_store_that_cannot_be_opened_is_a_one_line_error_before_the_page_starts(server, tmp_path, where):
    location = tmp_path / where
    if where == "not-a-store":
        location.mkdir()
        (location / "notes.txt").write_text("not a store")
    port = free_port()
    done = subprocess.run([*NEARDUP, "ui", "--target", server.target, "--port", str(port), "--store",
                           str(location)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert str(location) in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(OSError):  # nothing listened
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)


def test_a_port_in_use_is_a_one_line_error_and_the_store_is_left_as_it_was(server, store, tmp_path):
    """ui/serving.py opens the store, then cannot listen: one line naming the address, exit code 1, and the store
    it opened read-only is closed again, unchanged."""
    before = sorted((path.name, path.stat().st_size) for path in Path(store).iterdir())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([*NEARDUP, "ui", "--target", server.target, "--port", str(port), "--store",
                               str(store)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done
    assert done.stdout == "" and done.stderr.strip().splitlines() == [
        f"neardup: error: cannot listen on 127.0.0.1:{port}: Address already in use (is the port in use?)"], \
        done.stderr
    assert sorted((path.name, path.stat().st_size) for path in Path(store).iterdir()) == before


# --- the JSON API without a browser -------------------------------------------------------------------------------

def _call(url: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body is not None
                                     else "GET")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, data, kind = response.status, response.read(), response.headers.get_content_type()
    except urllib.error.HTTPError as error:
        status, data, kind = error.code, error.read(), error.headers.get_content_type()
    return status, json.loads(data) if kind == "application/json" else data.decode()


def test_the_api_answers_json_and_refuses_what_a_page_of_another_site_could_send(ui, client):
    json_type = {"Content-Type": "application/json"}
    status, answer = _call(ui + "api/dedup", json.dumps({"ids": ["story", "story-copy"]}).encode(), json_type)
    assert status == 200 and answer["duplicate_of"] == [-1, 0] and answer["keep"] == ["story"]
    status, answer = _call(ui + "api/explain", json.dumps({"a": {"id": "story"}, "b": {"id": "nowhere"}}).encode(),
                           json_type)
    assert (status, answer["error"]["code"]) == (404, "NOT_FOUND")
    assert _call(ui + "api/dedup", b'{"ids": ["story"]}', {"Content-Type": "text/plain"})[0] == 400
    assert _call(ui + "api/dedup", b'not json', json_type)[1]["error"]["code"] == "BAD_REQUEST"
    assert _call(ui + "api/nothing")[0] == 404
    assert _call(ui + "api/info", headers={"Host": "attacker.example:80"})[0] == 403
    status, page_text = _call(ui)
    assert status == 200 and "/static/app.js" in page_text


def test_the_page_files_are_package_data():
    from neardup.ui import app

    for name in app.STATIC_FILES:
        assert app._static(name)  # read through importlib.resources, as an installed package reads them
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    (line,) = [line for line in pyproject.splitlines() if line.startswith('"neardup.ui" = [')]
    assert all(f'"static/*{Path(name).suffix}"' in line for name in app.STATIC_FILES), line


# --- labelling pairs (neardup ui --store S --labels PAIRS) ---------------------------------------------------------

RECORDS, _ = records_with_typos()
FIELDS_OF = {record["id"]: record["fields"] for record in RECORDS}


@pytest.fixture(scope="module")
def records_store(tmp_path_factory) -> Path:
    """Re-entered person records with typos (RECORDS.jsonl) indexed by `neardup index --fields` into an items store
    (store), in this process."""
    from neardup.cli.main import main

    root = tmp_path_factory.mktemp("ui-records")
    (root / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    corpus = write_jsonl(root / "records.jsonl", RECORDS)
    assert main(["index", str(corpus), "--store", str(root / "store"), "--fields", str(root / "schema.json")]) == 0
    return root


@pytest.fixture(scope="module")
def records_server(records_store):
    with serving(records_store / "store") as running:
        yield running


def _label_ui(records_server, records_store, answers: Path, *args: str):
    """`neardup ui --store store --labels answers.jsonl` on the records' store and server, started in the folder of
    answers, where store and records.jsonl (for --corpus in args) are links to the records' (the page shows the
    paths as given)."""
    for name in ("store", "records.jsonl"):
        (answers.parent / name).symlink_to(records_store / name)
    return _ui_process(records_server.target, answers.with_suffix(".log"), "--store", "store", "--labels",
                       answers.name, *args, cwd=answers.parent)


def _scratch_session(records_store, answers: Path) -> LabelSession:
    """The session `neardup label` would run on the store with these answers, for what the page should show."""
    with open_store(records_store / "store", readonly=True) as store:
        return LabelSession(store, answers)


_LABEL_ROWS = """() => Array.from(document.querySelectorAll('#label-comparison table.fields tbody tr')).map(row =>
  Array.from(row.children).map(cell => cell.textContent))"""


def _wait_label(page, answered: int | None = None) -> None:
    """Until the Label pairs view answered (ready or error), with `answered` answers counted when given."""
    page.wait_for_function("answered => { const box = document.getElementById('labelling'); "
                           "return box.dataset.state !== 'loading' && box.dataset.state !== 'empty' && "
                           "(answered === null || box.dataset.answered === String(answered)); }",
                           arg=answered, timeout=20_000)


def _shown_proposal(page) -> dict:
    return {"a": page.get_attribute("#labelling", "data-a"), "b": page.get_attribute("#labelling", "data-b"),
            "rows": page.evaluate(_LABEL_ROWS), "why": page.text_content("#label-why"),
            "counts": page.text_content("#label-counts")}


def _expected_proposal(proposal, counts: dict) -> dict:
    """What the page shows of a session's proposal: each field with both records' values (--corpus) and its
    similarity to three decimals."""
    a, b = FIELDS_OF[proposal.a], FIELDS_OF[proposal.b]
    rows = [[name, a.get(name, "—"), b.get(name, "—"), "—" if similarity is None else as_shown(similarity)]
            for name, similarity in proposal.similarities.items()]
    return {"a": proposal.a, "b": proposal.b, "rows": rows,
            "why": f"pair {counts['answered'] + 1} · rule similarity {as_shown(proposal.score)} · {proposal.reason}: ",
            "counts": (f"{counts['answered']} answered of {counts['pool']} sampled candidate pairs: "
                       f"{counts['duplicates']} duplicate{'' if counts['duplicates'] == 1 else 's'}, "
                       f"{counts['others']} other{'' if counts['others'] == 1 else 's'}, {counts['unsure']} unsure")}


def _assert_shows(page, session: LabelSession) -> None:
    """The page shows the pair the session proposes next, and its counts."""
    shown, expected = _shown_proposal(page), _expected_proposal(session.next(), session.counts())
    assert shown["why"].startswith(expected.pop("why")), shown["why"]
    shown.pop("why")
    assert shown == expected


def _lines(answers: Path) -> list[str]:
    return answers.read_text(encoding="utf-8").splitlines() if answers.exists() else []


def _line(a: str, b: str, duplicate: bool | None) -> str:
    return json.dumps({"a": a, "b": b, "duplicate": duplicate})


def test_the_label_view_answers_through_the_session_and_undo_drops_the_last_line(page, records_server,
                                                                                 records_store, tmp_path):
    answers = tmp_path / "answers.jsonl"
    scratch = _scratch_session(records_store, tmp_path / "scratch.jsonl")
    assert scratch.counts()["pool"] > 100
    with _label_ui(records_server, records_store, answers, "--corpus", "records.jsonl") as url:
        page.goto(f"{url}#label")
        _wait_label(page, 0)
        assert page.get_attribute("#labelling", "data-kind") == "pair"
        _assert_shows(page, scratch)
        assert not answers.exists() and page.is_disabled("#label-undo")
        written = []
        for button, duplicate in (("#label-yes", True), ("#label-no", False), ("#label-unsure", None)):
            proposal = scratch.next()
            page.click(button)
            _wait_label(page, len(written) + 1)
            written.append(_line(proposal.a, proposal.b, duplicate))
            assert _lines(answers) == written  # appended at once, as `neardup train` reads it
            scratch.answer(proposal.a, proposal.b, duplicate)
            _assert_shows(page, scratch)
            if len(written) == 2:
                _screenshot(page, "label")
        assert scratch.next().reason == "coverage"  # the fourth proposal: both reasons were shown
        # an items store has no stop-list to weigh: train is not given the corpus
        assert _call(url + "api/label")[1]["next"] == "neardup train answers.jsonl --store store"
        assert page.text_content("#label-last") == f"last answer: {proposal.a} / {proposal.b}: unsure"
        page.click("#label-undo")
        _wait_label(page, 2)
        assert _lines(answers) == written[:2]
        scratch.undo()
        _assert_shows(page, scratch)
        assert page.get_attribute("#labelling", "data-a") == proposal.a  # the undone pair is proposed again
        page.reload()  # resumes: the same pair and counts, as a new session on the file proposes
        _wait_label(page, 2)
        _assert_shows(page, scratch)
        _assert_shows(page, _scratch_session(records_store, answers))
    assert answers.read_bytes() == "".join(line + "\n" for line in written[:2]).encode()


def test_the_label_keys_answer_and_undo(page, records_server, records_store, tmp_path):
    answers = tmp_path / "answers.jsonl"
    scratch = _scratch_session(records_store, tmp_path / "scratch.jsonl")
    with _label_ui(records_server, records_store, answers) as url:  # no --corpus: ids and similarities only
        page.goto(f"{url}#label")
        _wait_label(page, 0)
        assert "--corpus" in page.text_content("#label-note")
        assert page.text_content("#label-comparison table.fields tbody tr[data-field=name] td.value") == "—"
        written = []
        for key, duplicate in (("y", True), ("n", False), ("u", None), ("y", True)):
            proposal = scratch.next()
            page.keyboard.press(key)
            _wait_label(page, len(written) + 1)
            written.append(_line(proposal.a, proposal.b, duplicate))
            scratch.answer(proposal.a, proposal.b, duplicate)
            assert _lines(answers) == written
            assert (page.get_attribute("#labelling", "data-a"), page.get_attribute("#labelling", "data-b")) == \
                   scratch.next()[:2]
        page.keyboard.press("b")
        _wait_label(page, 3)
        assert _lines(answers) == written[:3]
        undone = scratch.undo()
        page.keyboard.press("Alt+n")  # a key with a modifier is the browser's, not an answer
        page.keyboard.press("x")
        page.keyboard.press("u")
        _wait_label(page, 4)
        assert _lines(answers) == written[:3] + [_line(undone[0], undone[1], None)]


def test_the_label_view_says_when_every_sampled_pair_is_answered(page, records_server, records_store, tmp_path):
    answers = tmp_path / "answers.jsonl"
    pool = _scratch_session(records_store, tmp_path / "scratch.jsonl").pool
    lines = [_line(a, b, False) for a, b in zip(pool.a, pool.b)]
    answers.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with _label_ui(records_server, records_store, answers) as url:
        page.goto(f"{url}#label")
        _wait_label(page, len(lines))
        assert page.get_attribute("#labelling", "data-kind") == "done"
        assert page.text_content("#label-note") == (
            f"Every one of the {len(lines)} sampled candidate pairs is answered. Next: neardup train answers.jsonl "
            "--store store.")
        assert page.is_hidden("#label-pair") and page.is_hidden("#label-yes") and page.is_hidden("#label-error")
        page.keyboard.press("y")  # nothing to answer: nothing written
        page.click("#label-undo")  # the last answer dropped: its pair is the only one left to propose
        _wait_label(page, len(lines) - 1)
        assert _lines(answers) == lines[:-1]
        assert page.get_attribute("#labelling", "data-kind") == "pair"
        assert (page.get_attribute("#labelling", "data-a"), page.get_attribute("#labelling", "data-b")) == \
               (pool.a[-1], pool.b[-1])


def test_the_label_api_takes_only_the_pair_proposed_now_as_json(records_server, records_store, tmp_path):
    answers = tmp_path / "answers.jsonl"
    json_type = {"Content-Type": "application/json"}
    with _label_ui(records_server, records_store, answers) as url:
        status, view = _call(url + "api/label")
        assert status == 200 and view["counts"]["answered"] == 0 and view["last"] is None
        first = view["proposal"]
        assert [field["name"] for field in first["fields"]] == ["name", "address", "postcode"]
        assert view["corpus"] is None and first["found"] == {"a": False, "b": False}
        pair = {"a": first["a"], "b": first["b"]}
        for body, headers, code in (
                ({**pair, "duplicate": True}, {"Content-Type": "text/plain"}, "BAD_REQUEST"),  # not JSON: no CSRF
                ({**pair, "duplicate": "yes"}, json_type, "BAD_REQUEST"),
                (pair, json_type, "BAD_REQUEST"),  # no answer given
                ({"a": first["b"], "b": "p0", "duplicate": True}, json_type, "ABORTED")):  # not the pair proposed
            status, answer = _call(url + "api/label", json.dumps(body).encode(), headers)
            assert answer["error"]["code"] == code, answer
            assert status == {"BAD_REQUEST": 400, "ABORTED": 409}[code]
        assert not answers.exists()
        assert _call(url + "api/label", json.dumps(pair).encode(),
                     {**json_type, "Host": "attacker.example"})[0] == 403
        status, view = _call(url + "api/label", json.dumps({**pair, "duplicate": False}).encode(), json_type)
        assert status == 200 and view["answered"] == {**pair, "duplicate": False} and view["counts"]["others"] == 1
        assert _lines(answers) == [_line(first["a"], first["b"], False)]
        # the same answer again (a second window): the pair is no longer the one proposed, nothing is written
        status, answer = _call(url + "api/label", json.dumps({**pair, "duplicate": True}).encode(), json_type)
        assert (status, answer["error"]["code"]) == (409, "ABORTED")
        assert _lines(answers) == [_line(first["a"], first["b"], False)]
        status, view = _call(url + "api/label/undo", b"{}", json_type)
        assert status == 200 and view["undone"] == {**pair, "duplicate": False} and view["proposal"] == first
        status, view = _call(url + "api/label/undo", b"{}", json_type)
        assert status == 200 and view["undone"] is None and answers.read_bytes() == b""
        assert _call(url + "api/label/undo")[0] == 405  # a GET


def test_without_labels_the_view_says_how_to_start_it(page, ui):
    page.goto(f"{ui}#label")
    _wait_label(page)
    assert page.get_attribute("#labelling", "data-kind") == "unavailable"
    assert page.text_content("#label-error") == (
        "FAILED_PRECONDITION: this page was started without --labels: start `neardup ui` with --store LOCATION (the "
        "server's store) --labels PAIRS (the answers file) to label pairs, and --corpus JSONL to see the texts or the "
        "records' fields")
    assert page.is_visible("#label-error")
    assert page.is_hidden("#label-yes") and page.is_hidden("#label-undo") and page.is_hidden("#label-pair")
    status, answer = _call(ui + "api/label")
    assert (status, answer["error"]["code"]) == (412, "FAILED_PRECONDITION")
    status, answer = _call(ui + "api/label", b'{"a": "x", "b": "y", "duplicate": true}',
                           {"Content-Type": "application/json"})
    assert (status, answer["error"]["code"]) == (412, "FAILED_PRECONDITION")


def test_a_text_pair_is_shown_side_by_side_with_explains_highlights_and_answered(page, server, store, tmp_path):
    """On a store of texts the view shows the pair the session proposes, both texts from --corpus highlighted with
    the spans Explain answers for them, and its keys append the answer."""
    answers = tmp_path / "answers.jsonl"
    with open_store(store, readonly=True) as opened:
        scratch = LabelSession(opened, tmp_path / "scratch.jsonl")
        proposal = scratch.next()
        explained = scratch.explain(proposal, {doc_id: {"text": TEXTS[doc_id]} for doc_id in TEXTS}).explanation
    with _ui_process(server.target, tmp_path / "ui.log", "--store", str(store), "--labels", str(answers),
                     "--corpus", str(store.parent / "corpus.jsonl")) as url:
        page.goto(f"{url}#label")
        _wait_label(page, 0)
        assert page.get_attribute("#labelling", "data-kind") == "pair"
        assert (page.get_attribute("#labelling", "data-a"), page.get_attribute("#labelling", "data-b")) == \
               (proposal.a, proposal.b)
        assert page.is_hidden("#label-comparison table.fields") and page.is_visible("#label-comparison .texts")
        assert page.text_content("#label-why").startswith(
            f"pair 1 · containment similarity {as_shown(proposal.score)} · {proposal.reason}: ")
        for side, doc_id, spans in (("a", proposal.a, explained.a), ("b", proposal.b, explained.b)):
            assert page.text_content(f"#label-comparison article.side-{side} h3") == doc_id
            shown, highlighted = _highlighted(page, f"#label-comparison article.side-{side} .text")
            assert shown == TEXTS[doc_id]
            assert highlighted == {name: [tuple(span) for span in getattr(spans, name)]
                                   for name in ("shared", "sketch_shared", "boilerplate")}
        assert highlighted["shared"]
        _screenshot(page, "label-texts")
        page.keyboard.press("n")
        _wait_label(page, 1)
        assert _lines(answers) == [_line(proposal.a, proposal.b, False)]
        status, view = _call(url + "api/label")
        assert status == 200 and view["proposal"]["fields"] == [] and view["proposal"]["metric"] == "containment"
        train = f"neardup train {answers} --store {store} --corpus {store.parent / 'corpus.jsonl'}"
        assert view["next"] == train and page.text_content("#label-file").endswith(f"Next: {train}.")
        assert view["proposal"]["explain"]["a"]["id"] == view["proposal"]["a"]
    # the start says that it reads the corpus, which on a large one takes a while
    assert f"labels: sampling the candidate pairs of {store} and sketching {store.parent / 'corpus.jsonl'} under the " \
        "other stop-lists" in (tmp_path / "ui.log").read_text()


@pytest.mark.parametrize("args, code, says", [
    (["--labels", "answers.jsonl"], 2, "--labels needs --store"),
    (["--store", "STORE", "--labels", "nowhere/answers.jsonl"], 1, "cannot write --labels"),
    (["--store", "STORE", "--labels", "answers.jsonl", "--corpus", "nowhere.jsonl"], 1, "cannot read --corpus"),
    (["--store", "STORE", "--labels", "bad.jsonl"], 1, "bad.jsonl line 1"),
    (["--store", "STORE", "--labels", "elsewhere.jsonl"], 1, "elsewhere.jsonl are not stored in"),
])
def test_what_keeps_the_label_view_from_starting_is_a_one_line_error(records_server, records_store, tmp_path,
                                                                     args, code, says):
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "elsewhere.jsonl").write_text('{"a": "another-store-1", "b": "another-store-2", "duplicate": true}\n')
    args = [arg.replace("STORE", str(records_store / "store")) for arg in args]
    done = subprocess.run([*NEARDUP, "ui", "--target", records_server.target, "--port", str(free_port()), *args],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == code, done
    # one error line, the last (after the log of what was read before it)
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == [done.stderr.splitlines()[-1]] and says in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "answers.jsonl").exists()


@pytest.mark.parametrize("attempt", range(3))
def test_sigterm_while_requests_arrive_stops_the_page_cleanly(server, store, tmp_path, attempt):
    """SIGTERM lands wherever the page is: between requests, or while it starts a request's thread (where an
    exception raised by the signal's handler used to be caught by the HTTP server and the page kept serving).
    Under a stream of requests the page still stops within seconds, exit code 0, no traceback."""
    log = tmp_path / "ui.log"
    running = _running_ui(server.target, log, "--store", str(store))
    url = next(running)
    asking = threading.Event()

    def ask() -> None:
        while not asking.is_set():
            try:
                urllib.request.urlopen(url + "api/clusters", timeout=2).read()
            except (OSError, http.client.HTTPException):  # the page stopping mid-answer
                pass

    askers = [threading.Thread(target=ask) for _ in range(4)]
    for asker in askers:
        asker.start()
    time.sleep(0.3 + 0.1 * attempt)
    started = time.monotonic()
    try:
        next(running, None)  # SIGTERM, then waits for the exit (code 0, no traceback: asserted there)
    finally:
        asking.set()
        for asker in askers:
            asker.join()
    assert time.monotonic() - started < 10


# --- each kind of store in its own terms, at desktop and phone widths (issue 39) ------------------------------------

PHONE, DESKTOP = 390, 1280
WIDTHS = pytest.mark.parametrize("width", [DESKTOP, PHONE], ids=["desktop", "phone"])


@pytest.fixture
def sized(browser):
    """sized(width): a page of that width (the phone's: 390 px), checked for script errors as `page` is."""
    contexts, errors = [], []

    def make(width: int):
        context = browser.new_context(viewport={"width": width, "height": 844 if width == PHONE else 900})
        contexts.append(context)
        opened = context.new_page()
        opened.on("pageerror", lambda error: errors.append(str(error)))
        return opened

    yield make
    for context in contexts:
        context.close()
    assert errors == [], errors


@pytest.fixture(scope="module")
def corpus_ui(server, store, tmp_path_factory):
    """`neardup ui --store --corpus` on the module's store of texts: titles, texts of stored ids."""
    yield from _running_ui(server.target, tmp_path_factory.mktemp("ui") / "ui.log", "--store", str(store),
                           "--corpus", str(store.parent / "corpus.jsonl"))


@pytest.fixture(scope="module")
def records_ui(records_server, records_store, tmp_path_factory):
    """`neardup ui --store --corpus` on the items store of re-entered records."""
    yield from _running_ui(records_server.target, tmp_path_factory.mktemp("ui") / "ui.log", "--store",
                           str(records_store / "store"), "--corpus", str(records_store / "records.jsonl"))


def _title(value: str) -> str:
    """A title as the page shows it (ui/corpus.py): white space collapsed, at most 120 characters."""
    shown = " ".join(value.split())
    return shown if len(shown) <= 120 else shown[:119] + "…"


def _titles(page, selector: str) -> dict[str, str]:
    page.wait_for_selector(f"{selector}[data-titles=ready]", state="attached", timeout=20_000)
    return dict(page.evaluate("(selector) => Array.from(document.querySelectorAll(selector + ' .doc')).map(doc => "
                              "[doc.querySelector('a.id').textContent, doc.querySelector('.title').textContent])",
                              selector))


@WIDTHS
def test_an_items_store_is_described_by_its_fields_in_the_header_and_the_store_view(sized, records_ui,
                                                                                   records_server, width):
    page = sized(width)
    with NearDupClientFor(records_server) as client:
        info = client.info()
    page.goto(f"{records_ui}#store")
    page.wait_for_selector("#info tr")
    header = page.text_content("#server-line")
    assert info.description.startswith("items: 3 fields (name: text word:1 k=16 jaccard, weight ")
    assert f" · {info.description} · " in header and "word:3" not in header
    rows = dict(page.evaluate("() => Array.from(document.querySelectorAll('#info tr')).map(row => "
                              "[row.cells[0].textContent, row.cells[1].textContent])"))
    assert rows["Configuration"] == info.description and rows["Rules (a pair must match on all fields of one)"] == \
        "name · address · postcode"
    assert rows["Field name"] == "text, word:1 shingles, k=16, jaccard"
    assert rows["Field postcode"] == "exact, normalised as text"
    # the weights said are those the server weighs by (learned by `neardup index`), not the schema's 1
    assert "postcode: exact (text), weight 1.4158)" in info.description
    for text_only in ("Shingle unit", "K (sketch values kept)", "Language", "Stop-list (boilerplate shingles)"):
        assert text_only not in rows
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width == DESKTOP:
        _screenshot(page, "store-items")


def test_a_store_of_texts_keeps_its_terms_in_the_header(page, ui, client):
    page.goto(ui)
    page.wait_for_function("() => document.getElementById('server-line').textContent.includes('threshold')")
    assert "bottomk: unit=word:3 k=128 lang=english min_word_len=1" in page.text_content("#server-line")
    assert client.info().description == "bottomk: unit=word:3 k=128 lang=english min_word_len=1"


@contextlib.contextmanager
def NearDupClientFor(running):
    from neardup_client import NearDupClient

    with NearDupClient(running.target, timeout=10) as client:
        yield client


def _field_rows(page, selector: str) -> list[list[str]]:
    return page.evaluate("(selector) => Array.from(document.querySelectorAll(selector + ' table.fields tbody tr'))"
                         ".map(row => Array.from(row.children).map(cell => cell.textContent))", selector)


@WIDTHS
def test_compare_on_an_items_store_shows_the_pair_field_by_field(sized, records_ui, records_server, width):
    """The compare button of a duplicate on an items store: the pair's score and each field's values (--corpus),
    similarity and weight, as Explain answers them; in the same piece the Label pairs view shows a pair in."""
    page = sized(width)
    ids = ["p3", "p3-again", "p7", "p7-again", "p40"]
    page.goto(f"{records_ui}?ids={','.join(ids)}")
    _wait_ready(page, "#results")
    with NearDupClientFor(records_server) as client:
        dedup = client.dedup(ids)
        (position,) = [q for q, of in enumerate(dedup.duplicate_of) if of >= 0 and ids[q] == "p3-again"]
        explained = client.explain(ids[dedup.duplicate_of[position]], "p3-again")
    page.click("li.duplicate[data-id=p3-again] button.explain")
    _wait_ready(page, "#pair")
    assert page.get_attribute("#pair", "data-state") == "ready" and page.is_hidden("#pair-error")
    assert page.text_content("#pair-summary") == (f"similarity {as_shown(explained.similarity)} (fields): "
                                                  f"near-duplicates at threshold {as_shown(explained.threshold)}")
    a, b = FIELDS_OF["p3"], FIELDS_OF["p3-again"]
    assert _field_rows(page, "#pair-comparison") == [
        [field.name, a.get(field.name, "—"), b.get(field.name, "—"),
         "—" if field.similarity is None else as_shown(field.similarity), as_shown(field.weight)]
        for field in explained.fields]
    assert page.is_visible("#pair-comparison table.fields") and page.is_hidden("#pair-comparison .texts")
    # the one piece of both views: the label view's pair is built from the same template
    assert page.evaluate("() => document.getElementById('comparison-template').content.querySelector('table.fields')"
                         " !== null && document.querySelectorAll('#view-label .comparison, #pair .comparison')"
                         ".length === 2")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    _screenshot(page, "pair-items" if width == DESKTOP else "phone-pair-items")


@WIDTHS
def test_compare_in_find_similar_opens_the_pair_under_the_search(sized, corpus_ui, client, width):
    page = sized(width)
    page.goto(f"{corpus_ui}#similar")
    page.fill("#similar-id", "story")
    page.fill("#similar-threshold", "0.3")
    page.click("#similar-run")
    _wait_ready(page, "#matches")
    page.click("#matches li[data-id=story-copy] button.explain")
    _wait_ready(page, "#pair")
    assert page.evaluate("location.hash") == "#similar"  # no jump to the Result set view
    assert page.is_visible("#view-similar") and page.is_hidden("#view-results")
    assert page.evaluate("document.getElementById('pair').parentElement.id") == "view-similar"
    assert page.is_visible("#pair") and page.is_visible("#matches li[data-id=story-copy]")
    answer = client.explain(Document("story", text=TEXTS["story"]), Document("story-copy", text=TEXTS["story-copy"]))
    assert page.text_content("#pair-summary").startswith(f"similarity {as_shown(answer.similarity)} ")
    # the stored ids' texts are read from --corpus: the passages they share are highlighted
    shown, spans = _highlighted(page, "#pair-comparison article.side-b .text")
    assert shown == TEXTS["story-copy"] and spans["shared"] == answer.b.shared != []
    page.click("#nav-results")
    assert page.is_hidden("#pair")  # it belongs to the search
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_results_show_titles_from_the_corpus_and_link_to_find_similar(page, corpus_ui, client):
    page.goto(f"{corpus_ui}?ids={','.join(IDS)}")
    _wait_ready(page, "#results")
    assert _titles(page, "#results") == {doc_id: _title(TEXTS[doc_id]) for doc_id in IDS if doc_id in TEXTS} | \
        {"nowhere": ""}
    page.click("li[data-id=story-copy] > .row a.id")
    _wait_ready(page, "#matches")
    assert page.evaluate("location.hash") == "#similar?id=story-copy" and page.input_value("#similar-id") == \
        "story-copy"
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#matches > li')).map(li => li.dataset.id)")
    assert shown == [match.id for match in client.find_similar("story-copy").matches] and shown
    assert _titles(page, "#matches") == {doc_id: _title(TEXTS[doc_id]) for doc_id in shown}


def test_cluster_members_show_titles_and_compare_with_the_first(page, sized, clustered_server, clustered_store,
                                                                tmp_path):
    with _ui_process(clustered_server.target, tmp_path / "ui.log", "--store", str(clustered_store), "--corpus",
                     str(clustered_store.parent / "corpus.jsonl")) as url:
        _open_store_view(page, url)
        titles = _titles(page, "#clusters")
        assert titles["story-1"] == _title(CLUSTER_TEXTS["story-1"]) and len(titles) > 50
        page.click("li.member[data-id=story-2] button.explain")
        _wait_ready(page, "#pair")
        assert page.evaluate("location.hash") == "#store"
        assert page.text_content("#pair-comparison article.side-a h3") == "story-0"
        assert page.text_content("#pair-comparison article.side-b h3") == "story-2"
        assert _highlighted(page, "#pair-comparison article.side-b .text")[0] == CLUSTER_TEXTS["story-2"]
        phone = sized(PHONE)  # 53 members with titles and their compare buttons, a pair under them: on a phone
        _open_store_view(phone, url)
        _titles(phone, "#clusters")
        phone.click("li.member[data-id=wire-03] button.explain")
        _wait_ready(phone, "#pair")
        _fits(phone, PHONE, "clusters and a pair")


def test_an_items_records_title_is_its_name(page, records_ui):
    page.goto(f"{records_ui}?ids=p3,p3-again,p40")
    _wait_ready(page, "#results")
    assert _titles(page, "#results") == {doc_id: FIELDS_OF[doc_id]["name"] for doc_id in ("p3", "p3-again", "p40")}


def test_the_titles_api_answers_what_the_corpus_has(corpus_ui, ui):
    json_type = {"Content-Type": "application/json"}
    status, answer = _call(corpus_ui + "api/titles", json.dumps({"ids": ["story", "nowhere"]}).encode(), json_type)
    assert status == 200 and answer["titles"] == {"story": _title(TEXTS["story"])}
    status, answer = _call(ui + "api/titles", json.dumps({"ids": ["story"]}).encode(), json_type)
    assert status == 200 and answer == {"corpus": None, "titles": {}}
    status, answer = _call(corpus_ui + "api/titles", b'{"ids": "story"}', json_type)
    assert (status, answer["error"]["code"]) == (400, "BAD_REQUEST")


_OVERFLOW = """(width) => {
  const wide = [];
  for (const element of document.querySelectorAll('button, input, select, textarea, a, .doc, table, .legend mark')) {
    const box = element.getBoundingClientRect();
    if (box.width && (box.right > width + 0.5 || box.left < -0.5)) wide.push(element.id || element.className ||
                                                                               element.tagName);
  }
  const broken = Array.from(document.querySelectorAll('.doc a.id, h3.id, th.id'))
    .filter(id => id.getClientRects().length > 1 || id.getBoundingClientRect().height > 1.6 *
            parseFloat(getComputedStyle(id).lineHeight || getComputedStyle(id).fontSize))
    .map(id => id.textContent);
  return {scroll: document.documentElement.scrollWidth, wide, broken};
}"""

_PLACEHOLDER_FITS = """() => {
  const input = document.getElementById('similar-threshold');
  const style = getComputedStyle(input);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return context.measureText(input.placeholder).width <= room;
}"""


def _fits(page, width: int, where: str) -> None:
    found = page.evaluate(_OVERFLOW, width)
    assert found["scroll"] <= width and found["wide"] == [] and found["broken"] == [], (where, found)


@pytest.mark.parametrize("kind", ["texts", "items"])
def test_every_view_fits_a_phone(sized, corpus_ui, records_ui, kind):
    """At 390 px: no sideways scroll in any view, with results, a pair, matches and clusters shown; no button or
    field past the edge; no id cut across lines; the threshold's placeholder whole."""
    page = sized(PHONE)
    url, ids, pair = (corpus_ui, IDS, "li.duplicate button.explain") if kind == "texts" else \
        (records_ui, ["p3", "p3-again", "p7", "p7-again", "p40"], "li.duplicate button.explain")
    long_id = "an-identifier-of-a-result-far-longer-than-a-phone-is-wide-2026-11-29"
    page.goto(f"{url}?ids={','.join(ids + [long_id])}")
    _wait_ready(page, "#results")
    _fits(page, PHONE, "results")
    page.click(pair)
    _wait_ready(page, "#pair")
    _fits(page, PHONE, "results and pair")
    page.goto(f"{url}#similar?id={ids[0]}")
    _wait_ready(page, "#matches")
    assert page.evaluate(_PLACEHOLDER_FITS)
    page.click("#matches li button.explain")
    _wait_ready(page, "#pair")
    _fits(page, PHONE, "similar and pair")
    _open_store_view(page, url)
    _fits(page, PHONE, "store")
    page.goto(f"{url}#label")
    _wait_label(page)
    _fits(page, PHONE, "label")


def test_the_label_view_fits_a_phone(sized, records_server, records_store, tmp_path):
    page = sized(PHONE)
    with _label_ui(records_server, records_store, tmp_path / "answers.jsonl", "--corpus", "records.jsonl") as url:
        page.goto(f"{url}#label")
        _wait_label(page, 0)
        assert page.get_attribute("#labelling", "data-kind") == "pair"
        _fits(page, PHONE, "label")


# --- a server that does not answer (issue 39) -----------------------------------------------------------------------

def test_an_unreachable_target_is_said_at_start_and_on_the_page_as_the_cli_says_it(page, tmp_path):
    target = "127.0.0.1:1"
    hint = f"is `neardup serve` running on {target}?"
    log = tmp_path / "ui.log"
    with _ui_process(target, log, "--connect-timeout", "1") as url:
        page.goto(f"{url}?ids=a,b")
        _wait_ready(page, "#results")
        assert page.get_attribute("#results", "data-state") == "error"
        said = page.text_content("#results-error")
        assert said.startswith("UNAVAILABLE: ") and said.endswith(hint)
        assert _call(url)[0] == 200  # the page keeps serving
    warning = [line for line in log.read_text().splitlines() if "warning" in line]
    assert len(warning) == 1 and warning[0].startswith("neardup ui: warning: UNAVAILABLE: ") and \
        warning[0].endswith(hint)
    done = subprocess.run([*NEARDUP, "dedup", "a", "b", "--target", target, "--connect-timeout", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.strip().endswith(hint)
