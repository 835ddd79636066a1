"""Several heads and grouped-query attention: POST /api/heads and the page /heads."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.heads.form import HeadsForm
from app.features.heads.page import heads_page
from app.features.heads.schemas import HeadsRequest, HeadsResult
from app.features.heads.service import compute_heads
from app.web.deps import ERRORS, SettingsDep
from app.web.pages import respond
from app.web.responses import JSONResponse

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)


@api.post("/heads", response_model=HeadsResult, responses=ERRORS)
def heads(req: HeadsRequest, settings: SettingsDep) -> JSONResponse:
    """h query heads over g key/value heads: every head's stages, the concatenation, W_O."""
    return JSONResponse(compute_heads(req, settings))


@pages.get("/heads", response_class=HTMLResponse)
def heads_html(request: Request, settings: SettingsDep) -> HTMLResponse:
    return respond(request, heads_page(*HeadsForm.read(request.query_params), settings))
