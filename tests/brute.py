"""Written-out references: what an answer must be, computed the slow, obvious way with reference.py's definitions
over every stored sketch, and a store's postings rebuilt from its sketches."""
from __future__ import annotations

import struct
from pathlib import Path

import lmdb

from neardup.core import reference
from neardup.core.encoding import decode_sketch
from neardup.core.reference import MIN_EVIDENCE
from neardup.runtime.similar_search import Match
from neardup.store import is_redis, open_store
from neardup.store.buckets import BUCKET_BITS
from sketches import K


# --- searches and pairs ---------------------------------------------------------------------------------------------

def scored(corpus: dict[str, list[int]], query: list[int], exclude: str | None, metric: str,
           k: int = K) -> list[Match]:
    """Every article of corpus but exclude that shares a compared value with query, with its similarity, best first
    (then by id): what exhaustive keeps at any threshold, computed once for all of them."""
    found = [Match(doc_id, reference.similarity(query, values, k, metric)) for doc_id, values in corpus.items()
             if doc_id != exclude]
    return sorted((match for match in found if match.similarity > 0), key=lambda match: (-match.similarity, match.id))


def reaching(matches: list[Match], threshold: float) -> list[Match]:
    """The scored matches that are near-duplicates at the threshold: similarity at or above it, any shared value
    at or below 0 (reference.is_duplicate decides the same by its merge: tests/core/test_kernel.py)."""
    return [match for match in matches if match.similarity >= threshold]


def exhaustive(corpus: dict[str, list[int]], query: list[int], exclude: str | None, threshold: float, metric: str,
               k: int = K) -> list[Match]:
    """Every article of corpus but exclude that is a near-duplicate of query, best first (then by id)."""
    return reaching(scored(corpus, query, exclude, metric, k), threshold)


def exhaustive_hamming(fingerprints: dict[str, int], query: int, threshold: float,
                       leave_out: str = "") -> list[tuple[str, float]]:
    """Every simhash fingerprint but leave_out's within the threshold's Hamming distance of query, as (id,
    similarity), best first (then by id)."""
    most = reference.max_distance(threshold)
    found = [(doc_id, reference.hamming_similarity(query, value)) for doc_id, value in fingerprints.items()
             if doc_id != leave_out and reference.hamming(query, value) <= most]
    return sorted(found, key=lambda match: (-match[1], match[0]))


def stored_in_docno_order(store_path: Path) -> list[tuple[str, list[int]]]:
    with open_store(store_path, readonly=True) as store, store.snapshot() as snapshot:
        return [(doc_id, decode_sketch(sketch)) for _, doc_id, sketch in snapshot.scan()]


def exhaustive_pairs(store_path: Path, metric: str, threshold: float) -> dict[tuple[str, str], float]:
    """Every pair of stored articles that reaches the threshold, (earlier docno, later docno) → similarity."""
    with open_store(store_path, readonly=True) as store:
        k = store.config.k
    articles = stored_in_docno_order(store_path)
    pairs = {}
    for i, (a, sketch_a) in enumerate(articles):
        for b, sketch_b in articles[i + 1:]:
            similarity = reference.similarity(sketch_a, sketch_b, k, metric)
            if similarity > 0 and similarity >= threshold:  # as reaching(): reference.is_duplicate's decision
                pairs[a, b] = similarity
    return pairs


# --- a store's postings, rebuilt from its sketches ---------------------------------------------------------------

def raw_parts(path) -> dict[bytes, dict[bytes, bytes]]:
    """The bytes a store holds, as the backend keeps them: sketches, docnos, ids and postings, key → value."""
    names = (b"sketches", b"docnos", b"ids", b"postings")
    if is_redis(path):
        with open_store(path, readonly=True) as store:
            parts = {name: {} for name in names}
            # a cluster store's shards (their numbers never meet; a bucket's entries are spread over them)
            for key_space in getattr(store, "_shards", [store]):
                client, keys = key_space._client, key_space._keys
                for name in names[:3]:
                    parts[name].update(client.hgetall(getattr(keys, name.decode())))
                prefix = keys.buckets([b""])[0]
                bucket_keys = sorted(client.scan_iter(match=prefix + b"*", count=1000))
                for key, value in zip(bucket_keys, client.mget(bucket_keys) if bucket_keys else []):
                    bucket = key[len(prefix):]
                    parts[b"postings"][bucket] = parts[b"postings"].get(bucket, b"") + value
            return parts
    with lmdb.open(str(path), readonly=True, max_dbs=7, lock=False) as env:
        dbs = {name: env.open_db(name, create=False) for name in names}
        with env.begin() as txn:
            return {name: dict(txn.cursor(db=db)) for name, db in dbs.items()}


def read_index(path) -> tuple[dict[bytes, int], dict[int, bytes], set[tuple[int, int, bool]]]:
    """The raw index of a store: id → docno, docno → id, and every posting as (value, docno, the article's
    length when it is under MIN_EVIDENCE values, else 0)."""
    parts = raw_parts(path)
    docnos = {key: struct.unpack("<I", value)[0] for key, value in parts[b"docnos"].items()}
    ids = {struct.unpack(">I", key)[0]: value for key, value in parts[b"ids"].items()}
    postings = set()
    for key, value in parts[b"postings"].items():
        assert value and len(value) % 6 == 0, "an empty or torn bucket"
        bucket = struct.unpack(">I", key)[0]
        for at in range(0, len(value), 6):
            tag, docno = struct.unpack("<HI", value[at:at + 6])
            posting = ((tag >> 4) << BUCKET_BITS | bucket, docno, tag & 15)
            assert posting not in postings, "a posting written twice"
            postings.add(posting)
    return docnos, ids, postings


def assert_index_matches_sketches(path) -> dict[bytes, int]:
    """The index equals one rebuilt from the sketches (numbers aside, which only the store gives)."""
    docnos, ids, postings = read_index(path)
    sketches = raw_parts(path)[b"sketches"]
    assert set(docnos) == set(sketches), "docnos and sketches hold other ids"
    assert {docno: key for key, docno in docnos.items()} == ids, "ids is not the inverse of docnos"
    rebuilt = {(value, docnos[key], len(sketch) // 4 if len(sketch) // 4 < MIN_EVIDENCE else 0)
               for key, sketch in sketches.items() for value in struct.unpack(f"<{len(sketch) // 4}I", sketch)}
    assert postings == rebuilt
    return docnos
