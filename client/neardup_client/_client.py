"""The blocking client of neardup.v1.NearDup (the asyncio one is _async_client.py). One channel per client, reused for every call;
UNAVAILABLE is retried by gRPC's own retry policy (with backoff), so a restarting server is ridden over.

Every call that fails raises NearDupClientError with the gRPC status code and the server's message, except in
DedupStream, where the failure of one result set is that result set's answer (a NearDupClientError yielded, not
raised) and only what ends the whole stream is raised."""
from __future__ import annotations

import asyncio
import collections
import ipaddress
import json
import threading
from typing import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence, Union

import grpc

from . import messages
from .messages import DedupResult, Document, ExplainResult, Info, SimilarResult
from .v1 import neardup_pb2 as pb, neardup_pb2_grpc

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_TIMEOUT = 2.0
_SERVICE = pb.DESCRIPTOR.services_by_name["NearDup"].full_name
_RETRY_POLICY = {"methodConfig": [{
    "name": [{"service": _SERVICE}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"]},
}]}


class NearDupClientError(Exception):
    """A failed call: the gRPC status code and the server's message (which says what to fix)."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def unreachable(error: NearDupClientError | str, target: str) -> str:
    """What to say of a server that cannot be reached: the error and the likely cause. The commands and the web
    page (`neardup ui`: its start and its answers) say it in these words."""
    return f"{error}; is `neardup serve` running on {target}?"


#: gRPC status code number (as in DedupResponse.error) → grpc.StatusCode
_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


class _Deadline:
    """Cancels a streaming call once its timeout has passed. gRPC ends the call at its deadline too, but a
    DedupStream was seen waiting for answers past it, with the server idle after a worker restart (grpcio 1.85):
    a stream's timeout is the caller's bound on the wait, so the clients keep it as well. `loop`: an asyncio call's
    event loop, which then runs the timer (the blocking client's runs on a thread of its own)."""

    def __init__(self, call, timeout: float | None, loop: asyncio.AbstractEventLoop | None = None):
        self.expired = False
        self._call = call
        self._timeout = timeout
        self._timer = None
        if timeout is not None and loop is not None:
            self._timer = loop.call_later(timeout, self._expire)
        elif timeout is not None:
            self._timer = threading.Timer(timeout, self._expire)
            self._timer.daemon = True
            self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        self._call.cancel()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def error(self, error: grpc.RpcError | None = None) -> NearDupClientError:
        """What ended the stream: DEADLINE_EXCEEDED once the timeout passed (the cancel ends a blocking call with
        CANCELLED, and an asyncio one with CancelledError: error None), else the call's own status."""
        if self.expired or error is None:
            return NearDupClientError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                      f"the stream's timeout ({self._timeout:g} s) passed before the last answer")
        return NearDupClientError(error.code(), error.details())


#: What dedup_stream yields per result set: its answer, or why the server refused it.
StreamAnswer = Union[DedupResult, NearDupClientError]


class StreamSide:
    """The client's side of one DedupStream: its requests, made lazily from the caller's result sets with tag =
    index, and the result sets sent but not yet answered, which read the answers in order and check their tags.

    The requests are consumed by gRPC (a thread of its own, or a task), which would cancel the call on an
    exception and log it: a result set that cannot be converted, or a caller's iterable that raises, ends the
    requests instead, and the exception is raised to the caller once the result sets before it are answered."""

    def __init__(self, threshold: float | None, metric: str | None, grouping: str | None):
        messages.dedup_request((), threshold, metric, grouping)  # an unknown metric or grouping: ValueError now
        self._params = (threshold, metric, grouping)
        self._pending: collections.deque[tuple[int, list]] = collections.deque()  # (tag, result set) sent
        self._sent = 0
        self._failure: Exception | None = None

    def _request(self, results: Sequence[str | Document]) -> pb.DedupRequest:
        results = list(results)
        request = messages.dedup_request(results, *self._params)
        request.tag = self._sent
        self._pending.append((self._sent, results))
        self._sent += 1
        return request

    def requests(self, result_sets: Iterable[Sequence[str | Document]]) -> Iterator[pb.DedupRequest]:
        try:
            for results in result_sets:
                yield self._request(results)
        except Exception as error:  # noqa: BLE001 (raised to the caller in its turn, by finish())
            self._failure = error

    async def async_requests(self, result_sets) -> AsyncIterator[pb.DedupRequest]:
        try:
            if isinstance(result_sets, AsyncIterable):
                async for results in result_sets:
                    yield self._request(results)
            else:
                for results in result_sets:
                    yield self._request(results)
        except Exception as error:  # noqa: BLE001
            self._failure = error

    def answer(self, response: pb.DedupResponse) -> StreamAnswer:
        if not self._pending:
            raise NearDupClientError(grpc.StatusCode.INTERNAL, f"DedupStream sent an answer (tag {response.tag}) "
                                     f"after all {self._sent} result sets sent were answered")
        tag, results = self._pending.popleft()
        if response.tag != tag:
            raise NearDupClientError(grpc.StatusCode.INTERNAL, f"DedupStream answered tag {response.tag} where the "
                                     f"answer to result set {tag} (tag {tag}) was due: answers out of order")
        if response.HasField("error"):
            return NearDupClientError(_STATUS_CODES.get(response.error.code, grpc.StatusCode.UNKNOWN),
                                      response.error.message)
        return messages.dedup_result(results, response)

    def finish(self) -> None:
        """The stream ended with OK: every result set sent must have been answered."""
        if self._pending:
            raise NearDupClientError(grpc.StatusCode.INTERNAL, f"DedupStream ended without answering result sets "
                                     f"{self._pending[0][0]} to {self._pending[-1][0]}")
        if self._failure is not None:
            raise self._failure


def channel_target(target: str) -> tuple[str, bool]:
    """The gRPC target of a client's `target`, and whether calls are spread round-robin. Several addresses,
    comma-separated (`serve --worker-ports`: one per worker), become one channel with a connection to each, its
    calls taken by each in turn: one client process then uses every worker, which a single address (one connection,
    handed to one worker) does not. They must be IP:PORT ([IPv6]:PORT); any other target is passed as it is."""
    if "," not in target or ":///" in target or target.startswith(("ipv4:", "ipv6:", "unix:")):
        return target, False
    addresses = [address.strip() for address in target.split(",")]
    families = set()
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            families.add(ipaddress.ip_address(host.strip("[]")).version)
        except ValueError:
            raise ValueError(f"several addresses must each be IP:PORT, got {address!r} (for a name, give "
                             "dns:///NAME:PORT)") from None
        if not port.isdigit():
            raise ValueError(f"several addresses must each be IP:PORT, got {address!r}")
    if len(families) > 1:
        raise ValueError("several addresses must all be IPv4 or all IPv6")
    return f"ipv{families.pop()}:{','.join(addresses)}", True


def _channel_options(max_message_bytes: int, balanced: bool) -> list[tuple[str, object]]:
    config = dict(_RETRY_POLICY, loadBalancingConfig=[{"round_robin": {}}]) if balanced else _RETRY_POLICY
    return [("grpc.service_config", json.dumps(config)), ("grpc.enable_retries", 1),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes)]


class _Settings:
    """What both clients share: target, credentials, token, timeout."""

    def __init__(self, target: str, timeout: float, credentials: grpc.ChannelCredentials | None,
                 token: str | None, max_message_bytes: int):
        self.target = target
        self.timeout = timeout
        self.credentials = credentials
        self.metadata = (("authorization", f"Bearer {token}"),) if token else None
        self.channel_target, balanced = channel_target(target)
        self.options = _channel_options(max_message_bytes, balanced)

    def call_options(self, timeout: float | None) -> dict:
        return {"timeout": self.timeout if timeout is None else timeout, "metadata": self.metadata}


class NearDupClient(_Settings):
    """Blocking client. Use as a context manager or call close().

    target is HOST:PORT, or several IP:PORT addresses comma-separated (a server's per-worker ports, `neardup serve
    --worker-ports`), which the client's calls take in turn; timeout the seconds of each unary call unless a method's timeout says otherwise;
    credentials (grpc.ssl_channel_credentials) turn on TLS; token is sent as `authorization: Bearer TOKEN`.
    Creating a client does not connect: an unreachable server shows at the first call (UNAVAILABLE)."""

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 max_message_bytes: int = 16 * 1024 * 1024):
        super().__init__(target, timeout, credentials, token, max_message_bytes)
        self._channel = (grpc.secure_channel(self.channel_target, credentials, options=self.options) if credentials
                         else grpc.insecure_channel(self.channel_target, options=self.options))
        self._stub = neardup_pb2_grpc.NearDupStub(self._channel)

    def _call(self, method, request, timeout):
        try:
            return method(request, **self.call_options(timeout))
        except grpc.RpcError as error:
            raise NearDupClientError(error.code(), error.details()) from None

    def dedup(self, results: Sequence[str | Document], *, threshold: float | None = None,
              metric: str | None = None, grouping: str | None = None, timeout: float | None = None) -> DedupResult:
        """Which results of one result set to keep, and which duplicate which.

        Args:
            results: the result set in rank order: stored ids (str), or Documents carrying text or a sketch made
                with the store's configuration (a Document with only an id is read from the store), mixed freely.
            threshold: the similarity in [0, 1] from which a result is a duplicate; None: the server's default.
            metric: "containment", "jaccard" or "mutual" (a bottom-K store), "hamming" (a simhash store); None: the
                server's default.
            grouping: "greedy", "components" or "complete"; None: the server's default.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            DedupResult: per position in rank order; `keep`, `duplicates`, `groups` and `missing` read it.

        Raises:
            ValueError: an unknown metric or grouping name (before anything is sent).
            NearDupClientError: the call failed; `code` says why, `details` what to fix:
                INVALID_ARGUMENT for bad input (threshold outside [0, 1] or NaN, an empty id or one over 511 UTF-8
                bytes, malformed sketch bytes);
                RESOURCE_EXHAUSTED over a limit (more results than the server's --max-result-set, a message over
                --max-message-bytes, a text over 10 MiB);
                FAILED_PRECONDITION for a sketch of another sketch configuration (longer than the store's K), or a
                metric of the other sketch kind (hamming on a bottom-K store, containment, jaccard or mutual on a
                simhash store);
                UNAVAILABLE when the server cannot be reached after the retries (about a second), or cannot read
                its store;
                DEADLINE_EXCEEDED when the timeout passes first;
                UNAUTHENTICATED without the server's token (`token=`).
        """
        results = list(results)
        response = self._call(self._stub.Dedup, messages.dedup_request(results, threshold, metric, grouping), timeout)
        return messages.dedup_result(results, response)

    def dedup_stream(self, result_sets: Iterable[Sequence[str | Document]], *, threshold: float | None = None,
                     metric: str | None = None, grouping: str | None = None,
                     timeout: float | None = None) -> Iterator[StreamAnswer]:
        """Dedup for many result sets over one DedupStream: each result set is sent as soon as it is taken from
        result_sets (gRPC sends while the answers come back), and one item is yielded per result set, in order.
        The stream opens at the first iteration and closes when result_sets is exhausted and answered, or when
        the caller stops iterating.

        Args:
            result_sets: an iterable, lazy or endless, of result sets, each as `results` of dedup(); sent with
                tag = its index, which every answer must carry.
            threshold, metric, grouping: as for dedup(), for every result set.
            timeout: seconds for the whole stream; None (the default) sets no deadline: the client's timeout is
                for one unary call, not for a stream of unknown length.

        Yields:
            DedupResult for each result set the server answered, or a NearDupClientError (yielded, not raised)
            for one it refused, with the code dedup() would raise for it (INVALID_ARGUMENT, RESOURCE_EXHAUSTED
            for more results than --max-result-set or a text over 10 MiB, FAILED_PRECONDITION, UNAVAILABLE for a
            store it cannot read) and the server's message; the result sets after it are still answered.

        Raises:
            ValueError: an unknown metric or grouping name (raised by this call, before the stream opens).
            NearDupClientError: the whole stream failed, while iterating; `code` says why:
                RESOURCE_EXHAUSTED when the server's worker already serves its --max-streams streams, or for a
                message over --max-message-bytes;
                UNAVAILABLE when the server cannot be reached after the retries, or goes away;
                DEADLINE_EXCEEDED when the timeout passes before the last answer;
                UNAUTHENTICATED without the server's token (`token=`);
                INTERNAL when an answer carries another tag than its result set's, or the stream ends before
                every result set sent is answered (a server bug).
            Exception: whatever iterating result_sets or converting one of them raises (a TypeError for an id
                that is not a str...), once the result sets before it are answered.
        """
        stream = StreamSide(threshold, metric, grouping)
        return self._dedup_stream(stream, result_sets, timeout)

    def _dedup_stream(self, stream: StreamSide, result_sets, timeout: float | None) -> Iterator[StreamAnswer]:
        call = self._stub.DedupStream(stream.requests(result_sets), timeout=timeout, metadata=self.metadata)
        watchdog = _Deadline(call, timeout)
        try:
            for response in call:
                yield stream.answer(response)
        except grpc.RpcError as error:
            raise watchdog.error(error) from None
        finally:
            watchdog.stop()
            call.cancel()  # the caller stopped early, or an answer was wrong; nothing once the stream ended
        stream.finish()

    def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        """Adds or replaces articles, as one atomic batch (on a store sharded over Redis Cluster, atomic per shard):
        visible to the next dedup of every server worker.

        Args:
            documents: Documents with an id and text (sketched by the server) or a sketch made with the store's
                configuration.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            int: how many documents were written.

        Raises:
            NearDupClientError: the call failed, and a batch the server refused wrote nothing (but for UNAVAILABLE
                on a Redis Cluster store, below); `code` says why:
                INVALID_ARGUMENT for bad input (an empty id or one over 511 UTF-8 bytes, a Document without text
                or sketch, malformed sketch bytes);
                RESOURCE_EXHAUSTED over a limit (more documents than --max-result-set, a message over
                --max-message-bytes, a text over 10 MiB);
                FAILED_PRECONDITION for a sketch of another sketch configuration (longer than the store's K);
                UNAVAILABLE when the server cannot be reached after the retries, or cannot use its store (on a Redis
                Cluster store, during a failover, some shards' part of the batch may be written: a retry completes
                it);
                DEADLINE_EXCEEDED when the timeout passes first (the batch may still have been written);
                UNAUTHENTICATED without the server's token (`token=`).
        """
        request = pb.UpsertRequest(documents=[messages.document_message(d) for d in documents])
        return self._call(self._stub.Upsert, request, timeout).upserted

    def delete(self, ids: Iterable[str], *, timeout: float | None = None) -> int:
        """Removes articles, as one atomic batch (on a store sharded over Redis Cluster, atomic per shard); ids that
        are not stored are no error.

        Args:
            ids: the ids to remove.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            int: how many of the ids were stored. Where the server went away after the batch committed (a worker
            killed before it answered), the client's retry sends it again and this counts only the ids left.

        Raises:
            NearDupClientError: the call failed, and a batch the server refused removed nothing (but for UNAVAILABLE
                on a Redis Cluster store, below); `code` says why:
                INVALID_ARGUMENT for an empty id or one over 511 UTF-8 bytes;
                RESOURCE_EXHAUSTED for more ids than --max-result-set, or a message over --max-message-bytes;
                UNAVAILABLE when the server cannot be reached after the retries, or cannot use its store (on a Redis
                Cluster store, during a failover, some shards' part of the batch may be applied: a retry completes it,
                and its count leaves out the ids already removed);
                DEADLINE_EXCEEDED when the timeout passes first (the batch may still have been applied);
                UNAUTHENTICATED without the server's token (`token=`).
        """
        return self._call(self._stub.Delete, pb.DeleteRequest(ids=list(ids)), timeout).deleted

    def find_similar(self, id: str | None = None, *, document: Document | None = None, top_k: int | None = None,
                     threshold: float | None = None, metric: str | None = None,
                     timeout: float | None = None) -> SimilarResult:
        """The stored articles most similar to a stored one, or to a document, over the whole store.

        Args:
            id: a stored article's id, searched with its stored sketch; or else
            document: a Document with text (sketched by the server) or a sketch made with the store's
                configuration; its id may be "", and when it names a stored article that one is left out.
            top_k: the most matches to answer; None: the server's default (10).
            threshold: the similarity in [0, 1] a match reaches; None: the server's default.
            metric: "containment", "jaccard" or "mutual" (a bottom-K store), "hamming" (a simhash store); None: the
                server's default.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            SimilarResult: `matches` (id, similarity) best first, never the query itself; `exact`; and the
            threshold, metric and top_k the server applied.

        Raises:
            ValueError: neither or both of id and document, top_k below 1, or an unknown metric name (before
                anything is sent).
            NearDupClientError: the call failed; `code` says why, `details` what to fix:
                NOT_FOUND when the id is not stored;
                INVALID_ARGUMENT for bad input (threshold outside [0, 1] or NaN, an empty id or one over 511 UTF-8
                bytes, a document without text or sketch, malformed sketch bytes, an unknown language);
                RESOURCE_EXHAUSTED over a limit (top_k over the server's --max-result-set, a message over
                --max-message-bytes, a text over 10 MiB);
                FAILED_PRECONDITION when the store keeps no postings to search (Info.indexed is False), for a
                sketch of another sketch configuration (longer than the store's K), or a metric of the other
                sketch kind (as for dedup());
                UNAVAILABLE when the server cannot be reached after the retries, or cannot read its store;
                DEADLINE_EXCEEDED when the timeout passes first;
                UNAUTHENTICATED without the server's token (`token=`).
        """
        request = messages.similar_request(id, document, top_k, threshold, metric)
        return messages.similar_result(self._call(self._stub.FindSimilar, request, timeout))

    def explain(self, a: str | Document, b: str | Document, *, threshold: float | None = None,
                metric: str | None = None, timeout: float | None = None) -> ExplainResult:
        """How similar two documents are under the store's rules, whether dedup([a, b]) makes b a duplicate of a,
        and the passages of each text the other shares.

        Args:
            a, b: each a stored article's id (str: its stored sketch; the store keeps no texts, so no spans), or a
                Document with text (spans are answered for it) or a sketch made with the store's configuration.
            threshold: the similarity in [0, 1] from which b is a duplicate; None: the server's default.
            metric: "containment", "jaccard" or "mutual" (a bottom-K store), "hamming" (a simhash store); None: the
                server's default.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            ExplainResult: similarity, duplicate, the threshold and metric applied, and per document its counts
            and spans (start, end) in code points of its text: shared, sketch_shared, boilerplate; `note` says
            what could not be answered (a document without text).

        Raises:
            ValueError: an unknown metric name (before anything is sent).
            NearDupClientError: the call failed; `code` says why, `details` what to fix:
                NOT_FOUND when a document given by id is not stored;
                INVALID_ARGUMENT for bad input (threshold outside [0, 1] or NaN, a document without id or text, an
                id over 511 UTF-8 bytes, malformed sketch bytes, an unknown language);
                RESOURCE_EXHAUSTED over a limit (a text over 10 MiB, a message over --max-message-bytes);
                FAILED_PRECONDITION on an items store, for a metric of the other sketch kind, or a sketch of
                another sketch configuration;
                UNAVAILABLE, DEADLINE_EXCEEDED, UNAUTHENTICATED as for dedup().
        """
        request = messages.explain_request(a, b, threshold, metric)
        return messages.explain_result(self._call(self._stub.Explain, request, timeout))

    def info(self, *, timeout: float | None = None) -> Info:
        """The store's size and sketch configuration, the server's limits and defaults.

        Args:
            timeout: seconds for this call; None: the client's timeout.

        Raises:
            NearDupClientError: the call failed; `code` says why:
                UNAVAILABLE when the server cannot be reached after the retries, or cannot read its store;
                DEADLINE_EXCEEDED when the timeout passes first;
                UNAUTHENTICATED without the server's token (`token=`).
        """
        response, call = self._call(self._stub.Info.with_call, pb.InfoRequest(), timeout)
        return messages.info_result(response, call.trailing_metadata())

    def wait_until_ready(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for the channel to connect (a server that is still starting), and says
        whether it did. Calls need not wait: an unreachable server then shows at the call, with its cause."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
            return True
        except grpc.FutureTimeoutError:
            return False

    def close(self) -> None:
        """Closes the channel; calls and streams still running are cancelled. Raises nothing."""
        self._channel.close()

    def __enter__(self) -> "NearDupClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


