"""Browser libraries from installed packages: gzipped once, versioned URLs, cached for a year.

plotly.js comes from the plotly package and Swagger UI (the API docs at /docs) from
swagger-ui-bundle-v2. Nothing is loaded from a CDN and no copy of either lives in the
repository. Files under /static get the same year-long caching when their URL carries a
content hash.

Files under static/ do not change while the app runs (their hashes are computed once too),
so each is looked up on disk and read once, then served from memory: a class opening the
lab asks for half a dozen of them per student, and a file read through threads costs a
millisecond where the bytes in memory cost a tenth of that. The answers are StaticFiles'
own (ETag, Last-Modified, 304, HEAD); a Range request is read from the disk as before.
"""

import gzip
import hashlib
import os
import stat
import threading
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable

import plotly
from fastapi import APIRouter, Request
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse
from starlette.types import Receive, Scope, Send
from swagger_ui_bundle import swagger_ui_path

from app import STATIC_DIR

router = APIRouter(include_in_schema=False)
ONE_YEAR = "public, max-age=31536000, immutable"
JS, CSS = "text/javascript", "text/css"

PLOTLY_URL = f"/assets/plotly-{plotly.__version__}.min.js"
SWAGGER_JS_URL = f"/assets/{swagger_ui_path.name}/swagger-ui-bundle.js"  # swagger-ui-5.x.y
SWAGGER_CSS_URL = f"/assets/{swagger_ui_path.name}/swagger-ui.css"
FILES: dict[str, tuple[Traversable, str]] = {
    PLOTLY_URL: (resources.files("plotly") / "package_data" / "plotly.min.js", JS),
    SWAGGER_JS_URL: (swagger_ui_path / "swagger-ui-bundle.js", JS),
    SWAGGER_CSS_URL: (swagger_ui_path / "swagger-ui.css", CSS),
}


# A class opens the lab at once: without the lock, every request that arrived before the first
# gzip of plotly.js finished would gzip its 4.8 MB again (about 0.4 s of CPU each).
_packing = threading.Lock()


def packed(url: str) -> tuple[bytes, bytes]:
    """(plain, gzipped) bytes of the file served at `url`, read and gzipped once."""
    with _packing:
        return _read_and_gzip(url)


@lru_cache(maxsize=len(FILES))
def _read_and_gzip(url: str) -> tuple[bytes, bytes]:
    plain = FILES[url][0].read_bytes()
    return plain, gzip.compress(plain, compresslevel=9, mtime=0)


def serve(url: str, media_type: str) -> None:
    def asset(request: Request) -> Response:
        plain, gzipped = packed(url)
        headers = {"Cache-Control": ONE_YEAR, "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return Response(gzipped, media_type=media_type, headers=headers)
        return Response(plain, media_type=media_type, headers=headers)

    router.add_api_route(url, asset, methods=["GET"], name=url)


for _url, (_, _media_type) in FILES.items():
    serve(_url, _media_type)


@lru_cache(maxsize=256)
def content_hash(path: str) -> str:
    """The version a /static URL carries: the first 10 hex digits of the file's SHA-256
    (files under static/ do not change while the app runs)."""
    return hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:10]


@lru_cache(maxsize=256)
def file_bytes(full_path: str) -> bytes:
    """A static file's bytes, read on first use (the files under static/ are few)."""
    with open(full_path, "rb") as file:
        return file.read()


class KeptFileResponse(FileResponse):
    """A FileResponse (the same headers) whose body comes from memory, unless the request
    asks for a byte range, which FileResponse reads from the file."""

    def __init__(self, content: bytes, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.status_code != 200 or "range" in Headers(scope=scope):
            await super().__call__(scope, receive, send)
            return
        body = b"" if scope["method"].upper() == "HEAD" else self.content
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": body})
        if self.background is not None:
            await self.background()


class VersionedStaticFiles(StaticFiles):
    """/static files, served from memory once read (the module docstring); a URL whose
    query is exactly `v=<the file's content hash>` (as `static_url` writes it) never
    changes, so browsers may keep it for a year without asking again. Any other query
    (`dev=1`, an old hash) gets the default revalidation."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # path → (full path, stat) of every regular file looked up so far: no more than
        # there are files under static/
        self.found: dict[str, tuple[str, os.stat_result]] = {}

    def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
        full_path, stat_result = super().lookup_path(path)
        if stat_result is not None and stat.S_ISREG(stat_result.st_mode):
            self.found[path] = (full_path, stat_result)
        return full_path, stat_result

    def file_response(
        self, full_path: str, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = KeptFileResponse(
            file_bytes(full_path), full_path, status_code=status_code, stat_result=stat_result
        )
        if self.is_not_modified(response.headers, Headers(scope=scope)):
            return NotModifiedResponse(response.headers)
        return response

    async def get_response(self, path: str, scope: Scope) -> Response:
        found = self.found.get(path)
        if found is not None and scope["method"] in ("GET", "HEAD"):
            response = self.file_response(*found, scope)
        else:
            response = await super().get_response(path, scope)
        if response.status_code == 200:
            query = scope.get("query_string", b"")
            if query.startswith(b"v=") and query[2:].decode("latin-1") == content_hash(path):
                response.headers["Cache-Control"] = ONE_YEAR
        return response


@router.get("/favicon.ico")
def favicon() -> Response:
    """Browsers ask /favicon.ico of any page without an icon link (JSON, fragments, /healthz):
    they get the SVG icon instead of a 404 in their console."""
    return Response(
        file_bytes(str(STATIC_DIR / "favicon.svg")),  # read once, as every static file
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )
