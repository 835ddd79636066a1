"""The baseline of bench/bench_load.py: a bare FastAPI app whose routes return fixed bytes
of the size of Attention Lab's real answers (BENCH_API_BYTES, BENCH_PAGE_BYTES)."""

import os

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response


def bare_app() -> FastAPI:
    """The baseline: the same routes, each returning fixed bytes of the real body's size."""
    api_body = b"x" * int(os.environ["BENCH_API_BYTES"])
    page_body = b"x" * int(os.environ["BENCH_PAGE_BYTES"])
    app = FastAPI()

    @app.post("/api/attention")
    async def attention() -> Response:
        return Response(api_body, media_type="application/json")

    @app.get("/", response_class=HTMLResponse)
    async def page() -> Response:
        return HTMLResponse(page_body)

    return app
