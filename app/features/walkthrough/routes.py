"""The guided walk-through of one head, step by step, on any lab state."""

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.lab.form import LabForm
from app.features.walkthrough.page import WalkthroughParams, walkthrough_context
from app.web.deps import PageQuery, SettingsDep, page_query
from app.web.templating import templates

pages = APIRouter(include_in_schema=False)


@pages.get("/walkthrough", response_class=HTMLResponse)
def walkthrough(
    request: Request,
    query: Annotated[PageQuery, page_query(WalkthroughParams, *LabForm.model_fields)],
    settings: SettingsDep,
) -> HTMLResponse:
    context = walkthrough_context(query.items, settings)
    return templates.TemplateResponse(request, "walkthrough/walkthrough.html", context)
