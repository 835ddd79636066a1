"""Inside the kernel: POST /api/kernel/tiled, POST /api/kernel/decode and the page /kernel."""

from typing import Annotated

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.responses import Response

from app.features.kernel.page import KernelParams, kernel_context
from app.features.kernel.results import DecodeResult, TiledResult
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.lab.form import LabForm
from app.features.lab.page import lab_head
from app.web.deps import ERRORS, PageQuery, SettingsDep, page_query
from app.web.responses import JSONResponse
from app.web.templating import page_response

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)
KernelQuery = Annotated[PageQuery, page_query(KernelParams, *LabForm.model_fields)]


@api.post("/kernel/tiled", response_model=TiledResult, responses=ERRORS)
def kernel_tiled(req: TiledRequest, settings: SettingsDep) -> JSONResponse:
    """Tiled exact attention with an online softmax, step by step, next to the dense result."""
    return JSONResponse(compute_tiled(req, settings))


@api.post("/kernel/decode", response_model=DecodeResult, responses=ERRORS)
def kernel_decode(req: DecodeRequest, settings: SettingsDep) -> JSONResponse:
    """A prefill, then one token at a time against a growing key/value cache."""
    return JSONResponse(compute_decode(req, settings))


@pages.get("/kernel", response_class=HTMLResponse)
def kernel(request: Request, query: KernelQuery, settings: SettingsDep) -> Response:
    """Tiled attention and cached decoding of the lab's state, each at the step in the URL."""
    lab = lab_head(*LabForm.read(request.query_params), settings)
    context = kernel_context(lab, query.last(), settings)
    status = 422 if context["messages"]["problems"] else 200
    return page_response(request, "kernel/kernel.html", context, status)
