"""Assemble the app: settings, routers, static files, error translators, middleware."""

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette_compress import CompressMiddleware

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
from app.web import errors, health
from app.web.deps import ClientLeftError
from app.web.edge import Edge
from app.web.requestlog import configure_logging
from app.web.static import StaticFiles

FEATURES = (lab, walkthrough, heads, cost, kernel, model, decoder, classroom, docs)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or environment_settings()
    configure_logging(settings.log_level)
    application = FastAPI(
        title="Attention Lab",
        summary="Transformer self-attention, computed stage by stage on the server.",
        version="0.1.0",
        docs_url=None,  # /docs is ours (app/features/docs): Swagger UI without a CDN
        redoc_url=None,
        # No OpenTelemetry: requests are logged as JSON lines (app/web/requestlog.py), and
        # FastAPI's hooks would otherwise look for a configured provider on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    application.state.settings = settings  # read by the get_settings dependency
    application.state.static = static = StaticFiles.built(settings.cache_dir)
    application.state.model_state = lambda: model_state(settings.model_dir)
    application.state.measurements = MeasurementCache(
        settings.measure_max_n, settings.measure_time_cap_seconds, settings.measure_wait_seconds
    )
    # Starlette's own slash redirect writes the Host header into Location: errors.slash_twin
    # answers the 404 with a relative one instead.
    application.router.redirect_slashes = False
    application.add_exception_handler(RequestValidationError, errors.request_validation_handler)
    application.add_exception_handler(InputError, errors.input_error_handler)
    application.add_exception_handler(BusyError, errors.busy_handler)
    application.add_exception_handler(ModelUnavailableError, errors.model_unavailable_handler)
    application.add_exception_handler(HTTPException, errors.http_error_handler)
    application.add_exception_handler(ClientLeftError, errors.client_left_handler)
    # The API first: its paths (all under /api/) are tried before the pages', which no API
    # request could match anyway.
    for feature in FEATURES:
        if hasattr(feature, "api"):
            application.include_router(feature.api)
    for feature in FEATURES:
        application.include_router(feature.pages)
    application.include_router(health.router)
    # Middleware, innermost first: compression (zstd, br or gzip at fast levels), and the
    # edge (app/web/edge.py: size limits, language and classroom view, request id, the static
    # files, the answer cache, security headers, the log line, the 500 answer).
    application.add_middleware(CompressMiddleware, minimum_size=500)
    application.add_middleware(Edge, settings=settings, static=static)
    return application


app = create_app()
