"""HTML routes: parse → compute → render, with the same service calls as the API."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.config import Settings, get_settings
from app.routes.api import MeasurementsDep
from app.schemas import AttentionRequest
from app.service import compute_attention
from app.templating import templates
from app.views import cost_page_context, head_figures

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


@router.get("/", response_class=HTMLResponse)
def lab(request: Request, settings: SettingsDep) -> HTMLResponse:
    result = compute_attention(AttentionRequest(), settings)
    context = {"result": result, "figures": head_figures(result)}
    return templates.TemplateResponse(request, "lab.html", context)


@router.get("/cost", response_class=HTMLResponse)
def cost(request: Request, measurements: MeasurementsDep) -> HTMLResponse:
    context, status = cost_page_context(dict(request.query_params), measurements)
    return templates.TemplateResponse(request, "cost.html", context, status_code=status)
