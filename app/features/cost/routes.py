"""What scales quadratically: GET /api/cost, /api/cost/models, /api/cost/measure and /cost."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from app.features.cost.form import CostForm
from app.features.cost.measure import Measurement, MeasurementCache
from app.features.cost.page import cost_measurement, cost_page
from app.features.cost.schemas import CostQuery, CostResult, PresetList
from app.features.cost.service import compute_cost, preset_list
from app.web.deps import ErrorResponse
from app.web.pages import respond
from app.web.responses import JSONResponse

api = APIRouter(prefix="/api", tags=["api"])
pages = APIRouter(include_in_schema=False)


async def get_measurements(request: Request) -> MeasurementCache:
    """The process's one timing run (built by create_app); async, so no thread is borrowed."""
    return request.app.state.measurements


MeasurementsDep = Annotated[MeasurementCache, Depends(get_measurements)]


@api.get("/cost", response_model=CostResult, responses={422: {"model": ErrorResponse}})
def cost(query: Annotated[CostQuery, Query()]) -> JSONResponse:
    """What scales quadratically: score memory, FLOPs and the KV cache for one configuration."""
    return JSONResponse(compute_cost(query))


@api.get("/cost/models", response_model=PresetList)
def cost_models() -> JSONResponse:
    """Model presets: published attention configurations, each with its source."""
    return JSONResponse(PresetList(models=preset_list()))


@api.get("/cost/measure", response_model=Measurement, responses={503: {"model": ErrorResponse}})
async def cost_measure(measurements: MeasurementsDep) -> JSONResponse:
    """Dense attention timed on this server for a few lengths, fitted to c·n² (run once).
    Async: a caller waiting for the run holds no thread."""
    return JSONResponse(await measurements.get())


@pages.get("/cost", response_class=HTMLResponse)
async def cost_html(request: Request, measurements: MeasurementsDep) -> HTMLResponse:
    """Async so that waiting for a timing run holds no thread; the page is built in one."""
    form, problems, notes = CostForm.read(request.query_params)
    measured = await cost_measurement(form, measurements)
    return await run_in_threadpool(
        lambda: respond(request, cost_page(form, problems, notes, measured))
    )
