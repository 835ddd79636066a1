"""Assemble the app: settings, routers, static files, error translators, middleware."""

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from anyio import to_thread
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from app import STATIC_DIR
from app.core.errors import BusyError, InputError, ModelUnavailableError
from app.features.classroom import routes as classroom
from app.features.cost import routes as cost
from app.features.cost.measure import MeasurementCache
from app.features.decoder import routes as decoder
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
from app.web.middleware.cache import ResponseCache, cacheable_routes
from app.web.middleware.edge import edge_stack
from app.web.middleware.requestlog import configure_logging
from app.web.process import tune_process
from app.web.work import use_work_threads


@asynccontextmanager
async def started(application: FastAPI) -> AsyncIterator[None]:
    """Once started: the libraries and static files compressed (app/web/assets.py; once per
    process), the work threads and the page threads set (app/web/work.py,
    Settings.page_threads), the process tuned (the GIL switch interval and glibc's malloc,
    app/web/process.py); and, with `freeze_gc`, every object made so far (modules, routes,
    templates) moved out of the garbage collector's sight: a full collection then scans only
    what requests leave behind, a fraction of a millisecond instead of tens that would stall
    every request."""
    settings: Settings = application.state.settings
    await to_thread.run_sync(assets.pack_all)
    use_work_threads(settings.work_threads)
    to_thread.current_default_thread_limiter().total_tokens = settings.page_threads
    tune_process(settings)
    if settings.freeze_gc:
        gc.collect()
        gc.freeze()
    yield
    if settings.freeze_gc:
        gc.unfreeze()


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or environment_settings()
    configure_logging(settings.log_level)
    application = FastAPI(
        title="Attention Lab",
        summary="Transformer self-attention, computed stage by stage on the server.",
        version="0.1.0",
        lifespan=started,
        docs_url=None,  # /docs is ours (app/routes/docs.py): Swagger UI without a CDN
        redoc_url=None,
        telemetry=None
        if settings.telemetry
        else {"tracing": False, "metrics": False, "logs": False},
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
    # its key holds them), then app/web/middleware/edge.py's stack: the JSON routes FastAPI
    # has routed once, called directly (app/web/middleware/direct.py), answers kept by the
    # cache (uncompressed), compression (zstd, br or gzip at fast levels; large answers in a
    # worker thread and kept compressed; plotly.js arrives already gzipped: the stage
    # matrices are full-precision floats that slower levels shrink only a little more, at
    # several times the time), and the edge: size caps, the request log (ids, timing, the
    # generic answer to an unexpected error) and the security headers on every answer.
    application.add_middleware(ClassroomMiddleware)
    application.add_middleware(
        edge_stack,  # type: ignore[arg-type]  (a factory of four layers)
        settings=settings,
        cache=cache,
    )
    # Routes are tried in order, a few microseconds each: the files a class asks for most
    # (every page links half a dozen) first, then the pages, the lab first; the JSON APIs are
    # mostly called directly (app/web/middleware/direct.py) and do not wait on the order.
    application.mount("/static", assets.VersionedStaticFiles(directory=STATIC_DIR), name="static")
    routers = [
        assets.router,
        *(f.pages for f in (lab, heads, kernel, cost, model, walkthrough, classroom, docs)),
        *(feature.api for feature in (lab, heads, kernel, cost, model, decoder)),
        health.router,
    ]
    for router in routers:
        application.include_router(router)
    cache.routes.update(cacheable_routes(route for router in routers for route in router.routes))
    return application


app = create_app()
