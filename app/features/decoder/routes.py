"""A real decoder, its cache and its next token: POST /api/decoder, GET /api/decoder/measure."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse

from app.features.decoder.form import DecoderForm
from app.features.decoder.measure import DecodeTiming, decode_timing
from app.features.decoder.page import decoder_page
from app.features.decoder.results import DecoderResult
from app.features.decoder.schemas import DecoderRequest
from app.features.decoder.service import compute_decoder, ready_decoder
from app.features.decoder.store import decoder_store
from app.settings import Settings
from app.web.cache import cacheable
from app.web.classroom import Classroom
from app.web.deps import ERRORS, ClientCheck, ErrorResponse, SettingsDep
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
def decoder(req: DecoderRequest, settings: SettingsDep, check: ClientCheck) -> JSONResponse:
    """SmolLM2-135M-Instruct on a prompt: next-token candidates, surprisal, generation with
    its KV cache, what each head does, one head's stages on request (503 with Retry-After
    while the model loads). The work stops, between layers, when the client leaves."""
    return JSONResponse(compute_decoder(req, settings, check).json())


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


@pages.get("/decoder", response_class=HTMLResponse)
def decoder_html(request: Request, settings: SettingsDep, check: ClientCheck) -> HTMLResponse:
    """The page; its model stops between layers when the reader has gone (live.js aborts the
    older request when a key follows)."""
    link = Classroom.from_request(request).link  # the figures' links keep the view
    page = decoder_page(*DecoderForm.read(request.query_params), settings, check, link)
    response = respond(request, page)
    if page.view.status and request.query_params.get(FRAGMENT) != "1":
        response.status_code = page.view.status  # the server lacks the model, not the reader
        if page.view.retry_after:
            response.headers["Retry-After"] = str(page.view.retry_after)
    return response
