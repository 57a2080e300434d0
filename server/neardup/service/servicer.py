"""The NearDup servicer: thin. Decode, call the served store's operation (runtime/), encode; errors become status
codes in one place.

It does not subclass the generated servicer base: add_to_server registers raw-bytes handlers (no deserializer),
for speed. Dedup looks its answer up in the session cache by those bytes before decoding anything, the compiled
wire reader reads the usual request without a message object, and a malformed message is an INVALID_ARGUMENT,
not an INTERNAL error. The path of one request: docs/architecture.md.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Iterator

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from neardup_client.messages import WORKER_METADATA
from neardup_client.v1 import neardup_pb2 as pb

from ..core.errors import ConfigMismatch, InvalidArgument, NearDupError, NotFound, StoreUnavailable, TooLarge
from ..runtime.deduplicator import DedupOutcome, Deduplicator
from ..runtime.documents import RequestDocument
from ..runtime.explainer import Explainer
from ..runtime.params import DedupParams, Limits
from ..runtime.served_store import ServedStore
from ..runtime.similar_search import SimilarSearch
from ..runtime.writer import Writer
from ..runtime.view import LiveView, Reading
from ..store.base import SketchStore
from . import converters

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["NearDup"].full_name
log = logging.getLogger("neardup.serve")

DEFAULT_MAX_STREAMS = 8
STATUS_CODES = {
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    TooLarge: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ConfigMismatch: grpc.StatusCode.FAILED_PRECONDITION,
    StoreUnavailable: grpc.StatusCode.UNAVAILABLE,
    NotFound: grpc.StatusCode.NOT_FOUND,
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
    def __init__(self, served: ServedStore, view: LiveView, defaults: DedupParams | None = None,
                 max_streams: int = DEFAULT_MAX_STREAMS):
        #: The served store's operations, one per RPC: Dedup, FindSimilar, Explain, Upsert and Delete; Info.
        self.served = served
        self.deduplicator = Deduplicator(served)
        self.search = SimilarSearch(served)
        self.explainer = Explainer(served)
        self.writer = Writer(served)
        self.view = view
        #: What a request leaves unset gets: the store's defaults (by its sketch kind), as Info reports them.
        self.defaults = defaults or served.defaults
        self.streams = StreamSlots(max_streams)
        #: Told (status code name, seconds) for each DedupStream message answered (metrics set it).
        self.observe_stream_message: Callable[[str, float], None] | None = None
        #: Told, once per Dedup (unary or streamed), whether the session cache answered it (metrics set it).
        self.count_cache_lookup: Callable[[bool], None] = _ignore

    @classmethod
    def for_store(cls, store: SketchStore, limits: Limits, cache_size: int, cache_ttl: float,
                  max_streams: int = DEFAULT_MAX_STREAMS, search_index: bool | str = False,
                  search_index_file: str | None = None) -> "NearDupServicer":
        """The request path of one process: the live view of the store (sketches, session cache, the search index
        in memory if asked for: "memory", or "shared" mapping `search_index_file`) and the store's operations."""
        return cls(ServedStore(store, limits), LiveView(store, cache_size, cache_ttl, search_index=search_index,
                                                         search_index_file=search_index_file), max_streams=max_streams)

    def Dedup(self, request_bytes: bytes, context) -> bytes:
        # The usual request (ids, the server's parameters) is read by the compiled wire reader, first: the view
        # then reads the sketches it lacks with the generation (one round trip to a Redis store). The rest
        # decodes through the protobuf runtime, whose errors are INVALID_ARGUMENT.
        plain = converters.plain_dedup_request(request_bytes)
        reading = self.view.read(plain[0] if plain is not None else ())
        answer = reading.cached(request_bytes)
        if answer is not None:
            self.count_cache_lookup(True)
            return answer + _CACHED_FLAG
        if plain is not None:
            request = None
            ids, tag, key = plain
        else:
            try:
                request = _decode(pb.DedupRequest, request_bytes)
            except InvalidArgument:
                self.count_cache_lookup(False)
                raise
            tag, key = request.tag, request_bytes
            # The cache holds untagged answers under canonical bytes (a tag, or a field written with its default
            # value, would make the same result set another key).
            if tag or request.ByteSize() != len(request_bytes):
                request.ClearField("tag")
                key = request.SerializeToString()
        tag_bytes = converters.tag_field(tag)  # goes on last: a later field wins
        if key is not request_bytes:
            answer = reading.cached(key)
            if answer is not None:
                self.count_cache_lookup(True)
                return answer + _CACHED_FLAG + tag_bytes
        self.count_cache_lookup(False)
        if request is None:
            params, outcome = self.defaults, self.deduplicator.dedup_ids(ids, self.defaults, reading,
                                                                             ids_checked=True)
        else:
            params, outcome = self._outcome(request, reading)
        answer = converters.dedup_response(outcome, params)
        reading.remember(key, answer, outcome.read_ids)
        return answer + tag_bytes

    def _outcome(self, request: pb.DedupRequest, reading: Reading) -> tuple[DedupParams, DedupOutcome]:
        params = converters.dedup_params(request, self.defaults)
        if request.ids and request.documents:
            raise InvalidArgument("set either ids or documents in a DedupRequest, not both", "documents")
        if request.documents:
            self.served.check_config(converters.request_sketch_config(request))
            documents = [converters.document(d, f"documents[{position}]")
                         for position, d in enumerate(request.documents)]
            return params, self.deduplicator.dedup_documents(documents, params, reading)
        return params, self.deduplicator.dedup_ids(list(request.ids), params, reading)

    def DedupStream(self, request_iterator: Iterator[bytes], context) -> Iterator[bytes]:
        """Dedup per message, answers in order; a failed message is answered with its status, the stream goes on."""
        if not self.streams.acquire():
            if not self.streams.limit:
                raise TooLarge("DedupStream is off on this server (--max-streams 0); use unary Dedup",
                               "DedupStream", 0)
            raise TooLarge(f"this worker already serves {self.streams.limit} DedupStreams (--max-streams); "
                           "close one, use unary Dedup, or start the server with more", "DedupStream",
                           self.streams.limit)
        observe, clock = self.observe_stream_message, time.perf_counter
        try:
            # The response headers go out now, not with the first answer: a client may wait for them before it
            # writes, so that a refused stream reaches it as the status above (grpc.aio reports a write that meets
            # an ended call as INTERNAL and loses the status: grpc/grpc#36066).
            context.send_initial_metadata(())
            for request_bytes in request_iterator:
                started = clock()
                code = "OK"
                try:
                    answer = self.Dedup(request_bytes, context)
                except Exception as error:  # noqa: BLE001 (every failure is this message's answer)
                    status, details = _status_of(error, "DedupStream")
                    code = status.name
                    answer = pb.DedupResponse(tag=_tag_of(request_bytes), error=pb.Status(
                        code=status.value[0], message=details)).SerializeToString()
                if observe is not None:
                    observe(code, clock() - started)
                yield answer
        finally:
            self.streams.release()

    def Upsert(self, request_bytes: bytes, context) -> bytes:
        request = _decode(pb.UpsertRequest, request_bytes)
        self.served.check_config(converters.request_sketch_config(request))
        upserted, generation = self.writer.upsert([converters.document(d, f"documents[{position}]")
                                                   for position, d in enumerate(request.documents)])
        return pb.UpsertResponse(upserted=upserted, generation=generation).SerializeToString()

    def Delete(self, request_bytes: bytes, context) -> bytes:
        request = _decode(pb.DeleteRequest, request_bytes)
        deleted, generation = self.writer.delete(list(request.ids))
        return pb.DeleteResponse(deleted=deleted, generation=generation).SerializeToString()

    def FindSimilar(self, request_bytes: bytes, context) -> bytes:
        """Searches the store as it is now (a snapshot of the latest write batch of any worker), or the view's
        search index in memory when the server keeps one, once the view caught up with the store."""
        request = _decode(pb.FindSimilarRequest, request_bytes)
        params = converters.similar_params(request, self.defaults)
        query = converters.similar_query(request, request_bytes)
        if isinstance(query, RequestDocument):
            self.served.check_config(converters.request_sketch_config(request))
        reading = self.view.read() if self.view.search_index is not None else None
        outcome = self.search.find_similar(query, params, reading)
        return converters.similar_response(outcome, params).SerializeToString()

    def Explain(self, request_bytes: bytes, context) -> bytes:
        """A pair's similarity, decision and shared passages: stored sketches read through the view, as Dedup's."""
        request = _decode(pb.ExplainRequest, request_bytes)
        params = converters.explain_params(request, self.defaults)
        a, b = converters.explain_documents(request)
        self.served.check_config(converters.request_sketch_config(request))
        outcome = self.explainer.explain(a, b, params, self.view.read())
        return converters.explain_response(outcome, params, (a.id, b.id)).SerializeToString()

    def Info(self, request_bytes: bytes, context) -> bytes:
        _decode(pb.InfoRequest, request_bytes)
        context.set_trailing_metadata(((WORKER_METADATA, str(os.getpid())),))
        return converters.info_response(self.served.info()).SerializeToString()


class StreamSlots:
    """How many DedupStreams one worker serves at once. A sync gRPC server gives each open stream a thread for its
    whole life, so the server's pool has this many threads on top of --threads, and unary calls (health checks
    among them) are never starved by streams."""

    def __init__(self, limit: int):
        self.limit = limit
        self._free = threading.BoundedSemaphore(limit) if limit > 0 else None

    def acquire(self) -> bool:
        return self._free is not None and self._free.acquire(blocking=False)

    def release(self) -> None:
        self._free.release()


def _ignore(_hit: bool) -> None:
    pass


def _tag_of(request_bytes: bytes) -> int:
    try:
        return pb.DedupRequest.FromString(request_bytes).tag
    except DecodeError:
        return 0


def _status_of(error: Exception, method: str) -> tuple[grpc.StatusCode, str]:
    """A domain error's status code and message; anything else is a bug: INTERNAL, with the traceback logged."""
    if isinstance(error, NearDupError):
        return status_code(error), str(error)
    log.error("internal error in %s", method, exc_info=error)
    return grpc.StatusCode.INTERNAL, "internal error; see the server log"


def _error_detail(error: Exception, message: str):
    """The error as data: a google.rpc.BadRequest naming the request field at fault, or a QuotaFailure naming
    what is limited and the limit; None when the error names neither."""
    if isinstance(error, InvalidArgument) and error.field:
        return error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=error.field, description=message)])
    if isinstance(error, TooLarge) and error.subject:
        return error_details_pb2.QuotaFailure(violations=[error_details_pb2.QuotaFailure.Violation(
            subject=error.subject, description=message, quota_value=error.limit or 0)])
    return None


def _abort(context, error: Exception, method: str) -> None:
    """Ends the call with the error's status: its code and message, and its detail (_error_detail) if any."""
    code, message = _status_of(error, method)
    detail = _error_detail(error, message)
    if detail is None:
        context.abort(code, message)
    packed = any_pb2.Any()
    packed.Pack(detail)
    context.abort_with_status(rpc_status.to_status(status_pb2.Status(code=code.value[0], message=message,
                                                                      details=[packed])))


def _unary(method):
    """Runs one RPC, mapping domain errors to their status code and anything else to INTERNAL (logged)."""

    def handle(request_bytes: bytes, context):
        try:
            return method(request_bytes, context)
        except Exception as error:  # noqa: BLE001 (a bug too: keep serving, tell the caller)
            failure = error
        _abort(context, failure, method.__name__)

    return grpc.unary_unary_rpc_method_handler(handle)


def _stream(method):
    """A streaming RPC: what ends the whole stream (too many streams, a bug outside any message) is its status."""

    def handle(request_iterator, context):
        try:
            yield from method(request_iterator, context)
        except grpc.RpcError:
            return  # raised by the request iterator: the call is already over (cancelled, deadline, too large)
        except Exception as error:  # noqa: BLE001
            _abort(context, error, method.__name__)

    return grpc.stream_stream_rpc_method_handler(handle)


#: The service's RPCs, from the proto's service descriptor (the one contract): a method the proto adds and the
#: servicer lacks stops the server at start instead of answering UNIMPLEMENTED.
_RPCS = pb.DESCRIPTOR.services_by_name["NearDup"].methods
UNARY_METHODS = tuple(rpc.name for rpc in _RPCS if not rpc.client_streaming and not rpc.server_streaming)
STREAM_METHODS = tuple(rpc.name for rpc in _RPCS if rpc.client_streaming and rpc.server_streaming)
if len(UNARY_METHODS) + len(STREAM_METHODS) != len(_RPCS):
    raise ImportError("the proto has an RPC that streams one way only; the servicer serves unary and bidirectional")


def add_to_server(servicer: NearDupServicer, server: grpc.Server) -> None:
    methods = {name: _unary(getattr(servicer, name)) for name in UNARY_METHODS}
    methods.update((name, _stream(getattr(servicer, name))) for name in STREAM_METHODS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, methods),))
