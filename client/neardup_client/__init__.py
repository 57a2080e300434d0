"""Python client of the neardup near-duplicate detection service. Needs only grpcio and protobuf."""
from ._async_client import AsyncNearDupClient
from ._client import DEFAULT_TARGET, DEFAULT_TIMEOUT, NearDupClient, NearDupClientError, StreamAnswer, unreachable
from .messages import (DedupResult, Document, Duplicate, ExplainResult, ExplainedDocument, FieldComparison, Info, Match,
                       SimilarResult, Span)

__all__ = ["AsyncNearDupClient", "DEFAULT_TARGET", "DEFAULT_TIMEOUT", "DedupResult", "Document", "Duplicate",
           "ExplainResult", "ExplainedDocument", "FieldComparison", "Info", "Match", "NearDupClient", "NearDupClientError",
           "SimilarResult", "Span", "StreamAnswer", "unreachable"]
__version__ = "0.1.0"
