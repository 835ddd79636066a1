"""Every route the app serves, found from the app itself, so tests written here cover pages
and endpoints that other modules add later without being edited."""

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute, iter_route_contexts

from app.main import create_app
from app.settings import Settings
from app.web.pages import PageForm


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


def page_forms() -> list[type[PageForm]]:
    """Every PageForm the app defines (app/web/pages.py), subclasses of subclasses included."""
    found, stack = [], [PageForm]
    while stack:
        form = stack.pop()
        found.append(form)
        stack.extend(form.__subclasses__())
    return found[1:]


def feature(module: str) -> str:
    """app.features.heads.routes → app.features.heads"""
    return module.rsplit(".", 1)[0]


def query_params(route: APIRoute) -> list[str]:
    """The query parameters a route reads (a page's state in the URL): those FastAPI knows
    (its own and its dependencies') and the fields of the page forms its feature defines (a
    page that reads `SomeForm.read(request.query_params)`)."""
    names: set[str] = {
        name
        for form in page_forms()
        if feature(form.__module__) == feature(route.endpoint.__module__)
        for name in form.model_fields
    }
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        names.update(p.alias for p in dependant.query_params)
        stack.extend(dependant.dependencies)
    return sorted(names)


APP = create_app(Settings())
# What each page reads from its URL, as it declares it.
PAGE_STATE = {path: query_params(route) for path, route in sorted(page_routes(APP).items())}
PAGES = list(PAGE_STATE)
