"""JSON routes: parse → compute → return."""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from app.cache import ResponseCache, get_cache
from app.config import Settings, get_settings
from app.schemas import AttentionRequest, AttentionResponse, ErrorResponse
from app.service import compute_attention

router = APIRouter(prefix="/api", tags=["api"])
SettingsDep = Annotated[Settings, Depends(get_settings)]
CacheDep = Annotated[ResponseCache, Depends(get_cache)]
ERRORS = {422: {"model": ErrorResponse}, 413: {"model": ErrorResponse}}


@router.post("/attention", response_model=AttentionResponse, responses=ERRORS)
async def attention(
    request: Request, req: AttentionRequest, settings: SettingsDep, cache: CacheDep
) -> Response:
    """One head, every stage: Q, K, V, Q·Kᵀ, scaled, masked, softmax weights, output."""
    # async: the work is microseconds to a few milliseconds of numpy (bounded by the limits),
    # cheaper on the event loop than a hop to the thread pool and back.
    return await cache.json(request, lambda: compute_attention(req, settings))


health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The container's health check: 200 when the app can serve."""
    return {"status": "ok"}
