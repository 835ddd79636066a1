"""/healthz: what the container's health check and the probes ask."""

from collections.abc import Callable

from fastapi import APIRouter, Request

router = APIRouter(tags=["health"])
# The health checks: cheap, answered under any load (app/web/server.py), no layer but the edge.
HEALTH_PATHS = frozenset({"/healthz", "/readyz"})


@router.get("/healthz")
async def healthz(request: Request) -> dict[str, str]:
    """The container's health check: 200 when the app can serve, and whether the trained
    encoder and the decoder are ready ("ready", "not loaded yet", "missing", "unreadable"; the
    decoder also "loading"); the other pages serve without them, so their state does not
    change the status."""
    model_state: Callable[[], str] | None = getattr(request.app.state, "model_state", None)
    decoder_state: Callable[[], str] | None = getattr(request.app.state, "decoder_state", None)
    return {
        "status": "ok",
        "model": model_state() if model_state else "missing",
        "decoder": decoder_state() if decoder_state else "not loaded yet",
    }
