"""Finished JSON answers of pure endpoints, kept in memory and bounded in bytes.

Every API answer is a pure function of the request body and the app's settings, so a class
sending the same request (the worked example, a shared link) is answered from here without
recomputing or reserializing. One cache per app (so per settings); least recently used
answers leave first; an answer larger than `max_entry_bytes` is never kept.
"""

from collections import OrderedDict
from collections.abc import Callable, Hashable
from threading import Lock
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from app.responses import JSONResponse, dumps


class ResponseCache:
    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.entries: OrderedDict[Hashable, bytes] = OrderedDict()
        self.size = 0
        self.lock = Lock()  # sync routes run in the thread pool

    def get(self, key: Hashable) -> bytes | None:
        with self.lock:
            body = self.entries.get(key)
            if body is not None:
                self.entries.move_to_end(key)
            return body

    def put(self, key: Hashable, body: bytes) -> None:
        if len(body) > self.max_entry_bytes:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = body
            self.size += len(body)
            while self.size > self.max_bytes:
                _, old = self.entries.popitem(last=False)
                self.size -= len(old)

    def json(self, key: Hashable, compute: Callable[[], Any]) -> Response:
        """The cached answer for `key`, or `compute()` serialized, kept and returned."""
        body = self.get(key)
        if body is None:
            body = dumps(compute())
            self.put(key, body)
        return Response(body, media_type=JSONResponse.media_type)


async def get_cache(request: Request) -> ResponseCache:
    """The dependency: the cache of the app serving this request (set by create_app)."""
    return request.app.state.response_cache
