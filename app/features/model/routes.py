"""A real trained model's heads: POST /api/model and the page /model."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from app.features.model.form import ModelForm
from app.features.model.page import model_page
from app.features.model.results import ModelResult
from app.features.model.schemas import ModelRequest
from app.features.model.service import compute_model
from app.web.cache import cacheable
from app.web.classroom import Classroom
from app.web.deps import ERRORS, ClientCheck, ErrorResponse, SettingsDep
from app.web.pages import FRAGMENT, respond
from app.web.responses import JSONResponse

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)
MODEL_ERRORS = {**ERRORS, 503: {"model": ErrorResponse, "description": "Model not installed"}}


@api.post(
    "/model",
    response_model=ModelResult,
    responses=MODEL_ERRORS,
    dependencies=[Depends(cacheable)],  # a real model run: a class sending one text runs it once
)
def model(req: ModelRequest, settings: SettingsDep, check: ClientCheck) -> JSONResponse:
    """all-MiniLM-L6-v2 on one sentence: every head's weights; one head's stages on request.
    A ranking of the heads stops, between layers, when the client leaves."""
    return JSONResponse(compute_model(req, settings, check=check).json())


@pages.get("/model", response_class=HTMLResponse)
def model_html(request: Request, settings: SettingsDep, check: ClientCheck) -> HTMLResponse:
    """A trained model's heads on the sentence in the URL: ?text=…&layer=…&head=…"""
    link = Classroom.from_request(request).link  # the grid's panels link to their heads
    page = model_page(*ModelForm.read(request.query_params), settings, link, check)
    response = respond(request, page)
    if page.view.unavailable and request.query_params.get(FRAGMENT) != "1":
        response.status_code = 503  # the server lacks the model: no input of the reader's
    return response
