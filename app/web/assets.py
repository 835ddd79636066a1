"""Browser libraries from installed packages and the files under static/: compressed once,
versioned URLs, cached for a year.

plotly.js comes from the plotly package and Swagger UI (the API docs at /docs) from
swagger-ui-bundle-v2. Nothing is loaded from a CDN and no copy of either lives in the
repository. Files under /static get the same year-long caching when their URL carries a
content hash.

None of these files changes while the app runs, so each is read and compressed once, at
start-up (`pack_all`, in a thread, before the first request is served), and every request is
answered from memory in the encoding it accepts: a class opening the lab asks for half a
dozen files per student, and compressing them per request (plotly.js at gzip level 9: about
0.2 s for its 4.8 MB) would make each student's page wait for the others' files. The
libraries are gzipped (brotli or zstd at their best levels take seconds on 4.8 MB); the
small static files get zstd, br and gzip at their best levels, which the outer compression
layer leaves be. The answers of /static are StaticFiles' own (ETag, Last-Modified, 304,
HEAD); a Range request is read from the disk, plain, as before.
"""

import gzip
import hashlib
import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import brotli
import plotly
import zstandard
from fastapi import APIRouter, Request
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse
from starlette.types import Receive, Scope, Send
from swagger_ui_bundle import swagger_ui_path

from app import STATIC_DIR
from app.web.middleware.compression import ORDER, chosen_encoding

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

# Each encoding at its best level: a file is compressed once, so only its size matters.
ENCODERS = {
    "zstd": lambda data: zstandard.ZstdCompressor(level=19).compress(data),
    "br": lambda data: brotli.compress(data, quality=11),
    "gzip": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
}
LIBRARY_ENCODINGS = ("gzip",)


@dataclass(frozen=True)
class Packed:
    """A file's bytes, and the same compressed in each encoding that makes them smaller."""

    plain: bytes
    encoded: dict[str, bytes]

    def choose(self, accept_encoding: str) -> tuple[bytes, str | None]:
        """The body for a client sending this Accept-Encoding, and its Content-Encoding."""
        encoding = chosen_encoding(accept_encoding, tuple(e for e in ORDER if e in self.encoded))
        return (self.plain, None) if encoding is None else (self.encoded[encoding], encoding)


def pack(plain: bytes, encodings: tuple[str, ...]) -> Packed:
    encoded = {e: ENCODERS[e](plain) for e in encodings}
    return Packed(plain, {e: body for e, body in encoded.items() if len(body) < len(plain)})


# Files packed so far, by URL (the libraries) or full path (static/): a few dozen. A class
# opens the lab at once: without a file's lock, every request that arrived before its first
# packing finished would pack it again.
_packed: dict[str, Packed] = {}
_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def packed(key: str) -> Packed:
    """The packed bytes of a library's URL or of a static file's full path, packed once."""
    found = _packed.get(key)
    if found is None:
        with _locks_lock:
            lock = _locks.setdefault(key, threading.Lock())
        with lock:
            found = _packed.get(key)
            if found is None:
                if key in FILES:
                    found = pack(FILES[key][0].read_bytes(), LIBRARY_ENCODINGS)
                else:
                    found = pack(Path(key).read_bytes(), tuple(ENCODERS))
                _packed[key] = found
    return found


def pack_all() -> None:
    """Pack every library and every file under static/ (at start-up), two at a time: each
    encoder lets go of the GIL while it works."""
    files = sorted(str(p) for p in STATIC_DIR.rglob("*") if p.is_file())
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(packed, [*FILES, *files]))


def serve(url: str, media_type: str) -> None:
    async def asset(request: Request) -> Response:
        body, encoding = packed(url).choose(request.headers.get("accept-encoding", ""))
        headers = {"Cache-Control": ONE_YEAR, "Vary": "Accept-Encoding"}
        if encoding is not None:
            headers["Content-Encoding"] = encoding
        return Response(body, media_type=media_type, headers=headers)

    router.add_api_route(url, asset, methods=["GET"], name=url)


for _url, (_, _media_type) in FILES.items():
    serve(_url, _media_type)


@lru_cache(maxsize=256)
def content_hash(path: str) -> str:
    """The version a /static URL carries: the first 10 hex digits of the file's SHA-256
    (files under static/ do not change while the app runs)."""
    return hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:10]


class KeptFileResponse(FileResponse):
    """A FileResponse (the same headers) whose body comes from memory, in the encoding the
    request accepts (Content-Encoding, Vary and Content-Length then say so), unless the
    request asks for a byte range, which FileResponse reads from the file."""

    def __init__(self, content: Packed, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.content = content

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request_headers = Headers(scope=scope)
        if self.status_code != 200 or "range" in request_headers:
            await super().__call__(scope, receive, send)
            return
        body, encoding = self.content.choose(request_headers.get("accept-encoding", ""))
        headers = MutableHeaders(raw=list(self.raw_headers))
        if encoding is not None:
            headers["Content-Encoding"] = encoding
            headers["Content-Length"] = str(len(body))
            headers.add_vary_header("Accept-Encoding")
        if scope["method"].upper() == "HEAD":
            body = b""
        await send({"type": "http.response.start", "status": 200, "headers": headers.raw})
        await send({"type": "http.response.body", "body": body})
        if self.background is not None:
            await self.background()


class VersionedStaticFiles(StaticFiles):
    """/static files, served from memory once packed (the module docstring); a URL whose
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
            packed(full_path), full_path, status_code=status_code, stat_result=stat_result
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
        packed(str(STATIC_DIR / "favicon.svg")).plain,  # read once, as every static file
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )
