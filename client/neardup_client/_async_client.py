"""The asyncio client of neardup.v1.NearDup (grpc.aio): the calls of NearDupClient, awaited."""
from __future__ import annotations

import asyncio
from typing import AsyncIterable, AsyncIterator, Iterable, Sequence

import grpc

from . import messages
from ._client import (DEFAULT_TARGET, DEFAULT_TIMEOUT, NearDupClientError, StreamAnswer, StreamSide, _Deadline,
                      _Settings)
from .messages import DedupResult, Document, ExplainResult, Info, SimilarResult
from .v1 import neardup_pb2 as pb, neardup_pb2_grpc


class AsyncNearDupClient(_Settings):
    """asyncio client (grpc.aio); create it inside the running event loop. Arguments as NearDupClient's."""

    def __init__(self, target: str = DEFAULT_TARGET, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: grpc.ChannelCredentials | None = None, token: str | None = None,
                 max_message_bytes: int = 16 * 1024 * 1024):
        super().__init__(target, timeout, credentials, token, max_message_bytes)
        self._channel = (grpc.aio.secure_channel(self.channel_target, credentials, options=self.options)
                         if credentials else grpc.aio.insecure_channel(self.channel_target, options=self.options))
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
        response = await self._call(self._stub.Dedup, messages.dedup_request(results, threshold, metric, grouping), timeout)
        return messages.dedup_result(results, response)

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
        stream = StreamSide(threshold, metric, grouping)
        return self._dedup_stream(stream, result_sets, timeout)

    async def _dedup_stream(self, stream: StreamSide, result_sets,
                            timeout: float | None) -> AsyncIterator[StreamAnswer]:
        accepted = asyncio.Event()
        call = self._stub.DedupStream(_once(accepted, stream.async_requests(result_sets)), timeout=timeout,
                                      metadata=self.metadata)
        watchdog = _Deadline(call, timeout, asyncio.get_running_loop())
        try:
            # Requests are written once the server accepted the stream (it sends its headers at once), so a refused
            # stream ends with the server's status: grpc.aio reports a write that meets an ended call as INTERNAL
            # and drops the status (grpc/grpc#36066).
            await call.initial_metadata()
            accepted.set()
            async for response in call:
                yield stream.answer(response)
        except grpc.RpcError as error:
            raise watchdog.error(error) from None
        except asyncio.CancelledError:
            if not watchdog.expired:
                raise  # the caller's task was cancelled
            raise watchdog.error() from None
        finally:
            watchdog.stop()
            call.cancel()
        stream.finish()

    async def upsert(self, documents: Iterable[Document], *, timeout: float | None = None) -> int:
        """Adds or replaces articles, as one atomic batch (as NearDupClient.upsert).

        Raises:
            as NearDupClient.upsert: the same exceptions, for the same causes.
        """
        request = pb.UpsertRequest(documents=[messages.document_message(d) for d in documents])
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
        request = messages.similar_request(id, document, top_k, threshold, metric)
        return messages.similar_result(await self._call(self._stub.FindSimilar, request, timeout))

    async def explain(self, a: str | Document, b: str | Document, *, threshold: float | None = None,
                      metric: str | None = None, timeout: float | None = None) -> ExplainResult:
        """How similar two documents are, whether b duplicates a, and what they share (arguments and answer as
        NearDupClient.explain).

        Raises:
            as NearDupClient.explain: the same exceptions, for the same causes.
        """
        request = messages.explain_request(a, b, threshold, metric)
        return messages.explain_result(await self._call(self._stub.Explain, request, timeout))

    async def info(self, *, timeout: float | None = None) -> Info:
        """The store's size and sketch configuration, the server's limits and defaults.

        Raises:
            as NearDupClient.info: the same exceptions, for the same causes.
        """
        try:
            call = self._stub.Info(pb.InfoRequest(), **self.call_options(timeout))
            return messages.info_result(await call, await call.trailing_metadata())
        except grpc.RpcError as error:
            raise NearDupClientError(error.code(), error.details()) from None

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


async def _once(event: asyncio.Event, items: AsyncIterator) -> AsyncIterator:
    """items, from the moment event is set."""
    await event.wait()
    async for item in items:
        yield item
