"""JSON routes: parse → compute → return."""

from typing import Annotated

from fastapi import APIRouter, Depends

from app.config import Settings, get_settings
from app.responses import JSONResponse
from app.schemas import (
    AttentionRequest,
    AttentionResponse,
    ErrorResponse,
    HeadsRequest,
    HeadsResponse,
)
from app.service import compute_attention, compute_heads

router = APIRouter(prefix="/api", tags=["api"])
SettingsDep = Annotated[Settings, Depends(get_settings)]
ERRORS = {422: {"model": ErrorResponse}, 413: {"model": ErrorResponse}}


@router.post("/attention", response_model=AttentionResponse, responses=ERRORS)
def attention(req: AttentionRequest, settings: SettingsDep) -> JSONResponse:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    return JSONResponse(compute_attention(req, settings))


@router.post("/heads", response_model=HeadsResponse, responses=ERRORS)
def heads(req: HeadsRequest, settings: SettingsDep) -> JSONResponse:
    """h query heads over g key/value heads: every head's stages, the concatenation, W_O."""
    return JSONResponse(compute_heads(req, settings))


health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
def healthz() -> dict[str, str]:
    """The container's health check: 200 when the app can serve."""
    return {"status": "ok"}
