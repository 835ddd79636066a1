"""JSON routes: parse → compute → return."""

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query, Request

from app.cache import cacheable
from app.config import Settings, get_settings
from app.cost_service import compute_cost, preset_list
from app.measure import MeasurementCache
from app.requests import JSONRoute
from app.responses import JSONResponse
from app.schemas import (
    WORKED_EXAMPLE_REQUEST,
    AttentionRequest,
    AttentionResponse,
    CostQuery,
    DecodeRequest,
    DecodeResponse,
    ErrorResponse,
    HeadsRequest,
    HeadsResponse,
    ModelRequest,
    ModelResponse,
    TiledRequest,
    TiledResponse,
)
from app.service import (
    compute_attention,
    compute_decode,
    compute_heads,
    compute_model,
    compute_tiled,
)

router = APIRouter(prefix="/api", tags=["api"], route_class=JSONRoute)
SettingsDep = Annotated[Settings, Depends(get_settings)]
ERRORS = {422: {"model": ErrorResponse}, 413: {"model": ErrorResponse}}
WORKED_EXAMPLE = {
    "worked": {
        "summary": 'The worked example "The cat sleeps" (the same as {})',
        "value": WORKED_EXAMPLE_REQUEST,
    }
}
AttentionBody = Annotated[AttentionRequest, Body(openapi_examples=WORKED_EXAMPLE)]


@router.post(
    "/attention",
    response_model=AttentionResponse,
    responses=ERRORS,
    dependencies=[Depends(cacheable)],
)
async def attention(req: AttentionBody, settings: SettingsDep) -> JSONResponse:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    # async: the work is microseconds to a few milliseconds of numpy (bounded by the limits),
    # cheaper on the event loop than a hop to the thread pool and back.
    return JSONResponse(compute_attention(req, settings))


@router.post("/heads", response_model=HeadsResponse, responses=ERRORS)
def heads(req: HeadsRequest, settings: SettingsDep) -> JSONResponse:
    """h query heads over g key/value heads: every head's stages, the concatenation, W_O."""
    return JSONResponse(compute_heads(req, settings))


@router.post("/kernel/tiled", response_model=TiledResponse, responses=ERRORS)
def kernel_tiled(req: TiledRequest, settings: SettingsDep) -> JSONResponse:
    """Tiled exact attention with an online softmax, step by step, next to the dense result."""
    return JSONResponse(compute_tiled(req, settings))


@router.post("/kernel/decode", response_model=DecodeResponse, responses=ERRORS)
def kernel_decode(req: DecodeRequest, settings: SettingsDep) -> JSONResponse:
    """A prefill, then one token at a time against a growing key/value cache."""
    return JSONResponse(compute_decode(req, settings))


def get_measurements(request: Request) -> MeasurementCache:
    """The process's one timing run (built by create_app)."""
    return request.app.state.measurements


MeasurementsDep = Annotated[MeasurementCache, Depends(get_measurements)]


@router.get("/cost", responses={422: {"model": ErrorResponse}})
def cost(query: Annotated[CostQuery, Query()]) -> JSONResponse:
    """What scales quadratically: score memory, FLOPs and the KV cache for one configuration."""
    return JSONResponse(compute_cost(query))


@router.get("/cost/models")
def cost_models() -> JSONResponse:
    """Model presets: published attention configurations, each with its source."""
    return JSONResponse({"models": preset_list()})


@router.get("/cost/measure", responses={503: {"model": ErrorResponse}})
def cost_measure(measurements: MeasurementsDep) -> JSONResponse:
    """Dense attention timed on this server for a few lengths, fitted to c·n² (run once)."""
    return JSONResponse(measurements.get())


MODEL_ERRORS = {**ERRORS, 503: {"model": ErrorResponse, "description": "Model not installed"}}


@router.post(
    "/model",
    response_model=ModelResponse,
    responses=MODEL_ERRORS,
    dependencies=[Depends(cacheable)],  # a real model run: a class sending one text runs it once
)
def model(req: ModelRequest, settings: SettingsDep) -> JSONResponse:
    """all-MiniLM-L6-v2 on one sentence: every head's weights; one head's stages on request."""
    return JSONResponse(compute_model(req, settings))


health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The container's health check: 200 when the app can serve."""
    return {"status": "ok"}
