"""HTML routes: parse → compute → render, with the same service calls as the API."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from app.config import Settings, get_settings
from app.kernel_views import kernel_context
from app.schemas import AttentionRequest, KernelPageQuery
from app.service import compute_attention
from app.templating import templates
from app.views import head_figures

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


@router.get("/", response_class=HTMLResponse)
def lab(request: Request, settings: SettingsDep) -> HTMLResponse:
    result = compute_attention(AttentionRequest(), settings)
    context = {"result": result, "figures": head_figures(result)}
    return templates.TemplateResponse(request, "lab.html", context)


@router.get("/kernel", response_class=HTMLResponse)
def kernel(
    request: Request, query: Annotated[KernelPageQuery, Query()], settings: SettingsDep
) -> HTMLResponse:
    context = kernel_context(query, settings, request.url)
    return templates.TemplateResponse(request, "kernel.html", context)
