"""The short way for the JSON APIs: a POST of a JSON body to an API path that FastAPI has
already routed once goes straight to its route (app/web/json_io.py's DirectRoute).

The first such request goes the long way, through the classroom view and FastAPI's routing,
exception layers and request wrapper; the JSON route it reaches puts itself in this layer's
table under the request's path (only a route called directly, whose path has no parameters,
does: see `json_io.fixed_path`). Every later POST to that path is answered by the route
itself, with what those layers did for it and nothing more: served in the language of its
Accept-Language (the budget's sentence is translated), its errors answered by the app's
handlers. A request with a query string (which may choose the language), without a
Content-Length or with a body that is not JSON (FastAPI's own answers), and any request
while the app has dependency overrides, still goes the long way.
"""

from starlette.types import ASGIApp, Receive, Scope, Send

from app.core.i18n import use_locale
from app.web.classroom import request_locale
from app.web.json_io import DIRECT_ROUTES, DirectRoute
from app.web.middleware.body_limits import is_json


class DirectRoutes:
    """Pure ASGI middleware: the table of routes called directly, and the calls."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.routes: dict[str, DirectRoute] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = None
        if scope["type"] == "http" and scope["method"] == "POST":
            route = self.routes.get(scope["path"])
            scope[DIRECT_ROUTES] = self.routes
        if route is None or route.overrides or scope.get("query_string") or not json_body(scope):
            await self.app(scope, receive, send)
            return
        with use_locale(request_locale(scope)):
            await route(scope, receive, send)


def json_body(scope: Scope) -> bool:
    """Whether the request says it sends a JSON body of some bytes."""
    length, kind = b"0", b""
    for name, value in scope["headers"]:
        if name == b"content-length":
            length = value
        elif name == b"content-type":
            kind = value
    return length != b"0" and is_json(kind)
