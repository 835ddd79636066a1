"""Refuse an oversized request body with 413 before anything reads or parses it."""

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.responses import JSONResponse


def too_large_message(max_bytes: int) -> str:
    return f"The request body is larger than {max_bytes:,} bytes; send a smaller one."


class BodySizeLimit:
    """Pure ASGI middleware: checks Content-Length up front and counts streamed chunks."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
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
