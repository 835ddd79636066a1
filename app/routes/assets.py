"""plotly.js from the installed plotly package: gzipped once, versioned URL, cached for a year.

Nothing is loaded from a CDN and no copy of plotly.js lives in the repository.
"""

import gzip
from functools import lru_cache
from importlib import resources

import plotly
from fastapi import APIRouter, Request
from starlette.responses import Response

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
