"""`neardup dedup`, `neardup similar` and `neardup info`: the service from a shell, answers as JSON on stdout.

What both command lines share lives here too (`neardup` mounts these commands, and the client package does not
depend on the server's): the exit codes, one-line errors, the help formatter and run(), which turns every outcome
of a command into its exit code.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Callable

import grpc

from ._client import DEFAULT_TARGET, DEFAULT_TIMEOUT, Document, NearDupClient, NearDupClientError
from .enums import GROUPINGS, METRICS

# The exit codes of `neardup` and `neardup-client`, the one table both follow (README "Exit codes").
EXIT_OK = 0
#: The command could not do its work: a call failed (the server refused it, or could not be reached), a store or
#: an address cannot be used, an input file cannot be read or holds a malformed line (`--jsonl`, `index --strict`).
EXIT_FAILED = 1
#: The command line is wrong: an unknown command or option, a value of the wrong type or out of range, options
#: that do not go together. Nothing was done.
EXIT_USAGE = 2
#: `neardup index` wrote the store but skipped malformed lines, each named on stderr; or `neardup pairs` /
#: `neardup cluster` verified only the --max-candidates best candidates of some articles (counted on stderr).
EXIT_PARTIAL = 3
#: Interrupted (Ctrl-C, SIGINT): 128 + 2, what a shell reports for a command SIGINT ended.
EXIT_INTERRUPTED = 130
#: The reader closed stdout before everything was written (`neardup info | head -1`): 128 + 13, what a shell
#: reports for a command SIGPIPE ended. Nothing more is written and there is no traceback.
EXIT_BROKEN_PIPE = 141


class UsageError(Exception):
    """The command line is wrong, found after parsing (options that do not go together): EXIT_USAGE."""


class CommandFailed(Exception):
    """The command could not do its work: EXIT_FAILED."""


def error_line(error: object) -> str:
    """Every command-line error is one line on stderr."""
    return f"neardup: error: {' '.join(str(error).split())}"


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error, naming the help to read; EXIT_USAGE."""

    def error(self, message: str):
        print(f"{error_line(message)} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default, except where there is none (None: off unless given; the help says what
    then) and for on/off flags."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


#: Adds a command's options to its parser and sets `func`, which returns an exit code (None for EXIT_OK).
AddArguments = Callable[[argparse.ArgumentParser], None]


def add_command(subparsers, name: str, summary: str, add_arguments: AddArguments | None) -> argparse.ArgumentParser:
    """The parser of one command; without add_arguments only its name and summary (for the list of commands)."""
    parser = subparsers.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".",
                                   formatter_class=HelpFormatter)
    if add_arguments is not None:
        add_arguments(parser)
        parser.set_defaults(command_parser=parser)
    return parser


def run(parser: argparse.ArgumentParser, argv: list[str] | None,
        failures: tuple[type[BaseException], ...] = ()) -> int:
    """Parses argv, runs the command's func and returns its exit code; every error is one line on stderr.
    `failures` are further exception classes that mean EXIT_FAILED (the server's domain errors)."""
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # so that a closed pipe shows here, not in the interpreter's flush at exit
        return code or EXIT_OK
    except UsageError as error:
        args.command_parser.error(str(error))
    except (CommandFailed, NearDupClientError, *failures) as error:
        print(error_line(error), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _discard_stdout() -> None:
    """Points stdout at /dev/null, so that the interpreter's own flush at exit does not fail on the pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is no file (an in-process capture): nothing to flush at exit
        pass


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
    except json.JSONDecodeError as error:
        raise ValueError(f"bad JSON ({error.msg}: column {error.colno})") from None
    except ValueError as error:  # a number too long to convert
        raise ValueError(f"bad JSON ({error})") from None
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


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=os.environ.get(TARGET_ENV, DEFAULT_TARGET),
                        help=f"HOST:PORT of the server; ${TARGET_ENV} overrides the default")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per call")
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
    _common(parser)
    parser.add_argument("ids", nargs="*", metavar="ID", help="stored article ids in rank order (or --jsonl)")
    parser.add_argument("--jsonl", metavar="FILE",
                        help="the result set as JSON Lines (id, optional text and lang), - for stdin; instead of IDs")
    parser.add_argument("--threshold", type=float,
                        help="similarity in [0, 1] from which a result is a duplicate (default: the server's)")
    parser.add_argument("--metric", choices=METRICS,
                        help="containment: shared shingles over the shorter text's; jaccard: over the union; "
                             "hamming: 1 - differing bits / 64 of a simhash store's fingerprints, its only metric "
                             "(default: the server's)")
    parser.add_argument("--grouping", choices=GROUPINGS,
                        help="greedy: drop a result only as a duplicate of a kept one; components: transitive "
                             "groups, the best-ranked member kept (default: the server's)")
    parser.set_defaults(func=_dedup)


def _add_similar_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Ask a server for the stored articles most similar to a stored one (ID) or to a text "
                          "(--text FILE), over the whole store. Prints JSON: matches (id, similarity) best first, "
                          "never the query itself; exact; and the threshold, metric and top_k applied.")
    _common(parser)
    parser.add_argument("id", nargs="?", metavar="ID", help="a stored article's id (or --text)")
    parser.add_argument("--text", metavar="FILE", help="search with this file's UTF-8 text, - for stdin; instead of ID")
    parser.add_argument("--lang", help="stemming language of --text (default: the store's)")
    parser.add_argument("--top-k", type=int, metavar="N", help="the most matches to print (default: the server's, 10)")
    parser.add_argument("--threshold", type=float,
                        help="similarity in [0, 1] a match reaches (default: the server's)")
    parser.add_argument("--metric", choices=METRICS,
                        help="containment: shared shingles over the shorter text's; jaccard: over the union; "
                             "hamming: 1 - differing bits / 64 of a simhash store's fingerprints, its only metric "
                             "(default: the server's)")
    parser.set_defaults(func=_similar)


def _add_info_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Print JSON about a server: its store's article count and generation, sketch "
                          "configuration, limits, defaults and version.")
    _common(parser)
    parser.set_defaults(func=_info)


#: This module's commands: name → (one-line help, add_arguments). `neardup` mounts them as its own.
COMMANDS: dict[str, tuple[str, AddArguments]] = {
    "dedup": ("ask a server which results of a result set to keep", _add_dedup_arguments),
    "similar": ("search a server's store for near-duplicates of an id or a text", _add_similar_arguments),
    "info": ("a server's store size, sketch configuration, limits and defaults", _add_info_arguments),
}


def _credentials(args) -> grpc.ChannelCredentials | None:
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


def _call(args, method: Callable[[NearDupClient], object]):
    """One call; a server that cannot be reached is named, with the likely cause."""
    token = args.token or os.environ.get(TOKEN_ENV) or None
    try:
        with NearDupClient(args.target, timeout=args.timeout, token=token, credentials=_credentials(args)) as client:
            return method(client)
    except NearDupClientError as error:
        if error.code == grpc.StatusCode.UNAVAILABLE:
            raise CommandFailed(f"{error}; is `neardup serve` running on {args.target}?") from None
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
    if args.top_k is not None and args.top_k < 1:
        raise UsageError(f"--top-k must be at least 1, got {args.top_k}")
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


def _info(args) -> int:
    print(json.dumps(dataclasses.asdict(_call(args, NearDupClient.info)), indent=2))
    return EXIT_OK


def build_parser(prog: str = "neardup-client") -> OneLineParser:
    parser = OneLineParser(prog=prog, description="Ask a neardup server (`neardup serve`) from a shell.")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    for name, (summary, add_arguments) in COMMANDS.items():
        add_command(subparsers, name, summary, add_arguments)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the standalone client (`neardup-client`); `neardup dedup`, `similar` and `info` run the same
    code."""
    return run(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
