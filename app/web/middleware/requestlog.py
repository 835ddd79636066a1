"""One JSON line per request on stdout, a request id on every response, and nothing internal
for an unexpected error: the client gets a sentence with the id, the log the traceback.

    {"level": "info", "method": "POST", "path": "/api/attention", "status": 200,
     "duration_ms": 1.52, "request_id": "5f0c9e2a41d7b3c8", ...}

Answers below 500 (a 422 for invalid input included) are logged at info, with the invalid
fields' messages under "invalid"; a 5xx at error, with the exception's traceback.
"""

import logging
import os
import re
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.errors import MAX_ERRORS
from app.web.json_io import JSONResponse, dumps

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


def json_line(level: str, logger: str, message: str, fields: dict[str, Any]) -> str:
    """One log line: time, level, logger, message, then the fields."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    line = {"time": now, "level": level, "logger": logger, "message": message, **fields}
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


def request_id_of(scope: Scope) -> str:
    """The id of the request being served (set by RequestLog)."""
    return str(scope.get("state", {}).get("request_id", "-"))


def server_error_message(request_id: str) -> str:
    return (
        f"Something went wrong on the server (error id {request_id}). Please try again; "
        "if it keeps happening, tell your teacher this error id."
    )


class RequestLog:
    """Outermost but for the headers: times the request, tags it with an id, logs one line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = incoming if INCOMING_ID.fullmatch(incoming) else os.urandom(8).hex()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        start = time.perf_counter()
        status = 500
        started = False

        completed = False

        async def send_tagged(message: Message) -> None:
            nonlocal status, started, completed
            if message["type"] == "http.response.body" and not message.get("more_body"):
                completed = True
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            await send(message)

        disconnected = False

        async def watched_receive() -> Message:
            nonlocal disconnected
            message = await receive()
            # A disconnect after the whole answer went out is the normal end of a request.
            if message["type"] == "http.disconnect" and not completed:
                disconnected = True
            return message

        try:
            await self.app(scope, watched_receive, send_tagged)
        except Exception:
            if disconnected:  # the client left mid-request: nobody to answer, nothing wrong
                self._log(scope, CLIENT_CLOSED, start, request_id)
                return
            self._log(scope, 500, start, request_id, exc_info=sys.exc_info())
            if started:
                raise  # the answer is half sent: let the server drop the connection
            response = JSONResponse({"detail": server_error_message(request_id)}, status_code=500)
            await response(scope, receive, send_tagged)
            return
        self._log(scope, CLIENT_CLOSED if disconnected else status, start, request_id)

    @staticmethod
    def _log(
        scope: Scope, status: int, start: float, request_id: str, exc_info: Any = None
    ) -> None:
        fields: dict[str, Any] = {
            "method": scope["method"],
            "path": scope["path"][:MAX_LOGGED_CHARS],
            "status": status,
            "duration_ms": round((time.perf_counter() - start) * 1000, 2),
            "request_id": request_id,
        }
        invalid = scope.get("state", {}).get("invalid")
        if invalid:
            fields["invalid"] = [m[:MAX_LOGGED_CHARS] for m in invalid[: MAX_ERRORS + 1]]
        message = f"{scope['method']} {fields['path']} {status}"
        if status >= 500:
            log.error(message, exc_info=exc_info, extra={"fields": fields})
        elif log.isEnabledFor(logging.INFO):
            # The hot path: written directly, since a LogRecord and the handler chain cost
            # more than the rest of a small request. Same line format as JsonLines.
            sys.stdout.write(json_line("info", log.name, message, fields) + "\n")
            sys.stdout.flush()
