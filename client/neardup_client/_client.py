"""Sync and asyncio clients of neardup.v1.NearDup. One channel per client, reused for every call;
UNAVAILABLE is retried by gRPC's own retry policy (with backoff), so a restarting server is ridden over."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

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


@dataclass(frozen=True)
class Document:
    """A result given inline: its text (sketched by the server) or a sketch made with the store's configuration."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None


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
            "duplicates": [{"id": d.id, "duplicate_of": d.duplicate_of, "similarity": round(d.similarity, 6)}
                           for d in self.duplicates],
            "groups": self.groups,
            "missing": self.missing,
            "cached": self.cached,
            "threshold": self.threshold,
            "metric": self.metric,
            "grouping": self.grouping,
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


def _dedup_request(results: Sequence[str | Document], threshold: float | None, metric: str | None,
                   grouping: str | None) -> pb.DedupRequest:
    request = pb.DedupRequest(threshold=threshold) if threshold is not None else pb.DedupRequest()
    if metric is not None:
        request.metric = metric_value(metric)
    if grouping is not None:
        request.grouping = grouping_value(grouping)
    if all(isinstance(r, str) for r in results):
        request.ids.extend(results)
    else:
        request.documents.extend(_document(r if isinstance(r, Document) else Document(r)) for r in results)
    return request


def _document(doc: Document) -> pb.Document:
    message = pb.Document(id=doc.id, lang=doc.lang or "")
    if doc.text is not None:
        message.text = doc.text
    elif doc.sketch is not None:
        message.sketch = doc.sketch
    return message


def _dedup_result(results: Sequence[str | Document], response: pb.DedupResponse) -> DedupResult:
    return DedupResult(
        ids=tuple(r if isinstance(r, str) else r.id for r in results),
        duplicate_of=tuple(response.duplicate_of), similarity=tuple(response.similarity),
        group=tuple(response.group), missing_positions=tuple(response.missing), cached=response.cached,
        threshold=response.threshold, metric=METRIC_NAMES.get(response.metric, "unspecified"),
        grouping=GROUPING_NAMES.get(response.grouping, "unspecified"))


def _info(response: pb.InfoResponse) -> Info:
    config = response.sketch_config
    return Info(
        articles=response.articles,
        sketch_config={"unit": config.unit, "k": config.k, "min_word_len": config.min_word_len,
                       "lang": config.lang, "hash": config.hash, "stoplist_digest": config.stoplist_digest,
                       "sketcher_version": config.sketcher_version},
        version=response.version, format_version=response.format_version, generation=response.generation,
        stoplist_size=response.stoplist_size, max_result_set=response.max_result_set,
        default_threshold=response.default_threshold,
        default_metric=METRIC_NAMES.get(response.default_metric, "unspecified"),
        default_grouping=GROUPING_NAMES.get(response.default_grouping, "unspecified"),
        store=response.store)


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
    """Blocking client. Use as a context manager or call close()."""

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
        """results in rank order: stored ids, or Documents carrying text or a sketch."""
        results = list(results)
        response = self._call(self._stub.Dedup, _dedup_request(results, threshold, metric, grouping), timeout)
        return _dedup_result(results, response)

    def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        request = pb.UpsertRequest(documents=[_document(d) for d in documents])
        return self._call(self._stub.Upsert, request, timeout).upserted

    def delete(self, ids: Iterable[str], *, timeout: float | None = None) -> int:
        return self._call(self._stub.Delete, pb.DeleteRequest(ids=list(ids)), timeout).deleted

    def info(self, *, timeout: float | None = None) -> Info:
        return _info(self._call(self._stub.Info, pb.InfoRequest(), timeout))

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "NearDupClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncNearDupClient(_Settings):
    """asyncio client (grpc.aio); create it inside the running event loop."""

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
        results = list(results)
        response = await self._call(self._stub.Dedup, _dedup_request(results, threshold, metric, grouping), timeout)
        return _dedup_result(results, response)

    async def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        request = pb.UpsertRequest(documents=[_document(d) for d in documents])
        return (await self._call(self._stub.Upsert, request, timeout)).upserted

    async def delete(self, ids: Iterable[str], *, timeout: float | None = None) -> int:
        return (await self._call(self._stub.Delete, pb.DeleteRequest(ids=list(ids)), timeout)).deleted

    async def info(self, *, timeout: float | None = None) -> Info:
        return _info(await self._call(self._stub.Info, pb.InfoRequest(), timeout))

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> "AsyncNearDupClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
