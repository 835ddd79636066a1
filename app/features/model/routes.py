"""A real trained model's heads: POST /api/model and the page /model."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.features.model.page import model_page
from app.features.model.results import ModelResult
from app.features.model.schemas import ModelPageParams, ModelRequest
from app.features.model.service import compute_model
from app.web.cache import cacheable
from app.web.deps import ERRORS, ErrorResponse, PageQuery, SettingsDep, page_query
from app.web.responses import JSONResponse
from app.web.templating import page_response

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)
MODEL_ERRORS = {**ERRORS, 503: {"model": ErrorResponse, "description": "Model not installed"}}


@api.post(
    "/model",
    response_model=ModelResult,
    responses=MODEL_ERRORS,
    dependencies=[Depends(cacheable)],  # a real model run: a class sending one text runs it once
)
def model(req: ModelRequest, settings: SettingsDep) -> JSONResponse:
    """all-MiniLM-L6-v2 on one sentence: every head's weights; one head's stages on request."""
    return JSONResponse(compute_model(req, settings).json())


@pages.get("/model", response_class=HTMLResponse)
def model_html(
    request: Request,
    query: Annotated[PageQuery, page_query(ModelPageParams)],
    settings: SettingsDep,
) -> HTMLResponse:
    """A trained model's heads on the sentence in the URL: ?text=…&layer=…&head=…"""
    params: dict[str, object] = dict(query.last())
    for name in ("off", "lines"):  # one value per head switched off, or drawn as lines
        params[name] = [v for k, v in query.items if k == name]
    context, status = model_page(params, settings)
    return page_response(request, "model/model.html", context, status)
