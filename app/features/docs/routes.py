"""/docs: the OpenAPI document drawn by Swagger UI, served from this server (no CDN)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.assets import SWAGGER_CSS_URL, SWAGGER_JS_URL
from app.web.templating import templates

pages = APIRouter(include_in_schema=False)


@pages.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    urls = {"openapi_url": request.app.openapi_url, "swagger_js_url": SWAGGER_JS_URL}
    return templates.TemplateResponse(
        request, "docs/docs.html", {**urls, "swagger_css_url": SWAGGER_CSS_URL}
    )
