"""Structured logs: one JSON object per line, with the request id of the call being served.

Never log tokens or message bodies: log lines name routes, handles and ids only.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime

from .store.writer import DatabaseUnreachable

#: The id of the HTTP request being served (also sent back as ``X-Request-Id``).
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("log_request_id", default=None)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "at": datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id.get()
        if rid:
            entry["request_id"] = rid
        for key in ("method", "route", "status", "ms", "who"):
            if hasattr(record, key):
                entry[key] = getattr(record, key)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure(level: str, path: str | None = None) -> None:
    """JSON lines to stderr, and to ``path`` too when given."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if path:
        handlers.append(logging.FileHandler(path, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=handlers, force=True)


def failed(logger: logging.Logger, message: str, *args: object) -> None:
    """Log the exception being handled by a loop that tries again: where the database does not
    answer, one warning naming it (every pass of every loop fails alike while it is down, and
    a trace says nothing more); any other failure with its trace."""
    exc = sys.exc_info()[1]
    if isinstance(exc, DatabaseUnreachable):
        logger.warning(f"{message} (%s)", *args, exc)
    else:
        logger.exception(message, *args)
