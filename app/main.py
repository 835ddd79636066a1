"""Assemble the app: settings, routers, static files, error translators, middleware."""

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from app import STATIC_DIR
from app.core.errors import BusyError, InputError, ModelUnavailableError
from app.features.classroom import routes as classroom
from app.features.cost import routes as cost
from app.features.cost.measure import MeasurementCache
from app.features.docs import routes as docs
from app.features.heads import routes as heads
from app.features.kernel import routes as kernel
from app.features.lab import routes as lab
from app.features.model import routes as model
from app.features.model.store import model_state
from app.features.walkthrough import routes as walkthrough
from app.settings import Settings, environment_settings
from app.web import assets, handlers, health
from app.web.classroom import ClassroomMiddleware
from app.web.middleware.body_limits import BodySizeLimit
from app.web.middleware.cache import CachedAnswers, ResponseCache
from app.web.middleware.compression import compression
from app.web.middleware.requestlog import RequestLog, configure_logging
from app.web.middleware.security import SecurityHeaders


@asynccontextmanager
async def frozen_start(application: FastAPI) -> AsyncIterator[None]:
    """Once started, move every object made so far (modules, routes, templates) out of the
    garbage collector's sight: a full collection then scans only what requests leave
    behind, a fraction of a millisecond instead of tens that would stall every request."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or environment_settings()
    configure_logging(settings.log_level)
    application = FastAPI(
        title="Attention Lab",
        summary="Transformer self-attention, computed stage by stage on the server.",
        version="0.1.0",
        lifespan=frozen_start if settings.freeze_gc else None,
        docs_url=None,  # /docs is ours (app/routes/docs.py): Swagger UI without a CDN
        redoc_url=None,
    )
    application.state.settings = settings  # read by the get_settings dependency
    # Starlette's own slash redirect writes the Host header into Location: handlers.slash_twin
    # answers the 404 with a relative one instead.
    application.router.redirect_slashes = False
    cache = ResponseCache(
        settings.response_cache_bytes, max_entry_bytes=settings.response_cache_bytes // 64
    )
    application.state.response_cache = cache
    application.state.model_state = partial(model_state, settings.model_dir)
    application.state.measurements = MeasurementCache(
        settings.measure_max_n, settings.measure_time_cap_seconds, settings.measure_wait_seconds
    )
    application.add_exception_handler(RequestValidationError, handlers.request_validation_handler)
    application.add_exception_handler(InputError, handlers.input_error_handler)
    application.add_exception_handler(BusyError, handlers.busy_handler)
    application.add_exception_handler(ModelUnavailableError, handlers.model_unavailable_handler)
    application.add_exception_handler(HTTPException, handlers.http_error_handler)
    # Middleware, innermost first: the classroom view (language, presenter mode, embed,
    # lesson: lifted off the query for the templates to carry on, inside the cache so that
    # its key holds them), answers kept by the cache (uncompressed), compression (zstd, br or
    # gzip at fast levels; large answers in a worker thread and kept compressed; plotly.js
    # arrives already gzipped: the stage matrices are full-precision floats that slower
    # levels shrink only a little more, at several times the time),
    # size caps, the request log (ids, timing, the generic answer to an unexpected error),
    # then the security headers on every answer.
    application.add_middleware(ClassroomMiddleware)
    application.add_middleware(CachedAnswers, cache=cache)
    application.add_middleware(
        compression,  # type: ignore[arg-type]  (a factory of two layers)
        thread_above=settings.compress_in_thread_bytes,
        keep_bytes=settings.compressed_cache_bytes,
    )
    application.add_middleware(
        BodySizeLimit, max_bytes=settings.max_body_bytes, max_query=settings.max_query_bytes
    )
    application.add_middleware(RequestLog)
    application.add_middleware(SecurityHeaders, frame_ancestors=settings.frame_ancestors)
    for feature in (lab, heads, kernel, cost, model):
        application.include_router(feature.api)
    application.include_router(health.router)
    for feature in (lab, heads, kernel, cost, model, walkthrough, classroom, docs):
        application.include_router(feature.pages)
    application.include_router(assets.router)
    application.mount("/static", assets.VersionedStaticFiles(directory=STATIC_DIR), name="static")
    return application


app = create_app()
