"""Sync and asyncio clients of neardup.v1.NearDup. One channel per client, reused for every call;
UNAVAILABLE is retried by gRPC's own retry policy (with backoff), so a restarting server is ridden over.

Every call that fails raises NearDupClientError with the gRPC status code and the server's message, except in
DedupStream, where the failure of one result set is that result set's answer (a NearDupClientError yielded, not
raised) and only what ends the whole stream is raised."""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
from dataclasses import dataclass
from typing import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence, Union

import grpc

from .enums import GROUPING_NAMES, METRIC_NAMES, grouping_value, metric_value
from .v1 import neardup_pb2 as pb
from .v1 import neardup_pb2_grpc

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_TIMEOUT = 2.0
_SERVICE = pb.DESCRIPTOR.services_by_name["NearDup"].full_name
_RETRY_CONFIG = json.dumps({"methodConfig": [{
    "name": [{"service": _SERVICE}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"]},
}]})


class NearDupClientError(Exception):
    """A failed call: the gRPC status code and the server's message (which says what to fix)."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


#: gRPC status code number (as in DedupResponse.error) → grpc.StatusCode
_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


@dataclass(frozen=True)
class Document:
    """A result given inline: its text (sketched by the server), its fields (an items store: name → a string, or
    a location as {"lat": .., "lon": ..} or a (lat, lon) pair), or a sketch made with the store's configuration."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None
    fields: dict | None = None


@dataclass(frozen=True)
class Duplicate:
    id: str
    position: int
    duplicate_of: str
    duplicate_of_position: int
    similarity: float


@dataclass(frozen=True)
class DedupResult:
    """The answer for a result set, by position in the request's rank order."""

    ids: tuple[str, ...]
    duplicate_of: tuple[int, ...]       # -1 when kept
    similarity: tuple[float, ...]
    group: tuple[int, ...]              # position of the kept result standing for the group
    missing_positions: tuple[int, ...]
    cached: bool
    threshold: float
    metric: str
    grouping: str
    clusters: tuple[int, ...] = ()      # per position once the store is clustered (-1: none), else empty

    @property
    def keep(self) -> list[str]:
        """Ids to show, in rank order."""
        return [doc_id for doc_id, of in zip(self.ids, self.duplicate_of) if of < 0]

    @property
    def duplicates(self) -> list[Duplicate]:
        return [Duplicate(self.ids[p], p, self.ids[of], of, self.similarity[p])
                for p, of in enumerate(self.duplicate_of) if of >= 0]

    @property
    def groups(self) -> list[list[str]]:
        """Every group of two or more results, kept result first, in rank order."""
        members: dict[int, list[str]] = {}
        for doc_id, leader in zip(self.ids, self.group):
            members.setdefault(leader, []).append(doc_id)
        return [ids for ids in members.values() if len(ids) > 1]

    @property
    def missing(self) -> list[str]:
        return [self.ids[p] for p in self.missing_positions]

    def to_dict(self) -> dict:
        return {
            "keep": self.keep,
            "duplicates": [{"id": d.id, "duplicate_of": d.duplicate_of, "similarity": d.similarity}
                           for d in self.duplicates],
            "groups": self.groups,
            "missing": self.missing,
            "cached": self.cached,
            "threshold": self.threshold,
            "metric": self.metric,
            "grouping": self.grouping,
            **({"clusters": dict(zip(self.ids, self.clusters))} if self.clusters else {}),
        }


@dataclass(frozen=True)
class Info:
    articles: int
    sketch_config: dict
    version: str
    format_version: int
    generation: int
    stoplist_size: int
    max_result_set: int
    default_threshold: float
    default_metric: str
    default_grouping: str
    store: str
    indexed: bool  # the store keeps postings: find_similar can search it
    pair_model: str = ""  # an items store's trained pair model ("logistic", "gradient-boosting"), "" when none
    #: where default_threshold comes from: "learned", "set", "fixed", "pair_model" ("" from an older server)
    default_threshold_source: str = ""


@dataclass(frozen=True)
class Match:
    """A stored article similar to the query of find_similar."""

    id: str
    similarity: float
    cluster: int = -1  # its cluster id once the store is clustered (`neardup cluster`)


@dataclass(frozen=True)
class SimilarResult:
    """The answer of find_similar, with the parameters the server applied."""

    matches: list[Match]  # best first: similarity descending, then id
    # False: only the candidates sharing the most values were compared, or a simhash store was searched below
    # threshold 61/64 (over 3 bits), which its tables do not guarantee; a match may be missing
    exact: bool
    threshold: float
    metric: str
    top_k: int

    def to_dict(self) -> dict:
        return {
            "matches": [{"id": m.id, "similarity": m.similarity, "cluster": m.cluster}
                        for m in self.matches],
            "exact": self.exact,
            "threshold": self.threshold,
            "metric": self.metric,
            "top_k": self.top_k,
        }


#: A passage of a text: (start, end) in Unicode code points of the text as sent (text[start:end] in Python).
Span = tuple[int, int]


@dataclass(frozen=True)
class ExplainedDocument:
    """One document of an explained pair: counts, and where in its text (when it was sent with one) it shares
    shingles with the other, shares sketch values with it, and holds boilerplate. Spans are ascending and merged."""

    id: str
    has_text: bool              # sent with its text: the spans and shingle counts are answered
    shingles: int               # distinct shingles of its text
    stoplisted_shingles: int    # of which stop-listed (boilerplate), in no sketch
    sketch_values: int          # values of its bottom-K sketch (0 on a simhash store)
    compared_values: int        # of which the similarity compares (at or below both sketches' caps)
    shared: list[Span]          # its shingles outside the stop-list that the other text has too (needs both texts)
    sketch_shared: list[Span]   # its shingles whose values both sketches hold: what decided the similarity
    boilerplate: list[Span]     # its stop-listed shingles

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), **{name: [list(span) for span in getattr(self, name)]
                                               for name in ("shared", "sketch_shared", "boilerplate")}}


@dataclass(frozen=True)
class ExplainResult:
    """The answer of explain: the pair's similarity, Dedup's decision for it, and what each document shares."""

    similarity: float
    duplicate: bool             # Dedup of [a, b] makes b a duplicate of a at the threshold applied
    threshold: float
    metric: str
    a: ExplainedDocument
    b: ExplainedDocument
    shared_shingles: int        # distinct shingles outside the stop-list both texts have (0 without both texts)
    shared_sketch_values: int   # values both bottom-K sketches hold
    note: str                   # what could not be answered and why ("" when everything was)

    def to_dict(self) -> dict:
        return {"similarity": round(self.similarity, 6), "duplicate": self.duplicate, "threshold": self.threshold,
                "metric": self.metric, "shared_shingles": self.shared_shingles,
                "shared_sketch_values": self.shared_sketch_values, "note": self.note,
                "a": self.a.to_dict(), "b": self.b.to_dict()}


def _explain_request(a: str | Document, b: str | Document, threshold: float | None,
                     metric: str | None) -> pb.ExplainRequest:
    request = pb.ExplainRequest(a=_document(a if isinstance(a, Document) else Document(a)),
                                b=_document(b if isinstance(b, Document) else Document(b)))
    if threshold is not None:
        request.threshold = threshold
    if metric is not None:
        request.metric = metric_value(metric)
    return request


def _explained(message: pb.ExplainedDocument) -> ExplainedDocument:
    return ExplainedDocument(
        id=message.id, has_text=message.has_text, shingles=message.shingles,
        stoplisted_shingles=message.stoplisted_shingles, sketch_values=message.sketch_values,
        compared_values=message.compared_values,
        **{name: [(span.start, span.end) for span in getattr(message, name)]
           for name in ("shared", "sketch_shared", "boilerplate")})


def _explain_result(response: pb.ExplainResponse) -> ExplainResult:
    return ExplainResult(similarity=response.similarity, duplicate=response.duplicate, threshold=response.threshold,
                         metric=METRIC_NAMES.get(response.metric, "unspecified"), a=_explained(response.a),
                         b=_explained(response.b), shared_shingles=response.shared_shingles,
                         shared_sketch_values=response.shared_sketch_values, note=response.note)


def _dedup_request(results: Sequence[str | Document], threshold: float | None, metric: str | None,
                   grouping: str | None) -> pb.DedupRequest:
    request = pb.DedupRequest(threshold=threshold) if threshold is not None else pb.DedupRequest()
    if metric is not None:
        request.metric = metric_value(metric)
    if grouping is not None:
        request.grouping = grouping_value(grouping)
    if _all_ids(results):
        request.ids.extend(results)
    else:
        request.documents.extend(_document(r if isinstance(r, Document) else Document(r)) for r in results)
    return request


def _similar_request(id: str | None, document: Document | None, top_k: int | None, threshold: float | None,
                     metric: str | None) -> pb.FindSimilarRequest:
    if (id is None) == (document is None):
        raise ValueError("give exactly one of id and document")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None (the server's default), got {top_k!r}")
    request = pb.FindSimilarRequest(top_k=top_k or 0)
    if threshold is not None:
        request.threshold = threshold
    if metric is not None:
        request.metric = metric_value(metric)
    if id is not None:
        request.id = id
    else:
        request.document.CopyFrom(_document(document))
    return request


def _similar_result(response: pb.FindSimilarResponse) -> SimilarResult:
    return SimilarResult(matches=[Match(m.id, m.similarity, m.cluster) for m in response.matches], exact=response.exact,
                         threshold=response.threshold, metric=METRIC_NAMES.get(response.metric, "unspecified"),
                         top_k=response.top_k)


def _document(doc: Document) -> pb.Document:
    message = pb.Document(id=doc.id, lang=doc.lang or "")
    if doc.text is not None:
        message.text = doc.text
    elif doc.sketch is not None:
        message.sketch = doc.sketch
    for name, value in (doc.fields or {}).items():
        if isinstance(value, str):
            message.fields[name].text = value
        elif isinstance(value, dict):
            message.fields[name].location.lat, message.fields[name].location.lon = value["lat"], value["lon"]
        else:
            try:
                message.fields[name].location.lat, message.fields[name].location.lon = value
            except (TypeError, ValueError):
                raise ValueError(f"field {name!r} of document {doc.id!r}: give a string, or a location as "
                                 f"{{'lat': .., 'lon': ..}} or (lat, lon); got {value!r}") from None
    return message


def _all_ids(results: Sequence[str | Document]) -> bool:
    """Whether every result is a stored id (a str): by the set of their types first, twice as fast for 100."""
    return set(map(type, results)) <= _STR or all(isinstance(r, str) for r in results)


_STR = {str}


def _dedup_result(results: Sequence[str | Document], response: pb.DedupResponse) -> DedupResult:
    # tuple(field[:]): a slice of a repeated field is a list made in C, twice as fast to take as the field itself
    return DedupResult(
        ids=tuple(results) if _all_ids(results) else tuple(r if isinstance(r, str) else r.id for r in results),
        duplicate_of=tuple(response.duplicate_of[:]), similarity=tuple(response.similarity[:]),
        group=tuple(response.group[:]), missing_positions=tuple(response.missing[:]), cached=response.cached,
        threshold=response.threshold, metric=METRIC_NAMES.get(response.metric, "unspecified"),
        grouping=GROUPING_NAMES.get(response.grouping, "unspecified"), clusters=tuple(response.cluster[:]))


def _info(response: pb.InfoResponse) -> Info:
    config = response.sketch_config
    sketch_config = {"unit": config.unit, "k": config.k, "min_word_len": config.min_word_len, "lang": config.lang,
                     "hash": config.hash, "stoplist_digest": config.stoplist_digest,
                     "sketcher_version": config.sketcher_version, "kind": config.kind or "bottomk"}
    if config.lang_identifier:  # an auto store: what identified its texts' languages
        sketch_config["lang_identifier"] = config.lang_identifier
    if config.kind == "items":  # the schema: each field's settings, and the rules
        sketch_config["fields"] = [{"name": f.name, "kind": f.kind, "unit": f.unit, "k": f.k, "weight": f.weight,
                                    "precision": f.precision, "normalize": f.normalize,
                                    "drop_words": list(f.drop_words), "rule_tokens": f.rule_tokens,
                                    "metric": f.metric, "synonyms": dict(f.synonyms)} for f in config.fields]
        sketch_config["rules"] = [list(rule.fields) for rule in config.rules]
    return Info(
        articles=response.articles,
        sketch_config=sketch_config,
        version=response.version, format_version=response.format_version, generation=response.generation,
        stoplist_size=response.stoplist_size, max_result_set=response.max_result_set,
        default_threshold=response.default_threshold,
        default_metric=METRIC_NAMES.get(response.default_metric, "unspecified"),
        default_grouping=GROUPING_NAMES.get(response.default_grouping, "unspecified"),
        store=response.store, indexed=response.indexed, pair_model=response.pair_model,
        default_threshold_source=response.default_threshold_source)


#: What dedup_stream yields per result set: its answer, or why the server refused it.
StreamAnswer = Union[DedupResult, NearDupClientError]


class _DedupStream:
    """The client's side of one DedupStream: its requests, made lazily from the caller's result sets with tag =
    index, and the result sets sent but not yet answered, which read the answers in order and check their tags.

    The requests are consumed by gRPC (a thread of its own, or a task), which would cancel the call on an
    exception and log it: a result set that cannot be converted, or a caller's iterable that raises, ends the
    requests instead, and the exception is raised to the caller once the result sets before it are answered."""

    def __init__(self, threshold: float | None, metric: str | None, grouping: str | None):
        _dedup_request((), threshold, metric, grouping)  # an unknown metric or grouping: ValueError now
        self._params = (threshold, metric, grouping)
        self._pending: collections.deque[tuple[int, list]] = collections.deque()  # (tag, result set) sent
        self._sent = 0
        self._failure: Exception | None = None

    def _request(self, results: Sequence[str | Document]) -> pb.DedupRequest:
        results = list(results)
        request = _dedup_request(results, *self._params)
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
        return _dedup_result(results, response)

    def finish(self) -> None:
        """The stream ended with OK: every result set sent must have been answered."""
        if self._pending:
            raise NearDupClientError(grpc.StatusCode.INTERNAL, f"DedupStream ended without answering result sets "
                                     f"{self._pending[0][0]} to {self._pending[-1][0]}")
        if self._failure is not None:
            raise self._failure


async def _once(event: asyncio.Event, items: AsyncIterator) -> AsyncIterator:
    """items, from the moment event is set."""
    await event.wait()
    async for item in items:
        yield item


def _channel_options(max_message_bytes: int) -> list[tuple[str, object]]:
    return [("grpc.service_config", _RETRY_CONFIG), ("grpc.enable_retries", 1),
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
        self.options = _channel_options(max_message_bytes)

    def call_options(self, timeout: float | None) -> dict:
        return {"timeout": self.timeout if timeout is None else timeout, "metadata": self.metadata}


class NearDupClient(_Settings):
    """Blocking client. Use as a context manager or call close().

    target is HOST:PORT; timeout the seconds of each unary call unless a method's timeout says otherwise;
    credentials (grpc.ssl_channel_credentials) turn on TLS; token is sent as `authorization: Bearer TOKEN`.
    Creating a client does not connect: an unreachable server shows at the first call (UNAVAILABLE)."""

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 max_message_bytes: int = 16 * 1024 * 1024):
        super().__init__(target, timeout, credentials, token, max_message_bytes)
        self._channel = (grpc.secure_channel(target, credentials, options=self.options) if credentials
                         else grpc.insecure_channel(target, options=self.options))
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
            metric: "containment" or "jaccard" (a bottom-K store), "hamming" (a simhash store); None: the
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
                metric of the other sketch kind (hamming on a bottom-K store, containment or jaccard on a simhash
                store);
                UNAVAILABLE when the server cannot be reached after the retries (about a second), or cannot read
                its store;
                DEADLINE_EXCEEDED when the timeout passes first;
                UNAUTHENTICATED without the server's token (`token=`).
        """
        results = list(results)
        response = self._call(self._stub.Dedup, _dedup_request(results, threshold, metric, grouping), timeout)
        return _dedup_result(results, response)

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
        stream = _DedupStream(threshold, metric, grouping)
        return self._dedup_stream(stream, result_sets, timeout)

    def _dedup_stream(self, stream: _DedupStream, result_sets, timeout: float | None) -> Iterator[StreamAnswer]:
        call = self._stub.DedupStream(stream.requests(result_sets), timeout=timeout, metadata=self.metadata)
        try:
            for response in call:
                yield stream.answer(response)
        except grpc.RpcError as error:
            raise NearDupClientError(error.code(), error.details()) from None
        finally:
            call.cancel()  # the caller stopped early, or an answer was wrong; nothing once the stream ended
        stream.finish()

    def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        """Adds or replaces articles, as one atomic batch: visible to the next dedup of every server worker.

        Args:
            documents: Documents with an id and text (sketched by the server) or a sketch made with the store's
                configuration.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            int: how many documents were written.

        Raises:
            NearDupClientError: the call failed, and a batch the server refused wrote nothing; `code` says why:
                INVALID_ARGUMENT for bad input (an empty id or one over 511 UTF-8 bytes, a Document without text
                or sketch, malformed sketch bytes);
                RESOURCE_EXHAUSTED over a limit (more documents than --max-result-set, a message over
                --max-message-bytes, a text over 10 MiB);
                FAILED_PRECONDITION for a sketch of another sketch configuration (longer than the store's K);
                UNAVAILABLE when the server cannot be reached after the retries, or cannot use its store;
                DEADLINE_EXCEEDED when the timeout passes first (the batch may still have been written);
                UNAUTHENTICATED without the server's token (`token=`).
        """
        request = pb.UpsertRequest(documents=[_document(d) for d in documents])
        return self._call(self._stub.Upsert, request, timeout).upserted

    def delete(self, ids: Iterable[str], *, timeout: float | None = None) -> int:
        """Removes articles, as one atomic batch; ids that are not stored are no error.

        Args:
            ids: the ids to remove.
            timeout: seconds for this call; None: the client's timeout.

        Returns:
            int: how many of the ids were stored.

        Raises:
            NearDupClientError: the call failed, and a batch the server refused removed nothing; `code` says why:
                INVALID_ARGUMENT for an empty id or one over 511 UTF-8 bytes;
                RESOURCE_EXHAUSTED for more ids than --max-result-set, or a message over --max-message-bytes;
                UNAVAILABLE when the server cannot be reached after the retries, or cannot use its store;
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
            metric: "containment" or "jaccard" (a bottom-K store), "hamming" (a simhash store); None: the
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
        request = _similar_request(id, document, top_k, threshold, metric)
        return _similar_result(self._call(self._stub.FindSimilar, request, timeout))

    def explain(self, a: str | Document, b: str | Document, *, threshold: float | None = None,
                metric: str | None = None, timeout: float | None = None) -> ExplainResult:
        """How similar two documents are under the store's rules, whether dedup([a, b]) makes b a duplicate of a,
        and the passages of each text the other shares.

        Args:
            a, b: each a stored article's id (str: its stored sketch; the store keeps no texts, so no spans), or a
                Document with text (spans are answered for it) or a sketch made with the store's configuration.
            threshold: the similarity in [0, 1] from which b is a duplicate; None: the server's default.
            metric: "containment" or "jaccard" (a bottom-K store), "hamming" (a simhash store); None: the
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
        request = _explain_request(a, b, threshold, metric)
        return _explain_result(self._call(self._stub.Explain, request, timeout))

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
        return _info(self._call(self._stub.Info, pb.InfoRequest(), timeout))

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


class AsyncNearDupClient(_Settings):
    """asyncio client (grpc.aio); create it inside the running event loop. Arguments as NearDupClient's."""

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 max_message_bytes: int = 16 * 1024 * 1024):
        super().__init__(target, timeout, credentials, token, max_message_bytes)
        self._channel = (grpc.aio.secure_channel(target, credentials, options=self.options) if credentials
                         else grpc.aio.insecure_channel(target, options=self.options))
        self._stub = neardup_pb2_grpc.NearDupStub(self._channel)

    async def _call(self, method, request, timeout):
        try:
            return await method(request, **self.call_options(timeout))
        except grpc.RpcError as error:
            raise NearDupClientError(error.code(), error.details()) from None

    async def dedup(self, results: Sequence[str | Document], *, threshold: float | None = None,
                    metric: str | None = None, grouping: str | None = None,
                    timeout: float | None = None) -> DedupResult:
        """Which results of one result set to keep, and which duplicate which (arguments and answer as
        NearDupClient.dedup).

        Raises:
            as NearDupClient.dedup: the same exceptions, for the same causes.
        """
        results = list(results)
        response = await self._call(self._stub.Dedup, _dedup_request(results, threshold, metric, grouping), timeout)
        return _dedup_result(results, response)

    def dedup_stream(self, result_sets: Iterable[Sequence[str | Document]] | AsyncIterable[Sequence[str | Document]],
                     *, threshold: float | None = None, metric: str | None = None, grouping: str | None = None,
                     timeout: float | None = None) -> AsyncIterator[StreamAnswer]:
        """NearDupClient.dedup_stream as an async iterator (`async for answer in client.dedup_stream(...)`):
        result_sets may be a sync or an async iterable (a sync one is iterated in the event loop, so it must
        not block). The stream opens at the first iteration; timeout=None (the default) sets no deadline.

        Yields:
            as NearDupClient.dedup_stream: a DedupResult, or the NearDupClientError of a refused result set.

        Raises:
            as NearDupClient.dedup_stream: the same exceptions, for the same causes.
        """
        stream = _DedupStream(threshold, metric, grouping)
        return self._dedup_stream(stream, result_sets, timeout)

    async def _dedup_stream(self, stream: _DedupStream, result_sets,
                            timeout: float | None) -> AsyncIterator[StreamAnswer]:
        accepted = asyncio.Event()
        call = self._stub.DedupStream(_once(accepted, stream.async_requests(result_sets)), timeout=timeout,
                                      metadata=self.metadata)
        try:
            # Requests are written once the server accepted the stream (it sends its headers at once), so a refused
            # stream ends with the server's status: grpc.aio reports a write that meets an ended call as INTERNAL
            # and drops the status (grpc/grpc#36066).
            await call.initial_metadata()
            accepted.set()
            async for response in call:
                yield stream.answer(response)
        except grpc.RpcError as error:
            raise NearDupClientError(error.code(), error.details()) from None
        finally:
            call.cancel()
        stream.finish()

    async def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        """Adds or replaces articles, as one atomic batch (as NearDupClient.upsert).

        Raises:
            as NearDupClient.upsert: the same exceptions, for the same causes.
        """
        request = pb.UpsertRequest(documents=[_document(d) for d in documents])
        return (await self._call(self._stub.Upsert, request, timeout)).upserted

    async def delete(self, ids: Iterable[str], *, timeout: float | None = None) -> int:
        """Removes articles, as one atomic batch (as NearDupClient.delete).

        Raises:
            as NearDupClient.delete: the same exceptions, for the same causes.
        """
        return (await self._call(self._stub.Delete, pb.DeleteRequest(ids=list(ids)), timeout)).deleted

    async def find_similar(self, id: str | None = None, *, document: Document | None = None,
                           top_k: int | None = None, threshold: float | None = None, metric: str | None = None,
                           timeout: float | None = None) -> SimilarResult:
        """The stored articles most similar to a stored one, or to a document (arguments and answer as
        NearDupClient.find_similar).

        Raises:
            as NearDupClient.find_similar: the same exceptions, for the same causes.
        """
        request = _similar_request(id, document, top_k, threshold, metric)
        return _similar_result(await self._call(self._stub.FindSimilar, request, timeout))

    async def explain(self, a: str | Document, b: str | Document, *, threshold: float | None = None,
                      metric: str | None = None, timeout: float | None = None) -> ExplainResult:
        """How similar two documents are, whether b duplicates a, and what they share (arguments and answer as
        NearDupClient.explain).

        Raises:
            as NearDupClient.explain: the same exceptions, for the same causes.
        """
        request = _explain_request(a, b, threshold, metric)
        return _explain_result(await self._call(self._stub.Explain, request, timeout))

    async def info(self, *, timeout: float | None = None) -> Info:
        """The store's size and sketch configuration, the server's limits and defaults.

        Raises:
            as NearDupClient.info: the same exceptions, for the same causes.
        """
        return _info(await self._call(self._stub.Info, pb.InfoRequest(), timeout))

    async def wait_until_ready(self, timeout: float) -> bool:
        """As NearDupClient.wait_until_ready."""
        try:
            await asyncio.wait_for(self._channel.channel_ready(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def close(self) -> None:
        """Closes the channel; calls and streams still running are cancelled. Raises nothing."""
        await self._channel.close()

    async def __aenter__(self) -> "AsyncNearDupClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
