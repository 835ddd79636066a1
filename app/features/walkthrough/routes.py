"""The guided walk-through of one head, step by step, on any lab state."""

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.lab.state import LabParams
from app.features.walkthrough.form import WalkForm
from app.features.walkthrough.page import walkthrough_page
from app.web.deps import PageQuery, SettingsDep, page_query
from app.web.pages import respond

pages = APIRouter(include_in_schema=False)

# The lab state's parameters (a long text cut to what the server can use, and said) and the
# walk-through's own, which WalkForm reads.
WalkQuery = Annotated[PageQuery, page_query(LabParams, *WalkForm.model_fields)]


@pages.get("/walkthrough", response_class=HTMLResponse)
def walkthrough_html(request: Request, query: WalkQuery, settings: SettingsDep) -> HTMLResponse:
    form, problems, notes = WalkForm.read(request.query_params)
    return respond(request, walkthrough_page(form, problems, notes, query.items, settings))
