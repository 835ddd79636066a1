"""Classroom pages: the lessons list and the embed snippet. Their state is the URL, like
every page."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.core.lessons import LESSONS
from app.core.limits import MAX_ECHO_CHARS
from app.web.classroom import embed_src
from app.web.templating import templates

pages = APIRouter(include_in_schema=False)


@pages.get("/lessons", response_class=HTMLResponse)
def lessons(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "classroom/lessons.html", {"lessons": LESSONS})


@pages.get("/embed", response_class=HTMLResponse)
def embed(request: Request, src: str = "/") -> HTMLResponse:
    context = {"src": embed_src(src), "asked": src[:MAX_ECHO_CHARS]}  # named, not repeated
    return templates.TemplateResponse(request, "classroom/embed.html", context)
