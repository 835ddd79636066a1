"""Security headers on every response, pages and API alike (pure ASGI middleware).

The Content-Security-Policy lets scripts come only from this server: no inline script, no
eval. Styles may be inline because plotly.js writes its own <style> elements and style
attributes. `frame-ancestors` comes from the settings, so a course site can embed the app.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def content_security_policy(frame_ancestors: str) -> str:
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data: blob:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            f"frame-ancestors {frame_ancestors}",
        ]
    )


def security_headers(frame_ancestors: str) -> list[tuple[bytes, bytes]]:
    headers = {
        "content-security-policy": content_security_policy(frame_ancestors),
        "x-content-type-options": "nosniff",
        "referrer-policy": "strict-origin-when-cross-origin",
        "cross-origin-opener-policy": "same-origin",
        "permissions-policy": "camera=(), microphone=(), geolocation=()",
    }
    return [(k.encode(), v.encode()) for k, v in headers.items()]


class SecurityHeaders:
    """Adds the headers above to every HTTP response, error responses included."""

    def __init__(self, app: ASGIApp, frame_ancestors: str) -> None:
        self.app = app
        self.headers = security_headers(frame_ancestors)
        self.names = {name for name, _ in self.headers}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [h for h in message.get("headers", []) if h[0].lower() not in self.names]
                message["headers"] = kept + self.headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
