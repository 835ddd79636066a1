"""Several heads and grouped-query attention: POST /api/heads and the page /heads."""

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.heads.page import HeadsForm, heads_page
from app.features.heads.schemas import HeadsRequest, HeadsResult
from app.features.heads.service import compute_heads
from app.web.deps import ERRORS, PageQuery, SettingsDep, page_query
from app.web.responses import JSONResponse
from app.web.templating import page_response

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)
HeadsQuery = Annotated[PageQuery, page_query(HeadsForm)]


@api.post("/heads", response_model=HeadsResult, responses=ERRORS)
def heads(req: HeadsRequest, settings: SettingsDep) -> JSONResponse:
    """h query heads over g key/value heads: every head's stages, the concatenation, W_O."""
    return JSONResponse(compute_heads(req, settings))


@pages.get("/heads", response_class=HTMLResponse)
def heads_html(request: Request, query: HeadsQuery, settings: SettingsDep) -> HTMLResponse:
    context = heads_page(query.last(), settings)
    status = 422 if context["errors"] else 200  # like every page: bad input is a 422
    return page_response(request, "heads/heads.html", context, status)


@pages.get("/heads/fragment", response_class=HTMLResponse)
def heads_fragment(request: Request, query: HeadsQuery, settings: SettingsDep) -> HTMLResponse:
    """The results part of /heads alone: what the page swaps in on a live update."""
    context = heads_page(query.last(), settings)
    status = 422 if context["errors"] else 200
    return page_response(request, "heads/_results.html", context, status)
