"""`neardup dedup` and `neardup info`: the service from a shell, answers as JSON on stdout."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import grpc

from ._client import DEFAULT_TARGET, DEFAULT_TIMEOUT, Document, NearDupClient, NearDupClientError
from .enums import GROUPINGS, METRICS

#: Exit code of a failed call or a usage mistake (1 is for input refused before calling).
EXIT_ERROR = 2


def error_line(error: object) -> str:
    """Every command-line error is one line on stderr."""
    return f"neardup: error: {' '.join(str(error).split())}"


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error, naming the help to read; exit code 2."""

    def error(self, message: str):
        print(f"{error_line(message)} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def _require_utf8(*values: str | None) -> None:
    """Lone surrogates (a JSON \\ud800 escape, undecodable bytes in argv) have no UTF-8 form to send."""
    for value in values:
        try:
            (value or "").encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"{value[:40]!r} is not valid Unicode (lone surrogate at {error.start})") from None


def _document_of(line: bytes) -> Document:
    """One JSON Lines record; ValueError says what is wrong with it."""
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(f"invalid UTF-8 at byte {error.start}") from None
    except ValueError as error:
        raise ValueError(f"bad JSON ({error})") from None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) \
            or not all(isinstance(record.get(key), (str, type(None))) for key in ("text", "lang")):
        raise ValueError("not a JSON object with a string id and optional string text and lang")
    _require_utf8(record["id"], record.get("text"), record.get("lang"))
    return Document(id=record["id"], text=record.get("text"), lang=record.get("lang"))


def _read_documents(path: str) -> list[Document]:
    """JSON Lines with `id` and optionally `text` (sketched by the server) and `lang`; `-` is stdin.
    Read as bytes, so invalid UTF-8 is a bad line like any other, named by its number."""
    try:
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")
    except OSError as error:
        raise SystemExit(f"neardup: error: cannot read {path}: {error.strerror}") from None
    documents = []
    with stream:
        for number, line in enumerate(stream, 1):
            if line.strip():
                try:
                    documents.append(_document_of(line))
                except ValueError as error:
                    raise SystemExit(f"neardup: error: {path}:{number}: {' '.join(str(error).split())}") from None
    return documents


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=os.environ.get("NEARDUP_TARGET", DEFAULT_TARGET),
                        help="HOST:PORT of the server (env NEARDUP_TARGET)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per call")
    parser.add_argument("--token", default=os.environ.get("NEARDUP_TOKEN"),
                        help="bearer token, if the server asks for one (env NEARDUP_TOKEN)")
    parser.add_argument("--tls-ca", metavar="FILE",
                        help="PEM CA certificates to verify the server with; turns on TLS")
    parser.add_argument("--tls-cert", metavar="FILE", help="PEM client certificate chain, for mutual TLS")
    parser.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")


def add_parser(subparsers) -> None:
    dedup = subparsers.add_parser(
        "dedup", help="ask a server which results of a result set to keep",
        description="Prints JSON: keep (ids in rank order), duplicates (id, duplicate_of, similarity), "
                    "groups, missing, cached.")
    _common(dedup)
    dedup.add_argument("ids", nargs="*", metavar="ID", help="stored article ids in rank order")
    dedup.add_argument("--jsonl", metavar="FILE", help="result set as JSON Lines (id, text, lang); - for stdin")
    dedup.add_argument("--threshold", type=float, help="in [0, 1]; default: the server's")
    dedup.add_argument("--metric", choices=METRICS)
    dedup.add_argument("--grouping", choices=GROUPINGS)
    dedup.set_defaults(func=_dedup)
    info = subparsers.add_parser("info", help="a server's store size, sketch configuration and defaults")
    _common(info)
    info.set_defaults(func=_info)


def _credentials(args) -> grpc.ChannelCredentials | None:
    """TLS when any --tls-* option is given; without --tls-ca the system's trusted CAs verify the server."""
    if bool(args.tls_cert) != bool(args.tls_key):
        raise SystemExit("neardup: error: --tls-cert and --tls-key go together")
    if not (args.tls_ca or args.tls_cert):
        return None
    files = {}
    for name in ("tls_ca", "tls_cert", "tls_key"):
        path = getattr(args, name)
        try:
            files[name] = Path(path).read_bytes() if path else None
        except OSError as error:
            raise SystemExit(f"neardup: error: cannot read --{name.replace('_', '-')} {path}: {error.strerror}") \
                from None
    return grpc.ssl_channel_credentials(root_certificates=files["tls_ca"], private_key=files["tls_key"],
                                        certificate_chain=files["tls_cert"])


def _client(args) -> NearDupClient:
    return NearDupClient(args.target, timeout=args.timeout, token=args.token, credentials=_credentials(args))


def _dedup(args) -> int:
    if bool(args.ids) == bool(args.jsonl):
        raise SystemExit("neardup: error: give either IDs or --jsonl FILE")
    try:
        _require_utf8(*args.ids)
    except ValueError as error:
        raise SystemExit(f"neardup: error: ID {error}") from None
    results = args.ids or _read_documents(args.jsonl)
    with _client(args) as client:
        answer = client.dedup(results, threshold=args.threshold, metric=args.metric, grouping=args.grouping)
    print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
    return 0


def _info(args) -> int:
    with _client(args) as client:
        print(json.dumps(dataclasses.asdict(client.info()), indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the standalone client (`neardup-client`); `neardup dedup` runs the same code."""
    parser = OneLineParser(prog="neardup-client")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except NearDupClientError as error:
        print(error_line(error), file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
