"""Classroom pages: the lessons list and the embed snippet (the walk-through is in its own
module). Their state is the URL, like every page."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.classroom import embed_src
from app.lessons import LESSONS
from app.templating import templates

router = APIRouter(include_in_schema=False)


@router.get("/lessons", response_class=HTMLResponse)
def lessons(request: Request) -> HTMLResponse:
    return templates.TemplateResponse(request, "lessons.html", {"lessons": LESSONS})


@router.get("/embed", response_class=HTMLResponse)
def embed(request: Request, src: str = "/") -> HTMLResponse:
    context = {"src": embed_src(src), "asked": src}
    return templates.TemplateResponse(request, "embed.html", context)
