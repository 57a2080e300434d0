"""`neardup ui`: the web page (neardup/ui) for a running server, until SIGTERM or Ctrl-C (then exit code 0)."""
from __future__ import annotations

import argparse
import logging
import signal
import sys

from neardup_client.cli import add_connection_arguments, connect
from neardup_client.cli_framework import CommandFailed

DEFAULT_PORT = 8080


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve a web page for a running `neardup serve`: a result set's groups with a threshold slider, the "
        "passages two documents share (Explain), the store's configuration (Info) and a search (FindSimilar). "
        "It calls the server with the token and TLS options given here, and has no login of its own: keep it on "
        "loopback (the default) unless everyone who can reach --host may use the server.")
    add_connection_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address the page listens on; 0.0.0.0 or :: for all")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port the page listens on; 0 picks a free one")
    parser.set_defaults(func=_run, timeout=10.0)  # an Explain of long texts takes longer than a Dedup


class _Stop(Exception):
    """SIGTERM: leave serve_forever."""


def _stop(_signum, _frame) -> None:
    raise _Stop


def _run(args) -> int:
    from ..ui.app import UiServer

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    client = connect(args)
    try:
        server = UiServer(args.host, args.port, client)
    except OSError as error:
        client.close()
        raise CommandFailed(f"cannot listen on {args.host}:{args.port}: {error.strerror} (is the port in use?)") \
            from None
    print(f"neardup ui: {server.url} (server {args.target})", file=sys.stderr, flush=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except (_Stop, KeyboardInterrupt):
        pass
    finally:
        server.server_close()
        client.close()
    return 0
