"""`neardup dedup` and `neardup info`: the service from a shell, answers as JSON on stdout."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from ._client import DEFAULT_TARGET, DEFAULT_TIMEOUT, Document, NearDupClient, NearDupClientError


def _read_documents(path: str) -> list[Document]:
    """JSON Lines with `id` and optionally `text` (sketched by the server) and `lang`; `-` is stdin."""
    documents = []
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")
    with stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                documents.append(Document(id=record["id"], text=record.get("text"), lang=record.get("lang")))
            except (ValueError, KeyError, TypeError) as error:
                raise SystemExit(f"neardup: error: {path}:{number}: not a JSON object with an id ({error})")
    return documents


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=os.environ.get("NEARDUP_TARGET", DEFAULT_TARGET),
                        help="HOST:PORT of the server (env NEARDUP_TARGET)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per call")
    parser.add_argument("--token", default=os.environ.get("NEARDUP_TOKEN"),
                        help="bearer token, if the server asks for one (env NEARDUP_TOKEN)")


def add_parser(subparsers) -> None:
    dedup = subparsers.add_parser(
        "dedup", help="ask a server which results of a result set to keep",
        description="Prints JSON: keep (ids in rank order), duplicates (id, duplicate_of, similarity), "
                    "groups, missing, cached.")
    _common(dedup)
    dedup.add_argument("ids", nargs="*", metavar="ID", help="stored article ids in rank order")
    dedup.add_argument("--jsonl", metavar="FILE", help="result set as JSON Lines (id, text, lang); - for stdin")
    dedup.add_argument("--threshold", type=float, help="in [0, 1]; default: the server's")
    dedup.add_argument("--metric", choices=["containment", "jaccard"])
    dedup.add_argument("--grouping", choices=["greedy", "components"])
    dedup.set_defaults(func=_dedup)
    info = subparsers.add_parser("info", help="a server's store size, sketch configuration and defaults")
    _common(info)
    info.set_defaults(func=_info)


def _client(args) -> NearDupClient:
    return NearDupClient(args.target, timeout=args.timeout, token=args.token)


def _dedup(args) -> int:
    if bool(args.ids) == bool(args.jsonl):
        raise SystemExit("neardup: error: give either IDs or --jsonl FILE")
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
    parser = argparse.ArgumentParser(prog="neardup-client")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return run(args)


def run(args) -> int:
    try:
        return args.func(args)
    except NearDupClientError as error:
        print(f"neardup: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
