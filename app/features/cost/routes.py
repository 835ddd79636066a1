"""What scales quadratically: GET /api/cost, /api/cost/models, /api/cost/measure and /cost."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from app.features.cost.measure import Measurement, MeasurementCache
from app.features.cost.page import cost_measurement, cost_page_context
from app.features.cost.schemas import CostQuery, CostResult, PresetList
from app.features.cost.service import compute_cost, preset_list
from app.web.deps import ErrorResponse, PageQuery, page_query
from app.web.responses import JSONResponse
from app.web.templating import page_response

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


def cost_page(
    request: Request, params: dict[str, str], measured: tuple[Any, str | None]
) -> HTMLResponse:
    context, status = cost_page_context(params, *measured)
    return page_response(request, "cost/cost.html", context, status)


@pages.get("/cost", response_class=HTMLResponse)
async def cost_html(
    request: Request,
    query: Annotated[PageQuery, page_query(CostQuery, "measure")],
    measurements: MeasurementsDep,
) -> HTMLResponse:
    """Async so that waiting for a timing run holds no thread; the page is built in one."""
    params = query.last()
    measured = await cost_measurement(params, measurements)
    return await run_in_threadpool(cost_page, request, params, measured)
