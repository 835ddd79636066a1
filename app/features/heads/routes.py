"""Several heads and grouped-query attention: POST /api/heads and the page /heads."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.heads.page import heads_page
from app.features.heads.schemas import HeadsRequest, HeadsResponse
from app.features.heads.service import compute_heads
from app.web.deps import ERRORS, SettingsDep
from app.web.json_io import JSONResponse, JSONRoute
from app.web.templating import templates

api = APIRouter(prefix="/api", tags=["api"], route_class=JSONRoute)
pages = APIRouter(include_in_schema=False)


@api.post("/heads", response_model=HeadsResponse, responses=ERRORS)
def heads(req: HeadsRequest, settings: SettingsDep) -> JSONResponse:
    """h query heads over g key/value heads: every head's stages, the concatenation, W_O."""
    return JSONResponse(compute_heads(req, settings))


@pages.get("/heads", response_class=HTMLResponse)
def heads_html(request: Request, settings: SettingsDep) -> HTMLResponse:
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "heads/heads.html", context)


@pages.get("/heads/fragment", response_class=HTMLResponse)
def heads_fragment(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The results part of /heads alone: what the page swaps in on a live update."""
    context = heads_page(request.query_params, settings)
    return templates.TemplateResponse(request, "heads/_results.html", context)
