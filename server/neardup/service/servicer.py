"""The NearDup servicer: thin. Decode, call the engine, encode; errors become status codes in one place.

Every handler receives the raw request bytes: Dedup looks its answer up in the session cache by those
bytes before decoding anything, and a malformed message is an INVALID_ARGUMENT, not an INTERNAL error.
"""
from __future__ import annotations

import logging

import grpc
from google.protobuf.message import DecodeError
from neardup_client.v1 import neardup_pb2 as pb

from ..cache import SessionCache
from ..changefeed import ChangeFeed
from ..engine import Deduplicator, DedupParams, Limits
from ..errors import ConfigMismatch, InvalidArgument, NearDupError, StoreUnavailable, TooLarge
from ..store.base import SketchStore
from ..view import SketchView
from . import converters

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["NearDup"].full_name
log = logging.getLogger("neardup.serve")

STATUS_CODES = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    TooLarge: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ConfigMismatch: grpc.StatusCode.FAILED_PRECONDITION,
    StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
}
# Appending a field to a serialized message overrides it: a cached answer is the stored bytes plus this.
_CACHED_FLAG = pb.DedupResponse(cached=True).SerializeToString()


def status_code(error: NearDupError) -> grpc.StatusCode:
    for error_type, code in STATUS_CODES.items():
        if isinstance(error, error_type):
            return code
    return grpc.StatusCode.INVALID_ARGUMENT


def _decode(message_type, request_bytes: bytes):
    try:
        return message_type.FromString(request_bytes)
    except DecodeError:
        raise InvalidArgument(f"malformed {message_type.DESCRIPTOR.name}: not a valid protobuf message") from None


class NearDupServicer:
    def __init__(self, engine: Deduplicator, feed: ChangeFeed, cache: SessionCache,
                 defaults: DedupParams = DedupParams()):
        self.engine = engine
        self.feed = feed
        self.cache = cache
        self.defaults = defaults

    @classmethod
    def for_store(cls, store: SketchStore, limits: Limits, cache_size: int, cache_ttl: float) -> "NearDupServicer":
        """The request path of one process: change feed, in-memory sketch view, session cache, engine."""
        feed = ChangeFeed(store)
        engine = Deduplicator(store, limits, SketchView(store, feed))
        return cls(engine, feed, SessionCache(feed, cache_size, cache_ttl))

    def Dedup(self, request_bytes: bytes, context) -> bytes:
        now = self.feed.refresh()
        answer = self.cache.get(request_bytes, now)
        if answer is not None:
            return answer + _CACHED_FLAG
        request = _decode(pb.DedupRequest, request_bytes)
        params = converters.dedup_params(request, self.defaults)
        if request.ids and request.documents:
            raise InvalidArgument("set either ids or documents in a DedupRequest, not both")
        if request.documents:
            self.engine.check_config(converters.request_sketch_config(request))
            outcome = self.engine.dedup_documents([converters.document(d) for d in request.documents], params)
        else:
            outcome = self.engine.dedup_ids(list(request.ids), params)
        answer = converters.dedup_response(outcome, params).SerializeToString()
        self.cache.put(request_bytes, answer, outcome.read_ids, now)
        return answer

    def Upsert(self, request_bytes: bytes, context) -> bytes:
        request = _decode(pb.UpsertRequest, request_bytes)
        self.engine.check_config(converters.request_sketch_config(request))
        upserted, generation = self.engine.upsert([converters.document(d) for d in request.documents])
        return pb.UpsertResponse(upserted=upserted, generation=generation).SerializeToString()

    def Delete(self, request_bytes: bytes, context) -> bytes:
        request = _decode(pb.DeleteRequest, request_bytes)
        deleted, generation = self.engine.delete(list(request.ids))
        return pb.DeleteResponse(deleted=deleted, generation=generation).SerializeToString()

    def Info(self, request_bytes: bytes, context) -> bytes:
        _decode(pb.InfoRequest, request_bytes)
        return converters.info_response(self.engine.info()).SerializeToString()


def _handler(method):
    """Runs one RPC, mapping domain errors to their status code and anything else to INTERNAL (logged)."""

    def handle(request_bytes: bytes, context):
        try:
            return method(request_bytes, context)
        except NearDupError as error:
            code, details = status_code(error), str(error)
        except Exception:  # a bug: keep serving, tell the caller, keep the traceback
            log.exception("internal error in %s", method.__name__)
            code, details = grpc.StatusCode.INTERNAL, "internal error; see the server log"
        context.abort(code, details)

    return grpc.unary_unary_rpc_method_handler(handle)


def add_to_server(servicer: NearDupServicer, server: grpc.Server) -> None:
    methods = {name: _handler(getattr(servicer, name)) for name in ("Dedup", "Upsert", "Delete", "Info")}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, methods),))
