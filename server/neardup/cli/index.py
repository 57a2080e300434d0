"""`neardup index`'s options, the checks between them, and its summary and exit code; the work is jobs/index.py."""
from __future__ import annotations

import argparse

from neardup_client.cli_framework import EXIT_OK, EXIT_PARTIAL, UsageError, at_least, fraction, positive

from ..core.language import AUTO, canonical_store_lang
from ..core.sketch_config import SketchConfig
from ..core.stoplist import DEFAULT_FRACTION, DEFAULT_MIN_DOCS, DEFAULT_OWN_SHARE
from ..core.vocabulary import KINDS, SIMHASH
from ..jobs.index import (DASK, DEFAULT_BATCH_SIZE, DEFAULT_CONNECT_TIMEOUT, ENGINES, MAX_PARTITION_BYTES,
                          MIN_PARTITION_BYTES, PARTITIONS_PER_WORKER, IndexOptions, index_corpus,
                          load_schema)
from ..store import STORE_HELP, default_store_path
from .configure import add_threshold_argument
from .options import add_progress_argument, checked, reporting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = SketchConfig()
    parser.description = ("Sketch a JSON Lines corpus (one object per line: id, text, optional lang) into a store, "
                          "creating it when there is none. An existing store keeps its sketch configuration and "
                          "stop-list; re-indexing an id replaces its sketch. Exit code 3 when malformed lines were "
                          "skipped.")
    parser.add_argument("corpus", metavar="CORPUS",
                        help="JSON Lines file, or - for stdin; a name ending in .parquet is read as Parquet (string "
                             "columns id, text, optional lang; needs the parquet extra)")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--lang", type=checked(str, canonical_store_lang),
                        help=f"default language of the corpus, or {AUTO}: each text's identified language; a "
                             f"record's lang overrides it (default: the store's; for a new store {defaults.lang})")
    parser.add_argument("--unit", type=checked(str, lambda unit: SketchConfig(unit=unit)),
                        help=f"shingle unit: sentence, para-sentence or word:N "
                             f"(default: the store's; for a new store {defaults.unit})")
    parser.add_argument("--sketch", choices=KINDS,
                        help=f"sketch kind: bottomk (the K smallest shingle hashes), simhash (one 64-bit SimHash "
                             f"fingerprint of them, 8 bytes; Dedup and search by Hamming distance), or items (records "
                             f"with fields, by a --fields schema, which implies it) "
                             f"(default: the store's; for a new store {defaults.kind})")
    parser.add_argument("-k", type=checked(int, lambda k: SketchConfig(k=k)),
                        help=f"sketch size of --sketch bottomk: the K smallest shingle hashes "
                             f"(default: the store's; for a new store {defaults.k})")
    parser.add_argument("--min-word-len", type=checked(int, lambda length: SketchConfig(min_word_len=length)),
                        help=f"shorter words are dropped "
                             f"(default: the store's; for a new store {defaults.min_word_len})")
    parser.add_argument("--fields", metavar="SCHEMA", type=checked(str, load_schema),
                        help="a new store of items with fields (records {\"id\": ..., \"fields\": {...}}), by this "
                             "JSON schema: {\"fields\": [{\"name\", \"kind\": text|exact|location, \"weight\", ...}], "
                             "\"rules\": [[field, ...], ...]}; an existing items store must have the same "
                             "(default: the store's; a new store holds texts)")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="where the corpus is sketched: local (this host, --workers processes) or dask (the Dask "
                             "distributed cluster at --scheduler; CORPUS must then be a path or URL its workers can "
                             "read); the store is written from this host either way")
    parser.add_argument("--workers", type=at_least(1), default=1, help="sketching processes of --engine local")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="the Dask scheduler of --engine dask, e.g. tcp://HOST:8786 (default: none; required "
                             "with --engine dask)")
    parser.add_argument("--partition-bytes", type=at_least(1),
                        help=f"corpus bytes per Dask task of --engine dask (a partition holds the lines that start in "
                             f"its byte range) (default: about {PARTITIONS_PER_WORKER} partitions per worker, each of "
                             f"{MIN_PARTITION_BYTES // 2**10} KiB to {MAX_PARTITION_BYTES // 2**20} MiB)")
    parser.add_argument("--connect-timeout", type=checked(float, positive), default=DEFAULT_CONNECT_TIMEOUT,
                        metavar="SECONDS", help="how long --engine dask tries to reach the scheduler")
    parser.add_argument("--strict", action="store_true",
                        help="abort at the first malformed line, writing nothing, instead of skipping it")
    parser.add_argument("--stop-min-docs", type=at_least(2), default=DEFAULT_MIN_DOCS,
                        help="a new store stop-lists shingles found in at least this many distinct texts ...")
    parser.add_argument("--stop-fraction", type=checked(float, fraction), default=DEFAULT_FRACTION,
                        help="... and in at least this fraction of the documents; copies of one text (a story "
                             "republished many times) count once, so a popular story is never stop-listed")
    parser.add_argument("--stop-own-share", type=checked(float, fraction), default=DEFAULT_OWN_SHARE,
                        help="a document counts as a distinct text when at least this share of its shingles are its "
                             "own (in fewer documents than the cut); 0 counts every document")
    parser.add_argument("--no-stoplist", dest="learn", action="store_false",
                        help="a new store gets no stop-list (default: it learns one)")
    parser.add_argument("--batch-size", type=at_least(1), default=DEFAULT_BATCH_SIZE,
                        help="documents per atomic write batch")
    parser.add_argument("--no-postings", dest="postings", action="store_false",
                        help="a new store keeps no postings: smaller and faster to write, but no corpus search "
                             "(FindSimilar, neardup pairs); an existing store that keeps them refuses this "
                             "(default: a new store keeps postings)")
    add_threshold_argument(parser)
    parser.add_argument("--search-index", action="store_true",
                        help="then build the store's search index file, as `neardup search-index` does (for "
                             "serve --search-index shared, pairs and cluster; bottom-K stores with postings)")
    parser.add_argument("--search-index-file", metavar="PATH",
                        help="where --search-index writes it (default: search-index in an LMDB store's directory; "
                             "a Redis store needs one)")
    add_progress_argument(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.sketch == SIMHASH and args.k is not None:
        raise UsageError("-k sets the size of a bottom-K sketch; --sketch simhash makes one 64-bit fingerprint: "
                         "leave -k out")
    engine = None
    if args.engine == DASK:
        if args.scheduler is None:
            raise UsageError("--engine dask needs --scheduler ADDRESS (the Dask scheduler, e.g. tcp://HOST:8786)")
        if args.corpus == "-":
            raise UsageError("--engine dask reads the corpus on its workers: give a path or URL, not - (stdin)")
        if args.workers != 1:
            raise UsageError("--workers sets the processes of --engine local; a Dask cluster has its own workers")
        from ..jobs.dask_engine import DaskEngine
        engine = DaskEngine(args.scheduler, args.partition_bytes, args.connect_timeout)
    elif args.scheduler is not None:
        raise UsageError("--scheduler is for --engine dask")
    if args.search_index_file and not args.search_index:
        raise UsageError("--search-index-file is where --search-index writes the file: give both")
    with reporting(args, "index"):
        options = IndexOptions(
            unit=args.unit, k=args.k, lang=args.lang, min_word_len=args.min_word_len, sketch=args.sketch,
            workers=args.workers, strict=args.strict, stop_min_docs=args.stop_min_docs,
            stop_fraction=args.stop_fraction, stop_own_share=args.stop_own_share, learn=args.learn,
            batch_size=args.batch_size, postings=args.postings,
            schema=load_schema(args.fields) if args.fields else None, threshold=args.threshold)
        summary = index_corpus(args.corpus, args.store, options, engine=engine)
    print(summary.format())
    if args.search_index:
        from .search_index import build

        build(args, args.store, args.search_index_file)
    return EXIT_PARTIAL if summary.skipped else EXIT_OK
