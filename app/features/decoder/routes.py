"""A real decoder, its cache and its next token: POST /api/decoder, GET /api/decoder/measure."""

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from app.features.decoder.form import DecoderForm
from app.features.decoder.measure import DecodeTiming, decode_timing
from app.features.decoder.page import decoder_page
from app.features.decoder.results import DecoderResult
from app.features.decoder.schemas import DecoderRequest
from app.features.decoder.service import compute_decoder, ready_decoder
from app.features.decoder.store import decoder_store
from app.settings import Settings
from app.web.cache import cacheable
from app.web.deps import ERRORS, ErrorResponse, SettingsDep
from app.web.pages import FRAGMENT, respond
from app.web.responses import JSONResponse


@asynccontextmanager
async def preload(app: FastAPI) -> AsyncIterator[None]:
    """At start-up: /healthz reports the decoder's state, and it starts loading (a thread of
    its own) unless the settings say to wait for the first request."""
    settings: Settings = app.state.settings
    store = decoder_store(settings.decoder_gguf, settings.cache_dir)
    app.state.decoder_state = lambda: store.state
    if settings.decoder_preload:
        store.start()
    yield


api = APIRouter(prefix="/api", tags=["api"], lifespan=preload)
pages = APIRouter(include_in_schema=False)
DISCONNECT_POLL_S = 0.02
CLIENT_GONE = 499  # nginx's "client closed request": nobody reads it, the log line does
DECODER_ERRORS = {
    **ERRORS,
    503: {"model": ErrorResponse, "description": "Model not installed, or still loading"},
}


@api.post(
    "/decoder",
    response_model=DecoderResult,
    responses=DECODER_ERRORS,
    dependencies=[Depends(cacheable)],  # seeded: the same request gives the same answer
)
def decoder(req: DecoderRequest, settings: SettingsDep) -> JSONResponse:
    """SmolLM2-135M-Instruct on a prompt: next-token candidates, surprisal, generation with
    its KV cache, what each head does, one head's stages on request (503 with Retry-After
    while the model loads)."""
    return JSONResponse(compute_decoder(req, settings).json())


@api.get("/decoder/measure", response_model=DecodeTiming, responses=DECODER_ERRORS)
async def decoder_measure(settings: SettingsDep) -> JSONResponse:
    """One decoding step with the cache and the same step recomputed without it, timed at a
    few lengths (once per process); 503 with Retry-After while the run goes on. Async: a
    caller waiting for the model or the run holds no thread."""
    loaded = await ready_decoder(settings)
    timing = decode_timing(
        loaded.weights, settings.measure_time_cap_seconds, settings.measure_wait_seconds
    )
    return JSONResponse(await timing.get())


class ReaderGone(Exception):  # noqa: N818 (not an error: the reader asked for something newer)
    """The request's client disconnected: its page is no longer wanted."""


@pages.get("/decoder", response_class=HTMLResponse)
async def decoder_html(request: Request, settings: SettingsDep) -> Response:
    """The page, computed in a worker thread. Async so that, while it computes, a reader who
    typed on (live.js aborts the older request, closing its connection) stops the model
    between two layers rather than leaving it to finish a page nobody will see."""
    gone = threading.Event()

    def check() -> None:
        if gone.is_set():
            raise ReaderGone

    async def watch() -> None:
        while not await request.is_disconnected():
            await anyio.sleep(DISCONNECT_POLL_S)
        gone.set()

    form = DecoderForm.read(request.query_params)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            page = await anyio.to_thread.run_sync(lambda: decoder_page(*form, settings, check))
            tasks.cancel_scope.cancel()
    except ReaderGone:
        return Response(status_code=CLIENT_GONE)
    response = respond(request, page)
    if page.view.status and request.query_params.get(FRAGMENT) != "1":
        response.status_code = page.view.status  # the server lacks the model, not the reader
        if page.view.retry_after:
            response.headers["Retry-After"] = str(page.view.retry_after)
    return response
