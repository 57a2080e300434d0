"""Bearer-token check for `neardup serve --token-file`: a server interceptor, so no handler can forget it. Every RPC
needs the token except the standard health service (probed without credentials, it tells nothing about the
data); a refused call is answered before its request is decoded. The rules: docs/OPERATING.md ("Bearer token").
"""
from __future__ import annotations

import hmac
import os
from pathlib import Path

import grpc

from ..core.errors import InvalidArgument

TOKEN_ENV = "NEARDUP_TOKEN"
#: Methods anyone may call: the health service's Check and Watch.
OPEN_PREFIXES = ("/grpc.health.v1.Health/",)
_HEADER = "authorization"
_HANDLER_TYPES = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


def load_token(token_file: str | None) -> str | None:
    """The token from --token-file, else from $NEARDUP_TOKEN, else None (no authentication).

    A token must be printable ASCII without spaces: the only bytes gRPC metadata carries unchanged."""
    if token_file is not None:
        try:
            token = Path(token_file).read_text(encoding="ascii").strip()
        except OSError as error:
            raise InvalidArgument(f"cannot read --token-file {token_file}: {error.strerror}") from None
        except UnicodeDecodeError:
            raise InvalidArgument(f"--token-file {token_file} must hold printable ASCII") from None
        source = f"--token-file {token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        source = f"${TOKEN_ENV}"
        if not token:
            return None
    if not token or not all("!" <= c <= "~" for c in token):
        raise InvalidArgument(f"the token in {source} must be one word of printable ASCII (no spaces)")
    return token


def _refuse(_request, context):
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (authorization metadata)")


class TokenInterceptor(grpc.ServerInterceptor):
    """Lets a call through when its authorization metadata equals `Bearer TOKEN` (constant-time compare)."""

    def __init__(self, token: str):
        self._expected = f"Bearer {token}".encode("ascii")

    def _authorized(self, metadata) -> bool:
        value = next((v for k, v in metadata or () if k == _HEADER), None)
        if not isinstance(value, str):
            return False
        return hmac.compare_digest(value.encode("utf-8", "surrogateescape"), self._expected)

    def intercept_service(self, continuation, handler_call_details):
        if handler_call_details.method.startswith(OPEN_PREFIXES) or \
                self._authorized(handler_call_details.invocation_metadata):
            return continuation(handler_call_details)
        handler = continuation(handler_call_details)
        # the real method's call shape (unary for an unknown one), no deserializer: nothing is decoded
        shape = (handler.request_streaming, handler.response_streaming) if handler else (False, False)
        return _HANDLER_TYPES[shape](_refuse)
