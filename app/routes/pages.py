"""HTML routes: parse → compute → render, with the same service calls as the API."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.config import Settings, get_settings
from app.schemas import AttentionRequest
from app.service import compute_attention
from app.templating import templates
from app.views import head_figures, model_page

router = APIRouter(include_in_schema=False)
SettingsDep = Annotated[Settings, Depends(get_settings)]


@router.get("/", response_class=HTMLResponse)
def lab(request: Request, settings: SettingsDep) -> HTMLResponse:
    result = compute_attention(AttentionRequest(), settings)
    context = {"result": result, "figures": head_figures(result)}
    return templates.TemplateResponse(request, "lab.html", context)


@router.get("/model", response_class=HTMLResponse)
def model(request: Request, settings: SettingsDep) -> HTMLResponse:
    """A trained model's heads on the sentence in the URL: ?text=…&layer=…&head=…"""
    context, status = model_page(dict(request.query_params), settings)
    return templates.TemplateResponse(request, "model.html", context, status_code=status)
