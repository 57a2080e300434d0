"""`neardup COMMAND`: each command is a module with add_parser(subparsers) that sets `func`; this file only
dispatches and turns domain errors into one line on stderr."""
from __future__ import annotations

import sys

from neardup_client import NearDupClientError
from neardup_client import cli as client_commands
from neardup_client.cli import EXIT_ERROR, OneLineParser, error_line

from . import __version__, indexer
from .errors import NearDupError
from .service import command as serve_command

COMMANDS = [indexer, serve_command, client_commands]

EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="neardup", description="Near-duplicate detection for ranked result sets.")
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (NearDupError, NearDupClientError) as error:
        print(error_line(error), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
