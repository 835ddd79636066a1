"""Classroom pages: the guided walk-through, the lessons list and the embed snippet.
Their state is the URL, like every page."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.classroom import embed_src
from app.config import Settings, get_settings
from app.lessons import LESSONS
from app.templating import templates
from app.walkthrough import walkthrough_context

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


@router.get("/walkthrough", response_class=HTMLResponse)
def walkthrough(request: Request, settings: SettingsDep) -> HTMLResponse:
    context = walkthrough_context(request.query_params.multi_items(), settings)
    return templates.TemplateResponse(request, "walkthrough.html", context)


@router.get("/lessons", response_class=HTMLResponse)
def lessons(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "lessons.html", {"lessons": LESSONS})


@router.get("/embed", response_class=HTMLResponse)
def embed(request: Request, src: str = "/") -> HTMLResponse:
    context = {"src": embed_src(src), "asked": src}
    return templates.TemplateResponse(request, "embed.html", context)
