"""Assemble the app: settings, routers, static files, error translators, middleware."""

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import GZipMiddleware

from app import STATIC_DIR, errors
from app.classroom import ClassroomMiddleware
from app.config import Settings, get_settings
from app.limits import BodySizeLimit
from app.measure import MeasurementCache
from app.routes import api, assets, classroom, docs, pages


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    application = FastAPI(
        title="Attention Lab",
        summary="Transformer self-attention, computed stage by stage on the server.",
        version="0.1.0",
        docs_url=None,  # /docs is ours (app/routes/docs.py): Swagger UI without a CDN
        redoc_url=None,
    )
    application.dependency_overrides[get_settings] = lambda: settings
    application.state.measurements = MeasurementCache(
        settings.measure_max_n, settings.measure_time_cap_seconds, settings.measure_wait_seconds
    )
    application.add_exception_handler(RequestValidationError, errors.request_validation_handler)
    application.add_exception_handler(errors.InputError, errors.input_error_handler)
    application.add_exception_handler(errors.BusyError, errors.busy_handler)
    application.add_exception_handler(
        errors.ModelUnavailableError, errors.model_unavailable_handler
    )
    application.add_exception_handler(HTTPException, errors.http_error_handler)
    application.add_exception_handler(Exception, errors.unexpected_error_handler)
    application.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    application.add_middleware(ClassroomMiddleware)
    # Pages, fragments and JSON travel compressed (plotly.js arrives already gzipped). Level 1:
    # the stage matrices are full-precision floats that level 6 shrinks only 9% more, at 4×
    # the time (n = 256: 6.2 MB → 2.75 MB; the round trip 0.24 s instead of 1.04 s under load,
    # bench/bench_api.py's last column).
    application.add_middleware(GZipMiddleware, minimum_size=1024, compresslevel=1)
    application.include_router(api.router)
    application.include_router(api.health_router)
    application.include_router(pages.router)
    application.include_router(classroom.router)
    application.include_router(assets.router)
    application.include_router(docs.router)
    application.mount("/static", assets.VersionedStaticFiles(directory=STATIC_DIR), name="static")
    return application


app = create_app()
