"""One JSON line per request on stdout, a request id on every response, and nothing internal
for an unexpected error: the client gets a sentence with the id, the log the traceback.

    {"level": "info", "method": "POST", "path": "/api/attention", "status": 200,
     "duration_ms": 1.52, "request_id": "5f0c9e2a41d7b3c8", ...}

Answers below 500 (a 422 for invalid input included) are logged at info, with the invalid
fields' messages under "invalid"; a 5xx at error, with the exception's traceback.
"""

import logging
import re
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from starlette.types import Scope

from app.core.errors import MAX_ERRORS
from app.web.json_io import dumps

log = logging.getLogger("attention_lab.requests")
HANDLER_NAME = "attention_lab.stdout"
# An id sent by a proxy in front of us is kept when it looks like one; otherwise we make one.
INCOMING_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")
# A log line stays short whatever the request: its path and each message are cut to this,
# and at most MAX_ERRORS + 1 messages (the answer's own cap) are written.
MAX_LOGGED_CHARS = 300
CLIENT_CLOSED = 499  # logged (at info) for a client that disconnected before its answer


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


def log_time(now: float | None = None) -> str:
    """The time (now, or `now` in seconds since the epoch) as a log line writes it, to the
    millisecond in UTC: 2026-12-01T21:50:01.250+00:00. The part up to the second is made once
    per second, since a busy server writes thousands of lines in each."""
    now = time.time() if now is None else now
    second = int(now)
    micros = round((now - second) * 1e6)  # rounded to the microsecond, as datetime does
    if micros == 1_000_000:
        second, micros = second + 1, 0
    global _last_second
    if _last_second[0] != second:  # one tuple, replaced whole: threads see one or the other
        _last_second = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return f"{_last_second[1]}.{micros // 1000:03d}+00:00"


_last_second: tuple[int, str] = (-1, "")  # the last second log_time wrote, and its text


def json_line(level: str, logger: str, message: str, fields: dict[str, Any]) -> str:
    """One log line: time, level, logger, message, then the fields."""
    line = {"time": log_time(), "level": level, "logger": logger, "message": message, **fields}
    return dumps(line).decode()


class JsonLines(logging.Formatter):
    """A log record as one JSON line, with the record's `fields` and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields = dict(getattr(record, "fields", {}))
        if record.exc_info:
            fields["exception"] = "".join(traceback.format_exception(*record.exc_info))
        return json_line(record.levelname.lower(), record.name, record.getMessage(), fields)


def configure_logging(level: str) -> None:
    """Send the app's logs to stdout as JSON lines, once per process."""
    root = logging.getLogger("attention_lab")
    root.setLevel(level.upper())
    if not any(h.name == HANDLER_NAME for h in root.handlers):
        handler = StdoutHandler()
        handler.setFormatter(JsonLines())
        root.addHandler(handler)


def server_error_message(request_id: str) -> str:
    return (
        f"Something went wrong on the server (error id {request_id}). Please try again; "
        "if it keeps happening, tell your teacher this error id."
    )


def log_request(
    scope: Scope, method: str, status: int, start: float, request_id: str, exc_info: Any = None
) -> None:
    """The request's line: info below 500 (with the invalid fields' messages), else error
    with the traceback. `method` as the client sent it (HEAD is served as GET)."""
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
    elif log.isEnabledFor(logging.INFO):
        # The hot path: written directly, since a LogRecord and the handler chain cost
        # more than the rest of a small request. Same line format as JsonLines.
        sys.stdout.write(json_line("info", log.name, message, fields) + "\n")
        sys.stdout.flush()
