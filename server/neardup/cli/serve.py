"""`neardup serve`'s options, read into the server bootstrap's ServeOptions (service/server.py)."""
from __future__ import annotations

import argparse
import dataclasses
import logging

from neardup_client.cli_framework import UsageError

from ..core.errors import InvalidArgument
from ..runtime.cache import DEFAULT_MAXSIZE, DEFAULT_TTL
from ..runtime.params import DEFAULT_MAX_RESULT_SET
from ..service.auth import TOKEN_ENV, load_token
from ..service.server import (DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_PORT, DEFAULT_THREADS, SEARCH_INDEXES, ServeOptions,
                              TlsConfig, serve, stop_on_signals)
from ..service.servicer import DEFAULT_MAX_STREAMS
from ..store import STORE_HELP, default_store_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Serve the neardup.v1.NearDup gRPC service (with health checking and reflection) from "
                          "a store, until SIGTERM or Ctrl-C (then exit code 0).")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on; 0.0.0.0 or :: for all")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help="port to listen on; 0 picks a free port (one worker only)")
    parser.add_argument("--workers", type=int, default=1, help="server processes sharing the port")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="RPC threads per worker")
    parser.add_argument("--max-streams", type=int, default=DEFAULT_MAX_STREAMS,
                        help="DedupStreams one worker serves at once, each with a thread of its own on top of "
                             "--threads; 0 refuses DedupStream (default: %(default)s)")
    parser.add_argument("--max-message-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES,
                        help="largest request or answer, in bytes (gzip-compressed messages: inflated); larger "
                             "ones get RESOURCE_EXHAUSTED")
    parser.add_argument("--max-result-set", type=int, default=DEFAULT_MAX_RESULT_SET,
                        help="most results (or documents) in one request")
    parser.add_argument("--cache-size", type=int, default=DEFAULT_MAXSIZE,
                        help="session cache entries per worker; 0 disables the cache")
    parser.add_argument("--cache-ttl", type=float, default=DEFAULT_TTL,
                        help="seconds a session cache entry lives; 0 means no expiry")
    parser.add_argument("--grace", type=float, default=10.0,
                        help="seconds in-flight calls may take to finish after SIGTERM")
    parser.add_argument("--drain", type=float, default=0.0,
                        help="seconds to keep serving after SIGTERM with health NOT_SERVING, so that a load "
                             "balancer moves traffic away before the server stops taking calls")
    parser.add_argument("--search-index", choices=SEARCH_INDEXES, default=SEARCH_INDEXES[0],
                        help="where FindSimilar searches: `store` reads the store's postings for each call; `memory` "
                             "keeps a copy of the sketches and postings in each worker, built at start and kept "
                             "current by the change feed (memory per article and worker: the docs' Performance page; bottom-K stores); "
                             "`shared` maps one index file in every worker (--search-index-file; built from the "
                             "store first if there is none), each keeping only the writes since the file in its own "
                             "memory (default: %(default)s)")
    parser.add_argument("--search-index-file", metavar="PATH",
                        help="the index file of --search-index shared (`neardup search-index` builds it) "
                             "(default: search-index in an LMDB store's directory; a Redis store needs one)")
    parser.add_argument("--worker-ports", type=int, metavar="PORT",
                        help="worker i (from 0) also listens on PORT + i, its own address: a client given every "
                             "worker's address (neardup-client --target 127.0.0.1:PORT,127.0.0.1:PORT+1; or a gRPC "
                             "channel with the round_robin policy) spreads its calls over all workers, where the "
                             "shared --port hands each connection to one worker (default: off)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve Prometheus metrics of all workers at http://HOST:PORT/metrics (plain HTTP, "
                             "no token; 0 picks a free port, logged) (default: off)")
    security = parser.add_argument_group("security (default: plaintext, no token)")
    security.add_argument("--tls-cert", metavar="FILE", help="PEM certificate chain of the server; turns on TLS")
    security.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert (unencrypted)")
    security.add_argument("--tls-client-ca", metavar="FILE",
                          help="PEM CA certificates: clients must present a certificate they signed (mutual TLS)")
    security.add_argument("--token-file", metavar="FILE",
                          help=f"file holding a bearer token every RPC but health checks must carry "
                               f"(default: ${TOKEN_ENV}, if set)")
    parser.set_defaults(func=_run)


def _run(args) -> int:
    stop_on_signals()  # from now on SIGTERM/SIGINT stop the server cleanly, even while it starts
    # option values that do not go together are usage errors (exit code 2); files that cannot be used are not
    if (args.tls_cert or args.tls_key or args.tls_client_ca) and not (args.tls_cert and args.tls_key):
        raise UsageError("TLS needs both --tls-cert and --tls-key; --tls-client-ca only adds client certificates "
                         "to them")
    try:
        options = ServeOptions(
            store=args.store, host=args.host, port=args.port, workers=args.workers, threads=args.threads,
            max_streams=args.max_streams, max_message_bytes=args.max_message_bytes,
            max_result_set=args.max_result_set,
            cache_size=args.cache_size, cache_ttl=args.cache_ttl, grace=args.grace, drain=args.drain,
            metrics_port=args.metrics_port, search_index=args.search_index, worker_ports=args.worker_ports,
            search_index_file=args.search_index_file)
    except InvalidArgument as error:
        raise UsageError(str(error)) from None
    options = dataclasses.replace(options, tls=TlsConfig.load(args.tls_cert, args.tls_key, args.tls_client_ca),
                                  token=load_token(args.token_file))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return serve(options)
