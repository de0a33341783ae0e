"""The one error tree: every failure a client can see is a :class:`BoardError`.

A middleware renders any of them (and any surprise, as ``UNAVAILABLE``
without its trace) into the envelope of 10-api.md::

    {"error": {"code", "message", "retryable", "details"}}
"""

from __future__ import annotations

from typing import Any


class BoardError(Exception):
    """Base of every client-visible error; subclasses fix the code and status."""

    code = "UNAVAILABLE"
    status = 503
    retryable = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_json(self) -> dict[str, Any]:
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "retryable": self.retryable,
                "details": self.details,
            }
        }


class Unauthenticated(BoardError):
    code, status = "UNAUTHENTICATED", 401


class Forbidden(BoardError):
    code, status = "FORBIDDEN", 403


class NotFound(BoardError):
    """Absent, or out of the caller's scope: callers cannot tell which."""

    code, status = "NOT_FOUND", 404

    def __init__(self, what: str = "thing", *, message: str = "") -> None:
        """``what`` is missing or hidden; ``message`` is the sentence where there is no scope to hide."""
        super().__init__(message or f"No such {what}, or it is not visible to you.")


class InvalidArgument(BoardError):
    code, status = "INVALID_ARGUMENT", 422


class LimitExceeded(BoardError):
    code, status = "LIMIT_EXCEEDED", 413


class VersionConflict(BoardError):
    code, status = "VERSION_CONFLICT", 409


class Claimed(BoardError):
    code, status = "CLAIMED", 409


class Tombstoned(BoardError):
    code, status = "TOMBSTONED", 409


class PatchFailed(BoardError):
    """A diff does not apply to the revision it names; nothing changed (409, like a version conflict:
    the cure is to read that revision again and rebuild the diff)."""

    code, status = "PATCH_FAILED", 409


class NameConflict(BoardError):
    code, status = "NAME_CONFLICT", 409


class RequestIdReuse(BoardError):
    code, status = "REQUEST_ID_REUSE", 409


class RateLimited(BoardError):
    code, status, retryable = "RATE_LIMITED", 429, True

    def __init__(self, retry_after: float, what: str = "writes") -> None:
        super().__init__(f"Too many {what}; wait {retry_after:.1f} s and retry.", retry_after=retry_after)
        self.retry_after = retry_after


class StaleDelivery(BoardError):
    """A forge's webhook about an issue or comment last updated outside the intake window."""

    code, status = "STALE_DELIVERY", 422


class DeliveryRepeated(BoardError):
    """A forge's webhook whose delivery id was taken already (its "redeliver"): nothing is done twice."""

    code, status = "DELIVERY_REPEATED", 409


class Misdirected(BoardError):
    """The request names a host this board does not answer to (a DNS rebinding, or a wrong name)."""

    code, status = "MISDIRECTED_REQUEST", 421


class Unavailable(BoardError):
    code, status, retryable = "UNAVAILABLE", 503, True


ERROR_CODES = {
    cls.code: cls.status
    for cls in (
        Unauthenticated,
        Forbidden,
        NotFound,
        InvalidArgument,
        LimitExceeded,
        VersionConflict,
        Claimed,
        Tombstoned,
        PatchFailed,
        NameConflict,
        RequestIdReuse,
        RateLimited,
        StaleDelivery,
        DeliveryRepeated,
        Misdirected,
        Unavailable,
    )
}
