"""One small family of domain errors. The gRPC layer maps each class to one status code, the CLI to a
one-line message; nothing else in the code base decides how an error is reported."""


class NearDupError(Exception):
    """Base of every error a caller can fix."""


class InvalidArgument(NearDupError):
    """A value is malformed or out of range (threshold, sketch bytes, id, metric...)."""


class TooLarge(NearDupError):
    """A result set, document or message exceeds a configured limit."""


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
