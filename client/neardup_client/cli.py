"""`neardup dedup`, `neardup similar`, `neardup explain` and `neardup info`: the service from a shell, answers as JSON on
stdout. `neardup` mounts these commands; the framework both command lines share is cli_framework.py. The options
that reach a server (add_connection_arguments, connect) are shared with `neardup ui`."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Callable

import grpc

from . import __version__
from ._client import DEFAULT_TARGET, DEFAULT_TIMEOUT, NearDupClient, NearDupClientError, unreachable
from .cli_framework import (EXIT_OK, AddArguments, CommandFailed, OneLineParser, UsageError, add_command, at_least,
                            checked, fraction, not_negative, positive, run, target)
from .enums import GROUPINGS, GROUPING_HELP, METRICS, METRIC_HELP, described
from .json_lines import parse_line
from .messages import Document


def _require_utf8(*values: str | None) -> None:
    """Lone surrogates (a JSON \\ud800 escape, undecodable bytes in argv) have no UTF-8 form to send."""
    for value in values:
        try:
            (value or "").encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"{value[:40]!r} is not valid Unicode (lone surrogate at {error.start})") from None


def _document_of(line: bytes) -> Document:
    """One JSON Lines record; ValueError says what is wrong with it."""
    record = parse_line(line)
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) \
            or not all(isinstance(record.get(key), (str, type(None))) for key in ("text", "lang")) \
            or not isinstance(record.get("fields"), (dict, type(None))):
        raise ValueError("not a JSON object with a string id and optional string text and lang (or an object of "
                         "fields)")
    _require_utf8(record["id"], record.get("text"), record.get("lang"))
    return Document(id=record["id"], text=record.get("text"), lang=record.get("lang"), fields=record.get("fields"))


def _read_documents(path: str) -> list[Document]:
    """JSON Lines with `id` and optionally `text` (sketched by the server) and `lang`; `-` is stdin.
    Read as bytes, so invalid UTF-8 is a bad line like any other, named by its number."""
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    except OSError as error:
        raise CommandFailed(f"cannot read {path}: {error.strerror}") from None
    documents = []
    with stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                try:
                    documents.append(_document_of(line))
                except ValueError as error:
                    raise CommandFailed(f"{path}:{number}: {error}") from None
    return documents


TOKEN_ENV, TARGET_ENV = "NEARDUP_TOKEN", "NEARDUP_TARGET"
#: Seconds a command waits for a server that is still starting (`neardup serve &` followed by a call).
DEFAULT_CONNECT_TIMEOUT = 10.0


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """--target, --timeout, --token and the --tls-* options: how a command reaches a server (connect)."""
    parser.add_argument("--target", type=target, default=os.environ.get(TARGET_ENV, DEFAULT_TARGET),
                        help=f"HOST:PORT of the server; ${TARGET_ENV} overrides the default")
    parser.add_argument("--timeout", type=checked(float, positive), default=DEFAULT_TIMEOUT, help="seconds per call")
    parser.add_argument("--connect-timeout", type=checked(float, not_negative), default=DEFAULT_CONNECT_TIMEOUT,
                        metavar="SECONDS", help="how long to wait for a server that is still starting (0: not at all)")
    parser.add_argument("--token", help=f"bearer token, if the server asks for one (default: ${TOKEN_ENV}, if set; "
                                        f"the environment keeps it out of `ps` and shell history)")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="PEM CA certificates to verify the server with; turns on TLS (default: plaintext, "
                             "or the system's trusted CAs when a client certificate is given)")
    parser.add_argument("--tls-cert", metavar="FILE", help="PEM client certificate chain, for mutual TLS")
    parser.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")


def _add_dedup_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Ask a server which results of a result set to keep. Prints JSON: keep (ids in rank "
                          "order), duplicates (id, duplicate_of, similarity), groups, missing, cached.")
    add_connection_arguments(parser)
    parser.add_argument("ids", nargs="*", metavar="ID", help="stored article ids in rank order (or --jsonl)")
    parser.add_argument("--jsonl", metavar="FILE",
                        help="the result set as JSON Lines (id, and text with optional lang, or fields for an items "
                             "store), - for stdin; instead of IDs")
    parser.add_argument("--threshold", type=checked(float, fraction),
                        help="similarity in [0, 1] from which a result is a duplicate (default: the server's)")
    parser.add_argument("--metric", choices=METRICS,
                        help=f"{described(METRIC_HELP)} (default: the server's)")
    parser.add_argument("--grouping", choices=GROUPINGS,
                        help=f"{described(GROUPING_HELP)} (default: the server's)")
    parser.set_defaults(func=_dedup)


def _add_similar_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Ask a server for the stored articles most similar to a stored one (ID) or to a text "
                          "(--text FILE), over the whole store. Prints JSON: matches (id, similarity) best first, "
                          "never the query itself; exact; the threshold, metric and top_k applied; and for --text "
                          "the language it was stemmed in (lang) and how it was chosen (lang_source: given, "
                          "identified or store).")
    add_connection_arguments(parser)
    parser.add_argument("id", nargs="?", metavar="ID", help="a stored article's id (or --text)")
    parser.add_argument("--text", metavar="FILE", help="search with this file's UTF-8 text, - for stdin; instead of ID")
    parser.add_argument("--lang", help="stemming language of --text (default: the store's; the one identified from "
                                       "the text in a store of lang auto, or whose texts carry other languages)")
    parser.add_argument("--top-k", type=at_least(1), metavar="N", help="the most matches to print (default: the server's, 10)")
    parser.add_argument("--threshold", type=checked(float, fraction),
                        help="similarity in [0, 1] a match reaches (default: the server's)")
    parser.add_argument("--metric", choices=METRICS,
                        help=f"{described(METRIC_HELP)} (default: the server's)")
    parser.set_defaults(func=_similar)


def _add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Ask a server how similar two documents are under its store's rules, whether the second is a duplicate of "
        "the first, and which passages of their texts they share. A and B are stored ids; --text-a/--text-b FILE "
        "give that document as a file's text instead (then the IDs given fill the other documents, in order), or "
        "--jsonl FILE gives both as two JSON Lines records (id, text, optional lang; a record with only an id is "
        "read from the store). The store keeps no texts: spans are answered only for documents sent with text. "
        "Prints JSON: similarity, duplicate, threshold, metric, counts, and per document its spans [start, end) "
        "in Unicode code points of its text: shared, sketch_shared, boilerplate; note says what is missing.")
    add_connection_arguments(parser)
    parser.add_argument("ids", nargs="*", metavar="ID", help="stored article ids: A then B (or fewer, with --text-*)")
    parser.add_argument("--text-a", metavar="FILE", help="document A is this file's UTF-8 text, - for stdin")
    parser.add_argument("--text-b", metavar="FILE", help="document B is this file's UTF-8 text, - for stdin")
    parser.add_argument("--jsonl", metavar="FILE", help="both documents as two JSON Lines records, - for stdin")
    parser.add_argument("--lang", help="stemming language of the --text-* files (default: the store's)")
    parser.add_argument("--threshold", type=checked(float, fraction),
                        help="similarity in [0, 1] from which B is a duplicate of A (default: the server's)")
    parser.add_argument("--metric", choices=METRICS, help=f"{described(METRIC_HELP)} (default: the server's)")
    parser.set_defaults(func=_explain)


def _add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Print JSON about a server: its store's article count and generation, sketch "
                          "configuration, limits, defaults and version.")
    add_connection_arguments(parser)
    parser.set_defaults(func=_info)


#: This module's commands: name → (one-line help, add_arguments). `neardup` mounts them as its own.
COMMANDS: dict[str, tuple[str, AddArguments]] = {
    "dedup": ("ask a server which results of a result set to keep", _add_dedup_arguments),
    "similar": ("search a server's store for near-duplicates of an id or a text", _add_similar_arguments),
    "explain": ("how similar two documents are, and the passages they share", _add_explain_arguments),
    "info": ("a server's store size, sketch configuration, limits and defaults", _add_info_arguments),
}


def channel_credentials(args) -> grpc.ChannelCredentials | None:
    """TLS when any --tls-* option is given; without --tls-ca the system's trusted CAs verify the server."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UsageError("--tls-cert and --tls-key go together")
    if not (args.tls_ca or args.tls_cert):
        return None
    files = {}
    for name in ("tls_ca", "tls_cert", "tls_key"):
        path = getattr(args, name)
        try:
            files[name] = Path(path).read_bytes() if path else None
        except OSError as error:
            raise CommandFailed(f"cannot read --{name.replace('_', '-')} {path}: {error.strerror}") from None
    return grpc.ssl_channel_credentials(root_certificates=files["tls_ca"], private_key=files["tls_key"],
                                        certificate_chain=files["tls_cert"])


def connect(args) -> NearDupClient:
    """A client for the server that add_connection_arguments' options name (the token from --token, else
    $NEARDUP_TOKEN)."""
    token = args.token or os.environ.get(TOKEN_ENV) or None
    return NearDupClient(args.target, timeout=args.timeout, token=token, credentials=channel_credentials(args))


def _call(args, method: Callable[[NearDupClient], object]):
    """One call; a server that cannot be reached is named, with the likely cause."""
    try:
        with connect(args) as client:
            client.wait_until_ready(args.connect_timeout)  # a server just started (`serve &`) is waited for
            return method(client)
    except NearDupClientError as error:
        if error.code == grpc.StatusCode.UNAVAILABLE:
            raise CommandFailed(unreachable(error, args.target)) from None
        raise


def _dedup(args) -> int:
    if bool(args.ids) == bool(args.jsonl):
        raise UsageError("give either IDs or --jsonl FILE")
    try:
        _require_utf8(*args.ids)
    except ValueError as error:
        raise UsageError(f"ID {error}") from None
    results = args.ids or _read_documents(args.jsonl)
    answer = _call(args, lambda client: client.dedup(results, threshold=args.threshold, metric=args.metric,
                                                     grouping=args.grouping))
    print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
    return EXIT_OK


def _read_text(path: str) -> str:
    """A file of UTF-8 text, `-` for stdin; what cannot be read or decoded is a failure naming the file."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as stream:
                data = stream.read()
    except OSError as error:
        raise CommandFailed(f"cannot read {path}: {error.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CommandFailed(f"{path}: invalid UTF-8 at byte {error.start}") from None


def _similar(args) -> int:
    if (args.id is None) == (args.text is None):
        raise UsageError("give either ID or --text FILE")
    if args.lang is not None and args.text is None:
        raise UsageError("--lang goes with --text")
    for name, value in (("ID", args.id), ("--lang", args.lang)):
        try:
            _require_utf8(value)
        except ValueError as error:
            raise UsageError(f"{name} {error}") from None
    query = {"id": args.id} if args.id is not None else {
        "document": Document("", text=_read_text(args.text), lang=args.lang)}
    answer = _call(args, lambda client: client.find_similar(**query, top_k=args.top_k, threshold=args.threshold,
                                                            metric=args.metric))
    print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
    return EXIT_OK


def _explain_documents(args) -> list:
    """The two documents of `neardup explain`: ids, --text-a/--text-b files, or --jsonl's two records."""
    if args.jsonl is not None:
        if args.ids or args.text_a or args.text_b:
            raise UsageError("--jsonl gives both documents: no IDs or --text-a/--text-b with it")
        documents = _read_documents(args.jsonl)
        if len(documents) != 2:
            raise CommandFailed(f"{args.jsonl}: explain compares two documents, the file holds {len(documents)}")
        return documents
    texts = [args.text_a, args.text_b]
    if len(args.ids) != texts.count(None):
        raise UsageError(f"give two documents: {texts.count(None)} ID(s) with "
                         f"{2 - texts.count(None)} --text-a/--text-b, got {len(args.ids)} ID(s)")
    try:
        _require_utf8(*args.ids, args.lang)
    except ValueError as error:
        raise UsageError(f"ID or --lang {error}") from None
    if args.lang is not None and texts == [None, None]:
        raise UsageError("--lang goes with --text-a or --text-b")
    ids = iter(args.ids)
    return [next(ids) if path is None else Document(Path(path).name if path != "-" else "-", text=_read_text(path),
                                                     lang=args.lang) for path in texts]


def _explain(args) -> int:
    a, b = _explain_documents(args)
    answer = _call(args, lambda client: client.explain(a, b, threshold=args.threshold, metric=args.metric))
    print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
    return EXIT_OK


def _info(args) -> int:
    print(json.dumps(dataclasses.asdict(_call(args, NearDupClient.info)), indent=2))
    return EXIT_OK


def build_parser(prog: str = "neardup-client") -> OneLineParser:
    parser = OneLineParser(prog=prog, description="Ask a neardup server (`neardup serve`) from a shell.")
    parser.add_argument("--version", action="version", version=f"{prog} {__version__}")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    for name, (summary, add_arguments) in COMMANDS.items():
        add_command(subparsers, name, summary, add_arguments)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the standalone client (`neardup-client`); `neardup dedup`, `similar`, `explain` and `info` run
    the same code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
