"""/healthz and /readyz: what the container's health check, the probes and load balancers ask."""

from collections.abc import Callable

from fastapi import APIRouter, Request

from app.web.responses import JSONResponse

router = APIRouter(tags=["health"])
# Cheap, and answered under any load: the server (app/server/protocol.py) lets /healthz past
# every limit, and answers /readyz "busy" itself when a request would wait or be refused.
HEALTHZ, READYZ = "/healthz", "/readyz"
RETRY_AFTER_S = 1


def model_state(request: Request) -> str:
    state: Callable[[], str] | None = getattr(request.app.state, "model_state", None)
    return state() if state else "missing"


def decoder_state(request: Request) -> str:
    state: Callable[[], str] | None = getattr(request.app.state, "decoder_state", None)
    return state() if state else "not loaded yet"


@router.get(HEALTHZ)
async def healthz(request: Request) -> dict[str, str]:
    """Liveness (the container's health check): 200 whenever the process serves, and whether
    the trained encoder and the decoder are ready ("ready", "loading", "not loaded yet",
    "missing", "unreadable"); the other pages serve without them, so their state does not
    change the status."""
    return {"status": "ok", "model": model_state(request), "decoder": decoder_state(request)}


@router.get(READYZ, response_model=None)
async def readyz(request: Request) -> dict[str, str] | JSONResponse:
    """Readiness (what a load balancer or Kubernetes routes by): 200 "ready" when a request
    would be served now; 503 "loading" with Retry-After while a model is being read. The
    server answers 503 "busy" itself when no request would be taken."""
    if "loading" in (model_state(request), decoder_state(request)):
        return JSONResponse(
            {"status": "loading"}, status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)}
        )
    return {"status": "ready"}
