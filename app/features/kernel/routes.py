"""Inside the kernel: POST /api/kernel/tiled, POST /api/kernel/decode and the page /kernel."""

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.features.kernel.form import KernelForm
from app.features.kernel.page import kernel_page
from app.features.kernel.results import DecodeResult, TiledResult
from app.features.kernel.schemas import DecodeRequest, TiledRequest
from app.features.kernel.service import compute_decode, compute_tiled
from app.features.lab.form import LabForm
from app.features.lab.page import lab_head
from app.web.deps import ERRORS, SettingsDep
from app.web.pages import respond
from app.web.responses import JSONResponse

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)


@api.post("/kernel/tiled", response_model=TiledResult, responses=ERRORS)
def kernel_tiled(req: TiledRequest, settings: SettingsDep) -> JSONResponse:
    """Tiled exact attention with an online softmax, step by step, next to the dense result."""
    return JSONResponse(compute_tiled(req, settings))


@api.post("/kernel/decode", response_model=DecodeResult, responses=ERRORS)
def kernel_decode(req: DecodeRequest, settings: SettingsDep) -> JSONResponse:
    """A prefill, then one token at a time against a growing key/value cache."""
    return JSONResponse(compute_decode(req, settings))


@pages.get("/kernel", response_class=HTMLResponse)
def kernel_html(request: Request, settings: SettingsDep) -> HTMLResponse:
    """Tiled attention and cached decoding of the lab's state, each at the step in the URL."""
    lab = lab_head(*LabForm.read(request.query_params), settings)
    return respond(request, kernel_page(*KernelForm.read(request.query_params), lab, settings))
