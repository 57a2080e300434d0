"""`neardup serve`: the command line of the server bootstrap."""
from __future__ import annotations

import argparse
import logging

from ..cache import DEFAULT_MAXSIZE, DEFAULT_TTL
from ..engine import DEFAULT_MAX_RESULT_SET
from ..store import default_store_path
from .server import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PORT, ServeOptions, serve


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "serve", help="serve the Dedup gRPC service from a store",
        description="Serve the neardup.v1.NearDup gRPC service (with health checking and reflection).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--store", default=default_store_path(), help="store directory (env NEARDUP_STORE)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on; 0.0.0.0 or :: for all")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port (one worker only)")
    parser.add_argument("--workers", type=int, default=1, help="server processes sharing the port")
    parser.add_argument("--threads", type=int, default=8, help="RPC threads per worker")
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    parser.add_argument("--max-result-set", type=int, default=DEFAULT_MAX_RESULT_SET,
                        help="most results (or documents) in one request")
    parser.add_argument("--cache-size", type=int, default=DEFAULT_MAXSIZE,
                        help="session cache entries per worker; 0 disables the cache")
    parser.add_argument("--cache-ttl", type=float, default=DEFAULT_TTL, help="seconds; 0 means no expiry")
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds in-flight calls may take to finish after SIGTERM")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return serve(ServeOptions(
        store=args.store, host=args.host, port=args.port, workers=args.workers, threads=args.threads,
        max_message_bytes=args.max_message_bytes, max_result_set=args.max_result_set,
        cache_size=args.cache_size, cache_ttl=args.cache_ttl, grace=args.grace))
