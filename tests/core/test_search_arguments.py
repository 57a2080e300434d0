"""What every entry point of the compiled search module (core/_search.c and its two halves) refuses, and how: the
exception and neardup's own message, for each argument it checks (the index usable, docnos, sketches, metric codes,
buffers, sizes), and which refusal wins when two arguments are wrong. Where the message is CPython's (a wrong count
or type of arguments, a buffer that is not writable) only the exception type is held: its words are Python's.
"""
from __future__ import annotations

import struct

import pytest

from neardup.core import _search as S


def sketch(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def fresh() -> S.Index:
    return S.Index(4, 2)


def built() -> S.Index:
    index = S.Index(4, 2)
    index.put(0, sketch(1, 2, 3))
    index.put(1, sketch(2, 3, 4))
    index.compact()
    return index


UNINITIALISED = S.Index.__new__(S.Index)

#: (what, call, exception, neardup's message or None where the words are CPython's)
REFUSALS = [
    ('Index()', lambda: S.Index(), TypeError, None),
    ('Index(0,1)', lambda: S.Index(0, 1), ValueError, 'k must be in 1..65535 and hot_postings >= 0'),
    ('Index(70000,1)', lambda: S.Index(70000, 1), ValueError, 'k must be in 1..65535 and hot_postings >= 0'),
    ('Index(4,-1)', lambda: S.Index(4, -1), ValueError, 'k must be in 1..65535 and hot_postings >= 0'),
    ("Index('a',1)", lambda: S.Index("a", 1), TypeError, None),
    ("Index(4,1,file=b'x')", lambda: S.Index(4, 1, file=b"x"),
     ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ('Index(4,1,file=3)', lambda: S.Index(4, 1, file=3), TypeError, None),
    ('Index(4,1,file=bytes(300))', lambda: S.Index(4, 1, file=bytes(300)),
     ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ('Index(4,1,x=1)', lambda: S.Index(4, 1, x=1), TypeError, None),
    ('Index(4,1,2,3)', lambda: S.Index(4, 1, 2, 3), TypeError, None),
    ('reinit', lambda: (lambda i: i.__init__(4, 1))(fresh()), RuntimeError, 'Index is already initialised'),
    ('u.put', lambda: UNINITIALISED.put(0, b""), RuntimeError, 'Index is not initialised'),
    ('u.remove', lambda: UNINITIALISED.remove(0), RuntimeError, 'Index is not initialised'),
    ('u.sketch', lambda: UNINITIALISED.sketch(0), RuntimeError, 'Index is not initialised'),
    ('u.compact', lambda: UNINITIALISED.compact(), RuntimeError, 'Index is not initialised'),
    ('u.search', lambda: UNINITIALISED.search(b"", 0.5, 0, -1, -1, 10), RuntimeError, 'Index is not initialised'),
    ('u.stats', lambda: UNINITIALISED.stats(), RuntimeError, 'Index is not initialised'),
    ('u.export', lambda: UNINITIALISED.export({}), RuntimeError, 'Index is not initialised'),
    ('u.base_docno', lambda: UNINITIALISED.base_docno(b"a"), RuntimeError, 'Index is not initialised'),
    ('u.base_id', lambda: UNINITIALISED.base_id(0), RuntimeError, 'Index is not initialised'),
    ('u.put bad args', lambda: UNINITIALISED.put(), RuntimeError, 'Index is not initialised'),
    ("u.remove('x')", lambda: UNINITIALISED.remove("x"), RuntimeError, 'Index is not initialised'),
    ('put()', lambda: fresh().put(), TypeError, None),
    ('put(1)', lambda: fresh().put(1), TypeError, None),
    ('put(1,2,3)', lambda: fresh().put(1, 2, 3), TypeError, None),
    ("put('a',b'')", lambda: fresh().put("a", b""), TypeError, None),
    ("put(-1,b'')", lambda: fresh().put(-1, b""), OverflowError, None),
    ("put(2**32-1,b'')", lambda: fresh().put(2**32 - 1, b""), ValueError, 'docno must be below 2**32 - 1'),
    ("put(2**64,b'')", lambda: fresh().put(2**64, b""), OverflowError, None),
    ("put(0,'s')", lambda: fresh().put(0, "s"), TypeError, 'sketch must be bytes, not str'),
    ("put(0,b'abc')", lambda: fresh().put(0, b"abc"),
     ValueError, 'sketch is 3 bytes: not a sketch of at most K=4 uint32 values'),
    ('put(0,5 values)', lambda: fresh().put(0, sketch(1, 2, 3, 4, 5)),
     ValueError, 'sketch is 20 bytes: not a sketch of at most K=4 uint32 values'),
    ("put('a','s')", lambda: fresh().put("a", "s"), TypeError, None),
    ("put(0.5,b'')", lambda: fresh().put(0.5, b""), TypeError, None),
    ('put(kw)', lambda: fresh().put(docno=0, sketch=b""), TypeError, None),
    ('remove()', lambda: fresh().remove(), TypeError, None),
    ('remove(1,2)', lambda: fresh().remove(1, 2), TypeError, None),
    ("remove('x')", lambda: fresh().remove("x"), TypeError, None),
    ('remove(-1)', lambda: fresh().remove(-1), OverflowError, None),
    ('remove(2**32)', lambda: fresh().remove(2**32), ValueError, 'docno must be below 2**32 - 1'),
    ('remove((1,))', lambda: fresh().remove((1,)), TypeError, None),
    ('sketch()', lambda: fresh().sketch(), TypeError, None),
    ("sketch('x')", lambda: fresh().sketch("x"), TypeError, None),
    ('sketch(2**32-1)', lambda: fresh().sketch(2**32 - 1), ValueError, 'docno must be below 2**32 - 1'),
    ("base_id('x')", lambda: fresh().base_id("x"), TypeError, None),
    ('base_id(2**40)', lambda: fresh().base_id(2**40), ValueError, 'docno must be below 2**32 - 1'),
    ('base_id()', lambda: fresh().base_id(), TypeError, None),
    ("base_docno('x')", lambda: fresh().base_docno("x"), TypeError, 'base_docno: id must be bytes'),
    ('base_docno()', lambda: fresh().base_docno(), TypeError, None),
    ('compact(1)', lambda: fresh().compact(1), TypeError, None),
    ('stats(1)', lambda: fresh().stats(1), TypeError, None),
    ('search()', lambda: built().search(), TypeError, None),
    ('search unsealed', lambda: fresh().search(sketch(1), 0.5, 0, -1, -1, 10),
     RuntimeError, 'the index is not built: call compact() first'),
    ("search('q')", lambda: built().search("q", 0.5, 0, -1, -1, 10), TypeError, 'query must be bytes, not str'),
    ("search(b'abc')", lambda: built().search(b"abc", 0.5, 0, -1, -1, 10),
     ValueError, 'query is 3 bytes: not a sketch of at most K=4 uint32 values'),
    ('search(5 values)', lambda: built().search(sketch(1, 2, 3, 4, 5), 0.5, 0, -1, -1, 10),
     ValueError, 'query is 20 bytes: not a sketch of at most K=4 uint32 values'),
    ('search metric 7', lambda: built().search(sketch(1), 0.5, 7, -1, -1, 10), ValueError, 'unknown metric code 7'),
    ('search nan', lambda: built().search(sketch(1), float("nan"), 0, -1, -1, 10),
     ValueError, 'threshold must be a finite number'),
    ('search inf', lambda: built().search(sketch(1), float("inf"), 0, -1, -1, 10),
     ValueError, 'threshold must be a finite number'),
    ('search thr str', lambda: built().search(sketch(1), "x", 0, -1, -1, 10), TypeError, None),
    ('search metric str', lambda: built().search(sketch(1), 0.5, "x", -1, -1, 10), TypeError, None),
    ('search metric big', lambda: built().search(sketch(1), 0.5, 2**40, -1, -1, 10), OverflowError, None),
    ('search bad q + thr str', lambda: built().search(b"abc", "x", 0, -1, -1, 10), TypeError, None),
    ('search bad q + metric 7', lambda: built().search(b"abc", 0.5, 7, -1, -1, 10),
     ValueError, 'query is 3 bytes: not a sketch of at most K=4 uint32 values'),
    ('search metric 7 + nan', lambda: built().search(sketch(1), float("nan"), 7, -1, -1, 10),
     ValueError, 'unknown metric code 7'),
    ('search unsealed + metric 7', lambda: fresh().search(sketch(1), 0.5, 7, -1, -1, 10),
     ValueError, 'unknown metric code 7'),
    ('export()', lambda: fresh().export(), TypeError, None),
    ('export([])', lambda: fresh().export([]), TypeError, 'export: ids must be a dict of docno to bytes'),
    ("export({'a':b'x'})", lambda: built().export({"a": b"x"}), TypeError, None),
    ("export({-1:b'x'})", lambda: built().export({-1: b"x"}), OverflowError, None),
    ("export({0:'x'})", lambda: built().export({0: "x"}), ValueError, 'export: the id of docno 0 must be 1..511 bytes'),
    ("export({0:b''})", lambda: built().export({0: b""}), ValueError, 'export: the id of docno 0 must be 1..511 bytes'),
    ("export({0:b'x'*512})", lambda: built().export({0: b"x" * 512}),
     ValueError, 'export: the id of docno 0 must be 1..511 bytes'),
    ("export({0:b'a'})", lambda: built().export({0: b"a"}), ValueError, 'export: no id given for stored docno 1'),
    ('export.sizes(1)', lambda: built().export({0: b"a", 1: b"b"}).sizes(1), TypeError, None),
    ('export.write()', lambda: built().export({0: b"a", 1: b"b"}).write(), TypeError, None),
    ("export.write(b'')", lambda: built().export({0: b"a", 1: b"b"}).write(b""), BufferError, None),
    ('export.write(3)', lambda: built().export({0: b"a", 1: b"b"}).write(3), TypeError, None),
    ('export.write(bytearray(10))', lambda: built().export({0: b"a", 1: b"b"}).write(bytearray(10)),
     ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ('hot_skipped()', lambda: S.hot_skipped(), TypeError, None),
    ('hot_skipped metric', lambda: S.hot_skipped(3, 10, 0.5, 9), ValueError, 'unknown metric code 9'),
    ('hot_skipped -1', lambda: S.hot_skipped(-1, 10, 0.5, 0), ValueError, 'hot must be >= 0 and query_length >= 1'),
    ('hot_skipped q0', lambda: S.hot_skipped(1, 0, 0.5, 0), ValueError, 'hot must be >= 0 and query_length >= 1'),
    ('hot_skipped -1 + metric', lambda: S.hot_skipped(-1, 0, 0.5, 9), ValueError, 'unknown metric code 9'),
    ('hot_skipped str', lambda: S.hot_skipped("a", 0, 0.5, 9), TypeError, None),
    ('may_reach()', lambda: S.may_reach(), TypeError, None),
    ('may_reach metric', lambda: S.may_reach(bytes(8), bytes(1), bytearray(1), 0, 1, 0.5, 5),
     ValueError, 'unknown metric code 5'),
    ('may_reach sizes', lambda: S.may_reach(bytes(8), bytes(2), bytearray(1), 0, 1, 0.5, 0),
     ValueError, 'may_reach: shared must hold int64 and out a byte per length; skipped >= 0, query_length >= 1'),
    ('may_reach skipped', lambda: S.may_reach(bytes(8), bytes(1), bytearray(1), -1, 1, 0.5, 0),
     ValueError, 'may_reach: shared must hold int64 and out a byte per length; skipped >= 0, query_length >= 1'),
    ('may_reach ro out', lambda: S.may_reach(bytes(8), bytes(1), bytes(1), 0, 1, 0.5, 0), TypeError, None),
    ('may_reach str', lambda: S.may_reach("a", bytes(1), bytearray(1), 0, 1, 0.5, 0), TypeError, None),
    ('file_size()', lambda: S.file_size(), TypeError, None),
    ('file_size big', lambda: S.file_size(10, 5, 2**33, 50, 16),
     ValueError, 'an index file holds at most 2**32 - 1 articles and 2**32 values'),
    ('file_size limit', lambda: S.file_size(2**32, 5, 1, 50, 16),
     ValueError, 'an index file holds at most 2**32 - 1 articles and 2**32 values'),
    ('file_size neg', lambda: S.file_size(-1, 5, 1, 50, 16),
     ValueError, 'an index file holds at most 2**32 - 1 articles and 2**32 values'),
    ('init_header()', lambda: S.init_header(), TypeError, None),
    ('init_header cfg', lambda: S.init_header(bytearray(10**5), 4, 2, 0, "x" * 17, 10, 5, 100, 50, 0),
     ValueError, 'init_header: config is at most 16 bytes, k in 1..65535, at most 2**32 values and 2**32 - 1 articles'),
    ('init_header k0', lambda: S.init_header(bytearray(10**5), 0, 2, 0, "x", 10, 5, 100, 50, 0),
     ValueError, 'init_header: config is at most 16 bytes, k in 1..65535, at most 2**32 values and 2**32 - 1 articles'),
    ('init_header small', lambda: S.init_header(bytearray(10), 4, 2, 0, "x", 10, 5, 100, 50, 0),
     ValueError, 'init_header: the buffer has 10 bytes, the file needs 264264'),
    ('init_header ro', lambda: S.init_header(b"x" * 10**5, 4, 2, 0, "x", 10, 5, 100, 50, 0), BufferError, None),
    ('init_header int', lambda: S.init_header(3, 4, 2, 0, "x", 10, 5, 100, 50, 0), TypeError, None),
    ('init_header int + k0', lambda: S.init_header(3, 0, 2, 0, "x", 10, 5, 100, 50, 0),
     ValueError, 'init_header: config is at most 16 bytes, k in 1..65535, at most 2**32 values and 2**32 - 1 articles'),
    ('build_file()', lambda: S.build_file(), TypeError, None),
    ("build_file(b'')", lambda: S.build_file(b""), BufferError, None),
    ('build_file(bytearray(8))', lambda: S.build_file(bytearray(8)),
     ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ('build_file(bytearray(300))', lambda: S.build_file(bytearray(300)),
     ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ("build_file('x')", lambda: S.build_file("x"), TypeError, None),
    ('seal()', lambda: S.seal(), TypeError, None),
    ('seal(bytearray(8),8)', lambda: S.seal(bytearray(8), 8),
     ValueError, 'seal: file_bytes must be a multiple of 8 within the buffer'),
    ('seal(bytearray(512),300)', lambda: S.seal(bytearray(512), 300),
     ValueError, 'seal: file_bytes must be a multiple of 8 within the buffer'),
    ("seal(b'x'*512,256)", lambda: S.seal(b"x" * 512, 256), BufferError, None),
    ('seal(3,256)', lambda: S.seal(3, 256), TypeError, None),
    ('seal(bytearray(512),-1)', lambda: S.seal(bytearray(512), -1),
     ValueError, 'seal: file_bytes must be a multiple of 8 within the buffer'),
    ('checksum()', lambda: S.checksum(), TypeError, None),
    ('checksum(3)', lambda: S.checksum(3), TypeError, None),
    ('checksum(bytes(8))', lambda: S.checksum(bytes(8)),
     ValueError, 'checksum: the file must be a multiple of 8 bytes, at least the header'),
    ('checksum(bytes(260))', lambda: S.checksum(bytes(260)),
     ValueError, 'checksum: the file must be a multiple of 8 bytes, at least the header'),
    ('header()', lambda: S.header(), TypeError, None),
    ('header(3)', lambda: S.header(3), TypeError, None),
    ("header(b'x')", lambda: S.header(b"x"), ValueError, 'not a neardup search index file (no NDSRCHIX magic)'),
    ('header(NDSRCHIX short)', lambda: S.header(b"NDSRCHIX" + bytes(10)),
     ValueError, 'damaged: 18 bytes, shorter than the header'),
    ('header(NDSRCHIX v2)', lambda: S.header(b"NDSRCHIX" + struct.pack("<I", 2) + bytes(300)),
     ValueError, 'format version 2; this neardup reads version 1'),
]


@pytest.mark.parametrize("call, exception, message", [pytest.param(*row[1:], id=row[0]) for row in REFUSALS])
def test_each_entry_point_refuses_a_wrong_argument_with_its_own_message(call, exception, message):
    with pytest.raises(BaseException) as raised:
        call()
    assert type(raised.value) is exception
    if message is not None:
        assert str(raised.value) == message


def test_the_refused_calls_change_nothing():
    index = built()
    before = (index.search(sketch(2, 3), 0.5, 0, -1, -1, 10), index.stats(), index.sketch(0))
    for bad in [lambda: index.put(0, b"abc"), lambda: index.put(2**32 - 1, sketch(1)), lambda: index.remove(-1),
                lambda: index.search(sketch(1), float("nan"), 0, -1, -1, 10), lambda: index.export({0: b""})]:
        with pytest.raises((ValueError, OverflowError)):
            bad()
    assert (index.search(sketch(2, 3), 0.5, 0, -1, -1, 10), index.stats(), index.sketch(0)) == before
    assert before[0] == ([(0, 1.0), (1, 1.0)], True)
