"""/healthz: what the container's health check and the probes ask."""

from fastapi import APIRouter

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The container's health check: 200 when the app can serve."""
    return {"status": "ok"}
