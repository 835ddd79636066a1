"""/docs: the OpenAPI document drawn by Swagger UI, served from this server (no CDN)."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.templating import templates

pages = APIRouter(include_in_schema=False)


@pages.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(
        request, "docs/docs.html", {"openapi_url": request.app.openapi_url}
    )
