"""Static files: ours (static/) and the browser libraries we ship (plotly.js, Swagger UI),
served by ServeStatic with content-hashed names, far-future caching and precompressed copies.

Nothing is loaded from a CDN and no copy of a library lives in the repository: plotly.js comes
from the plotly package and Swagger UI from swagger-ui-bundle-v2. ServeStatic's own command
line (`servestatic`) copies each set into the cache folder once, names every file after its
content (app.86d9b5c36cc2.css) in a manifest, and compresses it; a page links the hashed name
(`static_url`), which browsers may keep for good. The libraries are gzipped only: Brotli at
its best level takes many seconds on plotly.js's 4.8 MB.

A set is rebuilt when its sources change (their paths, sizes and times), into a folder of its
own, so workers that start together never see a half-built set.
"""

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from servestatic import ServeStaticASGI
from servestatic.cli import main as servestatic
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from swagger_ui_bundle import swagger_ui_path

from app import STATIC_DIR

PREFIX = "/static/"
VENDOR_PREFIX = "/static/vendor/"
MANIFEST = "staticfiles.json"
LIBRARIES = {
    "plotly.min.js": Path(str(resources.files("plotly") / "package_data" / "plotly.min.js")),
    "swagger-ui/swagger-ui-bundle.js": swagger_ui_path / "swagger-ui-bundle.js",
    "swagger-ui/swagger-ui.css": swagger_ui_path / "swagger-ui.css",
}


@dataclass(frozen=True)
class BuiltSet:
    """One set of files as served: its folder, URL prefix, and name → hashed name."""

    root: Path
    prefix: str
    paths: dict[str, str]

    def url(self, name: str) -> str:
        return self.prefix + self.paths[name]


def sources_digest(files: dict[str, Path], label: str) -> str:
    """A name for a set of source files that changes when any of them does."""
    digest = hashlib.sha256(label.encode())
    for name, path in sorted(files.items()):
        info = path.stat()
        digest.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def build(files: dict[str, Path], dest: Path, options: list[str]) -> Path:
    """The files copied, hashed and compressed by ServeStatic into `dest` (once)."""
    if (dest / MANIFEST).exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as work:
        source, out = Path(work) / "source", Path(work) / "out"
        for name, path in files.items():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, source / name)
        if servestatic([*options, str(source), str(out)]):
            raise RuntimeError(f"servestatic could not build {dest}")
        try:
            os.rename(out, dest)
        except OSError:  # another worker built the same set first
            if not (dest / MANIFEST).exists():
                raise
    return dest


def built_set(files: dict[str, Path], cache_dir: Path, label: str, prefix: str) -> BuiltSet:
    options = ["--hash", "--copy-original", "--manifest", "--compress", "-q"]
    if label == "vendor":
        options.append("--no-brotli")
    digest = sources_digest(files, " ".join([label, *options]))
    root = build(files, cache_dir / "static" / f"{label}-{digest}", options)
    paths = json.loads((root / MANIFEST).read_text())["paths"]
    return BuiltSet(root, prefix, paths)


def own_files() -> dict[str, Path]:
    return {p.relative_to(STATIC_DIR).as_posix(): p for p in STATIC_DIR.rglob("*") if p.is_file()}


@dataclass(frozen=True)
class StaticFiles:
    """Our files and the libraries, built; `url(name)` is the address a page links."""

    own: BuiltSet
    vendor: BuiltSet

    @classmethod
    def built(cls, cache_dir: Path) -> "StaticFiles":
        return cls(
            own=built_set(own_files(), cache_dir, "own", PREFIX),
            vendor=built_set(LIBRARIES, cache_dir, "vendor", VENDOR_PREFIX),
        )

    def url(self, name: str) -> str:
        """/static/js/lab.1f3e2656b283.js for "js/lab.js"; a library by its name in LIBRARIES."""
        return self.vendor.url(name) if name in LIBRARIES else self.own.url(name)

    def serve(self, app: ASGIApp) -> ASGIApp:
        """`app` with these files answered in front of it."""
        served = ServeStaticASGI(app, root=self.own.root, prefix=self.own.prefix)
        served.add_files(self.vendor.root, prefix=self.vendor.prefix)
        return WeakTags(served)


VALID_RANGE = re.compile(rb"bytes=(\d{1,15})?-(\d{1,15})?")


def valid_range(value: bytes) -> bool:
    """One byte range a-b with a ≤ b (or an open end): ServeStatic's reading of the rest."""
    match = VALID_RANGE.fullmatch(value.strip())
    if match is None or match.groups() == (None, None):
        return False
    first, last = match.groups()
    return first is None or last is None or int(first) <= int(last)


PATHSEND = "http.response.pathsend"
BLOCK_BYTES = 64 * 1024


class WeakTags:
    """ServeStatic's answers with the two things HTTP asks of a file served in several
    encodings and ranges: its ETag (one per file) is weak, since the gzip and plain bodies are
    not byte for byte the same; and a Range that is not a valid byte range is ignored (the
    whole file) instead of answered 416.

    And the ASGI extension `http.response.pathsend` (the server sends the file at a path),
    which ServeStatic uses when offered: otherwise it reads each file through a thread pool
    of its own, made for that one file, and under a class's load those threads wait their
    turn with the pages being computed. The file is sent in blocks, each waiting while the
    client lags; it comes from ServeStatic's built set, kept in the page cache."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        headers = []
        for name, value in scope["headers"]:
            if name == b"if-none-match":
                value = value.replace(b"W/", b"")
            elif name == b"range" and not valid_range(value):
                continue
            headers.append((name, value))

        async def weak_tag(message: Message) -> None:
            if message["type"] == PATHSEND:
                await send_file(message["path"], send)
                return
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [
                        (k, b"W/" + v if k.lower() == b"etag" and not v.startswith(b"W/") else v)
                        for k, v in message.get("headers", ())
                    ],
                }
            await send(message)

        extensions = {**scope.get("extensions", {}), PATHSEND: {}}
        await self.app({**scope, "headers": headers, "extensions": extensions}, receive, weak_tag)


async def send_file(path: str, send: Send) -> None:
    """The body of a `http.response.pathsend` answer: the file, block by block."""
    with open(path, "rb") as file:
        while block := file.read(BLOCK_BYTES):
            await send({"type": "http.response.body", "body": block, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
