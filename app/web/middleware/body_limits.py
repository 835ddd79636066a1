"""Refuse an oversized request before anything reads or parses it: a body over the cap gets
413, a query string (a page's state) over its cap gets 414."""

from functools import partial

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.web.json_io import JSONResponse


def too_large_message(max_bytes: int) -> str:
    return f"The request body is larger than {max_bytes:,} bytes; send a smaller one."


def too_long_message(max_bytes: int) -> str:
    return (
        f"The address is longer than {max_bytes:,} bytes; use the API with a JSON body "
        "for inputs this large."
    )


def not_json_message() -> str:
    return (
        "This API reads JSON only: send the body with the header "
        "content-type: application/json (with curl: -H 'content-type: application/json')."
    )


def is_json(content_type: bytes) -> bool:
    kind = content_type.split(b";", 1)[0].strip().lower()
    return kind == b"application/json" or kind.endswith(b"+json")


async def without_body(send: Send, message: Message) -> None:
    """A HEAD answer: the GET answer's status and headers (Content-Length included), no body."""
    if message["type"] == "http.response.body":
        message = {**message, "body": b""}
    await send(message)


class BodySizeLimit:
    """Pure ASGI middleware: checks the query string and Content-Length up front, and counts
    streamed chunks; a body sent to the JSON API must say it is JSON (else 415); HEAD is
    answered as GET without the body, on every GET route."""

    def __init__(self, app: ASGIApp, max_bytes: int, max_query: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_query = max_query

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if len(scope.get("query_string", b"")) > self.max_query:
            response = JSONResponse({"detail": too_long_message(self.max_query)}, status_code=414)
            await response(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if scope["method"] == "HEAD":
            scope = {**scope, "method": "GET"}
            send = partial(without_body, send)
        elif (
            scope["method"] == "POST"  # every body the API reads is a POST's
            and scope["path"].startswith("/api/")
            and headers.get(b"content-length", b"0") != b"0"
            and not is_json(headers.get(b"content-type", b""))
        ):
            response = JSONResponse({"detail": not_json_message()}, status_code=415)
            await response(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            response = JSONResponse({"detail": too_large_message(self.max_bytes)}, status_code=413)
            await response(scope, receive, send)
            return

        received = 0

        async def counting_receive() -> Message:
            # A chunked body has no Content-Length: count it as it arrives.
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, too_large_message(self.max_bytes))
            return message

        await self.app(scope, counting_receive, send)
