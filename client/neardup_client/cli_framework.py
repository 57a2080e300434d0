"""The command-line framework both command lines share (`neardup`, which mounts the client's commands, and
`neardup-client`): the exit codes, one-line errors, the help formatter, and run(), which turns every outcome of a
command into its exit code. It lives in the client package because the client does not depend on the server's."""
from __future__ import annotations

import argparse
import os
import sys
import textwrap
from typing import Callable

from ._client import NearDupClientError

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
    then), for on/off flags, and where the help says it in its own words already ("(default: ...)")."""

    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool) or "(default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)

    def _split_lines(self, text, width):
        """Lines broken between words only: a name such as neardup-store or an option such as --max-candidates
        stays whole (argparse's own breaks at hyphens)."""
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


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


def checked(convert, check, refused: tuple[type[Exception], ...] = (ValueError,)):
    """An argparse type: convert(text), then check(value) raises one of `refused` when the value is refused, so a
    bad option is a usage error (EXIT_USAGE) before anything is read or sent."""
    def parse(text: str):
        value = convert(text)
        try:
            check(value)
        except refused as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return value
    parse.__name__ = convert.__name__  # argparse names it in "invalid int value"
    return parse


def at_least(minimum: int):
    """An argparse type: an integer of at least `minimum`."""
    def check(value: int) -> None:
        if value < minimum:
            raise ValueError(f"must be at least {minimum}, got {value}")
    return checked(int, check)


def positive(value: float) -> None:
    if not value > 0:  # NaN too
        raise ValueError(f"must be more than 0, got {value}")


def not_negative(value: float) -> None:
    if not value >= 0:  # NaN too
        raise ValueError(f"must be at least 0, got {value}")


def fraction(value: float) -> None:
    if not 0.0 <= value <= 1.0:  # NaN too
        raise ValueError(f"must be in [0, 1], got {value}")


def target(text: str) -> str:
    """An argparse type: a server address. HOST:PORT must have a port in 1..65535, and so must each of several
    comma-separated IP:PORT addresses (a server's per-worker ports); other gRPC targets (unix:PATH, dns:///NAME)
    pass as they are."""
    from ._client import channel_target
    try:
        channel_target(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    for address in text.split(",") if "," in text and ":///" not in text else [text]:
        host, colon, port = address.rpartition(":")
        if colon and host and port.isdigit() and not 1 <= int(port) <= 65535:
            raise argparse.ArgumentTypeError(f"port must be in 1..65535, got {port}")
        if not address or (colon and host and not port):
            raise argparse.ArgumentTypeError(f"give HOST:PORT, got {text!r}")
    return text

