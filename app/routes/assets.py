"""plotly.js from the installed plotly package: gzipped once, versioned URL, cached for a year.

Nothing is loaded from a CDN and no copy of plotly.js lives in the repository.
"""

import gzip
from functools import lru_cache
from importlib import resources

import plotly
from fastapi import APIRouter, Request
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

router = APIRouter(include_in_schema=False)
PLOTLY_URL = f"/assets/plotly-{plotly.__version__}.min.js"
ONE_YEAR = "public, max-age=31536000, immutable"


@lru_cache(maxsize=1)
def plotly_js() -> tuple[bytes, bytes]:
    """(plain, gzipped) bytes of plotly.min.js, read on first use."""
    plain = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    return plain, gzip.compress(plain, compresslevel=9, mtime=0)


@router.get(PLOTLY_URL)
def plotly_bundle(request: Request) -> Response:
    plain, packed = plotly_js()
    headers = {"Cache-Control": ONE_YEAR, "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(packed, media_type="text/javascript", headers=headers)
    return Response(plain, media_type="text/javascript", headers=headers)


class VersionedStaticFiles(StaticFiles):
    """/static files; a URL carrying its content hash (?v=…, from `static_url`) never changes,
    so browsers may keep it for a year without asking again."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code == 200 and b"v=" in scope.get("query_string", b""):
            response.headers["Cache-Control"] = ONE_YEAR
        return response
