"""JSON routes: parse → compute → return."""

from typing import Annotated

from fastapi import APIRouter, Body, Depends

from app.config import Settings, get_settings
from app.requests import JSONRoute
from app.responses import JSONResponse
from app.schemas import (
    WORKED_EXAMPLE_REQUEST,
    AttentionRequest,
    AttentionResponse,
    ErrorResponse,
    ModelRequest,
    ModelResponse,
)
from app.service import compute_attention, compute_model

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


@router.post("/attention", response_model=AttentionResponse, responses=ERRORS)
def attention(req: AttentionBody, settings: SettingsDep) -> JSONResponse:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    return JSONResponse(compute_attention(req, settings))


MODEL_ERRORS = {**ERRORS, 503: {"model": ErrorResponse, "description": "Model not installed"}}


@router.post("/model", response_model=ModelResponse, responses=MODEL_ERRORS)
def model(req: ModelRequest, settings: SettingsDep) -> JSONResponse:
    """all-MiniLM-L6-v2 on one sentence: every head's weights; one head's stages on request."""
    return JSONResponse(compute_model(req, settings))


health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
def healthz() -> dict[str, str]:
    """The container's health check: 200 when the app can serve."""
    return {"status": "ok"}
