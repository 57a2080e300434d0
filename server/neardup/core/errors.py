"""One small family of domain errors. The gRPC layer maps each class to one status code, the CLI to a
one-line message; nothing else in the code base decides how an error is reported."""
import importlib.metadata
import json
import urllib.parse


class NearDupError(Exception):
    """Base of every error a caller can fix."""


class InvalidArgument(NearDupError):
    """A value is malformed or out of range (threshold, sketch bytes, id, metric...). `field` names the request
    field at fault when there is one, as a path ("threshold", "ids[3]", "documents[2].text"): the gRPC layer sends
    it as a google.rpc.BadRequest detail beside the message."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class TooLarge(NearDupError):
    """A result set, document or message exceeds a configured limit. `subject` names what is limited (a request
    field's path, or a server resource) and `limit` the limit, when known: the gRPC layer sends them as a
    google.rpc.QuotaFailure detail beside the message."""

    def __init__(self, message: str, subject: str | None = None, limit: int | None = None):
        super().__init__(message)
        self.subject, self.limit = subject, limit


class ConfigMismatch(NearDupError):
    """A sketch was made, or is asked for, with another configuration than the store's."""


class StoreUnavailable(NearDupError):
    """The store cannot be opened or read (missing, corrupt, other format version, no permission)."""


class StoreChanged(StoreUnavailable):
    """A write committed during a read that needs one state, on a store that keeps no older states (Redis):
    reading again sees the new state."""


class NotFound(NearDupError):
    """An article asked for by id is not stored."""


class EngineUnavailable(NearDupError):
    """The distributed engine of the offline stage cannot be used (not installed, its scheduler unreachable, its
    workers failing)."""


class JobFailed(NearDupError):
    """An offline job could not finish: an input it reads cannot be read or is malformed, a worker process
    stopped, a copy does not verify."""


def install_line(extra: str, origin: str | None = None) -> str:
    """The pip command that adds an optional dependency group (an extra of pyproject.toml) to this installation:
    from the directory neardup was installed from when it came from a checkout (`origin`: its file:// URL, read
    from the installation's metadata when not given), else by name. A checkout is not on a package index, so
    `pip install 'neardup[extra]'` would not find it."""
    if origin is None:
        origin = _installed_from()
    if origin and origin.startswith("file://"):
        return f"pip install '{urllib.parse.unquote(origin[len('file://'):])}[{extra}]'"
    return f"pip install 'neardup[{extra}]'"


def _installed_from() -> str | None:
    try:
        return json.loads(importlib.metadata.distribution("neardup").read_text("direct_url.json") or "{}").get("url")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
