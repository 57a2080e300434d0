"""What a snapshot sees while others write, for every backend (store/base.py): one committed state, never a mix.
A write committed during a long read is not seen at all (LMDB: the read transaction keeps its state) or makes the
read raise StoreChanged, and read_consistently reads again and sees the write whole (Redis); a write during every
attempt is the caller's StoreChanged after READ_ATTEMPTS of them."""
from __future__ import annotations

import pytest

from neardup.core.encoding import encode_sketch
from neardup.core.errors import StoreChanged
from neardup.core.sketch_config import SketchConfig
from neardup.store import READ_ATTEMPTS, create_store, open_store, read_consistently

K = SketchConfig().k
ARTICLES = 40


def sketch(number: int, version: int) -> bytes:
    """Article `number`'s sketch at `version`: values of its own, none shared with another article or version."""
    return encode_sketch([version * 1_000_000 + number * 100 + value for value in range(20)])


def before() -> dict[str, bytes]:
    return {f"d{n}": sketch(n, 1) for n in range(ARTICLES)}


def after() -> dict[str, bytes]:
    """The state the batch below leaves: every article rewritten, d0 deleted, n0 added."""
    state = {f"d{n}": sketch(n, 2) for n in range(1, ARTICLES)}
    state["n0"] = sketch(ARTICLES, 2)
    return state


def commit_the_batch(writer) -> None:
    """One batch of another writer (another connection; on LMDB the same environment, as another process's
    commit is the same to a reader): replace, delete and add."""
    writer.put_many([*after().items()])
    writer.delete_many(["d0"])


@pytest.fixture
def stores(store_location):
    """(the reader's store holding `before()`, a writer of the same store)."""
    with create_store(store_location, SketchConfig(), []) as store:
        store.put_many(list(before().items()))
        if store.keeps_older_states:  # one LMDB environment per process
            yield store, store
            return
        with open_store(store_location) as writer:
            yield store, writer


def read_all(snapshot, during=lambda: None) -> dict:
    """A long read: half the sketches, then `during()`, then the rest, every article by scan, and the postings of
    d1's old sketch and n0's new one."""
    ids = sorted(set(before()) | set(after()))
    half = len(ids) // 2
    found = snapshot.sketches(ids[:half])
    during()
    found += snapshot.sketches(ids[half:])
    sketches = {doc_id: stored[1] for doc_id, stored in zip(ids, found) if stored is not None}
    scanned = {doc_id: stored for _, doc_id, stored in snapshot.scan()}
    docno_of = {doc_id: docno for docno, doc_id, _ in snapshot.scan()}
    holders = {name: {doc_id for doc_id, docno in docno_of.items()
                      if docno in set(snapshot.postings(query).docno.tolist())}
               for name, query in (("d1 v1", sketch(1, 1)), ("n0 v2", sketch(ARTICLES, 2)))}
    return {"sketches": sketches, "scan": scanned, "holders": holders}


def whole(state: dict[str, bytes]) -> dict:
    """What read_all reads of a store in this state."""
    return {"sketches": state, "scan": state,
            "holders": {"d1 v1": {"d1"} if state["d1"] == sketch(1, 1) else set(),
                        "n0 v2": {"n0"} if "n0" in state else set()}}


def test_a_write_committed_during_a_long_read_is_not_seen_or_read_again_whole(stores):
    store, writer = stores
    attempts = []

    def read(snapshot):
        attempts.append(snapshot)
        return read_all(snapshot, during=lambda: commit_the_batch(writer) if len(attempts) == 1 else None)

    seen = read_consistently(store, read)
    assert seen in (whole(before()), whole(after()))  # never a mix
    if store.keeps_older_states:
        assert (seen, len(attempts)) == (whole(before()), 1)  # not seen at all
    else:
        assert (seen, len(attempts)) == (whole(after()), 2)  # read again, and seen whole
    assert read_consistently(store, read_all) == whole(after())  # the next read sees it


def test_each_attempt_gets_the_generation_read_before_its_snapshot(stores):
    """with_generation: the generation handed to an attempt is never newer than what its snapshot sees, so a
    catch-up from it misses no write: after a write during the first attempt, the second attempt (Redis) gets
    the new generation; LMDB's one attempt the old one, with the old state."""
    store, writer = stores
    before_write = store.generation()
    handed = []

    def read(snapshot, generation):
        handed.append(generation)
        return read_all(snapshot, during=lambda: commit_the_batch(writer) if len(handed) == 1 else None)

    seen = read_consistently(store, read, with_generation=True)
    if store.keeps_older_states:
        assert (handed, seen) == ([before_write], whole(before()))
    else:
        assert (handed, seen) == ([before_write, store.generation()], whole(after()))
        assert handed[1] > before_write


def test_a_write_during_every_attempt_is_the_callers_store_changed_after_the_attempts(stores):
    store, writer = stores
    attempts = []

    def read(snapshot):
        attempts.append(snapshot)
        version = len(attempts) + 1
        return read_all(snapshot, during=lambda: writer.put_many([("d1", sketch(1, version))]))

    if store.keeps_older_states:
        assert read_consistently(store, read) == whole(before())
        assert len(attempts) == 1
    else:
        with pytest.raises(StoreChanged, match="changed during the read"):
            read_consistently(store, read)
        assert len(attempts) == READ_ATTEMPTS


def test_a_snapshot_that_sees_no_write_is_read_once_and_errors_are_the_callers(stores):
    store, _ = stores
    attempts = []

    def read(snapshot):
        attempts.append(snapshot)
        return read_all(snapshot)

    assert read_consistently(store, read) == whole(before()) and len(attempts) == 1

    def fails(snapshot):
        attempts.append(snapshot)
        raise KeyError("not a store error")

    with pytest.raises(KeyError):
        read_consistently(store, fails)
    assert len(attempts) == 2  # only StoreChanged is read again
