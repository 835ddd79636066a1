"""The guided walk-through of one head, step by step, on any lab state."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.walkthrough.page import walkthrough_context
from app.web.deps import SettingsDep
from app.web.templating import templates

pages = APIRouter(include_in_schema=False)


@pages.get("/walkthrough", response_class=HTMLResponse)
def walkthrough(request: Request, settings: SettingsDep) -> HTMLResponse:
    context = walkthrough_context(request.query_params.multi_items(), settings)
    return templates.TemplateResponse(request, "walkthrough/walkthrough.html", context)
