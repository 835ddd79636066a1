"""Security headers on every response, pages and API alike (added by app/web/edge.py).

The Content-Security-Policy lets scripts come only from this server: no inline script, no
eval. Styles may be inline because plotly.js writes its own <style> elements and style
attributes. `frame-ancestors` comes from the settings, so a course site can embed the app.
"""

import re
import secrets
from collections.abc import Iterable

# An id sent by a proxy in front of us is kept when it looks like one; otherwise we make one.
INCOMING_ID = re.compile(r"[A-Za-z0-9._-]{8,64}")


def request_id(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The client's X-Request-ID when it looks like one, else a new id."""
    sent = next((v for k, v in headers if k == b"x-request-id"), b"").decode("latin-1")
    return sent if INCOMING_ID.fullmatch(sent) else secrets.token_hex(8)


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
