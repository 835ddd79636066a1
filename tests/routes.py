"""Every route the app serves, found from the app itself, so tests written here cover pages
and endpoints that other modules add later without being edited."""

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute, iter_route_contexts

from app.main import create_app
from app.settings import Settings


def api_routes(app: FastAPI) -> dict[str, APIRoute]:
    """Full path → route, for every FastAPI route (included routers flattened)."""
    return {
        ctx.path: ctx.route
        for ctx in iter_route_contexts(app.routes)
        if isinstance(ctx.route, APIRoute)
    }


def page_routes(app: FastAPI) -> dict[str, APIRoute]:
    """GET routes that render HTML and need no path parameter: the pages."""
    return {
        path: r
        for path, r in api_routes(app).items()
        if "GET" in r.methods and r.response_class is HTMLResponse and not r.dependant.path_params
    }


def query_params(route: APIRoute) -> list[str]:
    """The query parameters a route reads (a page's state in the URL), dependencies included."""
    names: set[str] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        names.update(p.alias for p in dependant.query_params)
        stack.extend(dependant.dependencies)
    return sorted(names)


def api_field_names(app: FastAPI) -> set[str]:
    """Every query parameter and top-level body field the API documents: the names a page's
    URL state uses too, even when the page reads its query string by hand."""
    spec = app.openapi()
    names: set[str] = set()
    for methods in spec["paths"].values():
        for op in methods.values():
            names.update(p["name"] for p in op.get("parameters", []))
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            ref = body.get("schema", {}).get("$ref", "")
            if ref:
                model = spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]
                names.update(model.get("properties", {}))
    return names


APP = create_app(Settings())
PAGES = {path: query_params(route) for path, route in sorted(page_routes(APP).items())}
# What each page may read from its URL: its declared parameters and the API's field names.
PAGE_STATE = {path: sorted(set(names) | api_field_names(APP)) for path, names in PAGES.items()}
