"""`neardup COMMAND`: each command is a module with add_parser(subparsers) that sets `func`; this file only
dispatches and turns domain errors into one line on stderr."""
from __future__ import annotations

import argparse
import sys

from neardup_client import NearDupClientError
from neardup_client import cli as client_commands

from . import __version__, indexer
from .errors import NearDupError
from .service import command as serve_command

COMMANDS = [indexer, serve_command, client_commands]

EXIT_ERROR, EXIT_INTERRUPTED = 2, 130


class _Parser(argparse.ArgumentParser):
    """Usage mistakes are one line, like every other error, naming the help to read; exit code 2."""

    def error(self, message: str):
        print(f"neardup: error: {' '.join(message.split())} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_ERROR)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="neardup", description="Near-duplicate detection for ranked result sets.")
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (NearDupError, NearDupClientError) as error:
        print(f"neardup: error: {' '.join(str(error).split())}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
