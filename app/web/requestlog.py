"""One JSON line per request on stdout, and nothing internal for an unexpected error: the
client gets a sentence with the request id, the log the traceback.

    {"time": "…", "level": "info", "logger": "attention_lab.requests",
     "message": "POST /api/attention 200", "method": "POST", "path": "/api/attention",
     "status": 200, "duration_ms": 1.52, "request_id": "5f0c9e2a41d7b3c8"}

Answers below 500 (a 422 included, with the invalid fields' messages under "invalid") are
logged at info; a 5xx at error, with the traceback; 499 for a client that left first.
"""

import logging
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from starlette.types import Scope

from app.core.errors import MAX_ERRORS
from app.web.responses import dumps

log = logging.getLogger("attention_lab.requests")
HANDLER_NAME = "attention_lab.stdout"
# A log line stays short whatever the request: its path and each message are cut to this,
# and at most MAX_ERRORS + 1 messages (the answer's own cap) are written.
MAX_LOGGED_CHARS = 300
CLIENT_CLOSED = 499


class StdoutHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stdout is at the time (so test capture sees it)."""

    def __init__(self) -> None:
        super().__init__()
        self.name = HANDLER_NAME

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class JsonLines(logging.Formatter):
    """A log record as one JSON line, with the record's `fields` and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", {}))
        if record.exc_info:
            fields["exception"] = "".join(traceback.format_exception(*record.exc_info))
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **fields,
        }
        return dumps(line).decode()


def configure_logging(level: str) -> None:
    """Send the app's logs to stdout as JSON lines, once per process."""
    root = logging.getLogger("attention_lab")
    root.setLevel(level.upper())
    if not any(h.name == HANDLER_NAME for h in root.handlers):
        handler = StdoutHandler()
        handler.setFormatter(JsonLines())
        root.addHandler(handler)


def log_request(
    scope: Scope, method: str, status: int, start: float, request_id: str, exc_info: Any = None
) -> None:
    """The request's line. `method` as the client sent it (HEAD is served as GET)."""
    fields: dict[str, Any] = {
        "method": method,
        "path": scope["path"][:MAX_LOGGED_CHARS],
        "status": status,
        "duration_ms": round((time.perf_counter() - start) * 1000, 2),
        "request_id": request_id,
    }
    invalid = scope.get("state", {}).get("invalid")
    if invalid:
        fields["invalid"] = [m[:MAX_LOGGED_CHARS] for m in invalid[: MAX_ERRORS + 1]]
    message = f"{method} {fields['path']} {status}"
    if status >= 500:
        log.error(message, exc_info=exc_info, extra={"fields": fields})
    else:
        log.info(message, extra={"fields": fields})
