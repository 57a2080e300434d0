"""Python client of the neardup near-duplicate detection service. Needs only grpcio and protobuf."""
from ._client import (DEFAULT_TARGET, DEFAULT_TIMEOUT, AsyncNearDupClient, DedupResult, Document, Duplicate,
                      ExplainedDocument, ExplainResult, Info, Match, NearDupClient, NearDupClientError, SimilarResult,
                      Span, StreamAnswer)

__all__ = ["AsyncNearDupClient", "DEFAULT_TARGET", "DEFAULT_TIMEOUT", "DedupResult", "Document", "Duplicate",
           "ExplainResult", "ExplainedDocument", "Info", "Match", "NearDupClient", "NearDupClientError",
           "SimilarResult", "Span", "StreamAnswer"]
__version__ = "0.1.0"
