"""HTML routes: parse → compute → render, with the same service calls as the API."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.config import Settings, get_settings
from app.schemas import AttentionRequest
from app.service import compute_attention
from app.templating import templates
from app.views import head_figures, heads_page

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


@router.get("/", response_class=HTMLResponse)
def lab(request: Request, settings: SettingsDep) -> HTMLResponse:
    result = compute_attention(AttentionRequest(), settings)
    context = {"result": result, "figures": head_figures(result)}
    return templates.TemplateResponse(request, "lab.html", context)


@router.get("/heads", response_class=HTMLResponse)
def heads(request: Request, settings: SettingsDep) -> HTMLResponse:
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "heads.html", context)


@router.get("/heads/fragment", response_class=HTMLResponse)
def heads_fragment(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The results part of /heads alone: what the page swaps in on a live update."""
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "_heads_results.html", context)
