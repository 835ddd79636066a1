"""The guided walk-through of one head, step by step, on any lab state."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.lab.form import LabForm
from app.features.walkthrough.form import WalkForm
from app.features.walkthrough.page import walkthrough_page
from app.web.deps import SettingsDep
from app.web.pages import respond

pages = APIRouter(include_in_schema=False)


@pages.get("/walkthrough", response_class=HTMLResponse)
def walkthrough_html(request: Request, settings: SettingsDep) -> HTMLResponse:
    query = request.query_params
    page = walkthrough_page(*WalkForm.read(query), LabForm.read(query), settings)
    return respond(request, page)
