"""A small ASGI app for the protocol's tests, served by uvicorn with app/server/protocol.py:
each route shows one thing the protocol does to what reaches an app.

    GET  /sleep?seconds=s   answers after s seconds (a request in progress)
    GET  /bytes?size=n&after=s   an answer of n bytes, after s seconds (default 0) of work
    GET  /bytes?size=n&together=k   the same, once k such requests have arrived: then made
                            one at a time in the order they came, each saying its turn
                            (1 … k) in X-Made
    POST /echo              how many bytes of body arrived, in how many messages
    GET  /wait              answers once a static file (/static/…) has been asked for
    GET  /readyz            {"status": "ready"}, as the app's own
    GET  /static/…          {"path": …, "seen": the paths of every request the app has seen}
    anything else           {"path": …}
"""

import asyncio
from urllib.parse import parse_qs

import orjson
from starlette.types import Receive, Scope, Send

from app.server.run import map_large_blocks
from app.web.requestlog import configure_logging

configure_logging("info")  # the protocol's own lines, as the app would have them
map_large_blocks()  # as `python -m app` serves


def number(scope: Scope, name: str, default: float = 0) -> float:
    return float(parse_qs(scope["query_string"].decode()).get(name, [default])[0])


class Group:
    """Requests that wait until all of them have arrived, then are answered one at a time."""

    def __init__(self) -> None:
        self.arrived = 0
        self.made = 0
        self.all_here = asyncio.Event()
        self.turn = asyncio.Lock()  # hands its turn on in the order the requests waited


groups: dict[int, Group] = {}  # the group still gathering, by size
static_asked = asyncio.Event()
seen: list[str] = []


async def gathered(size: int) -> Group:
    """The group of `size` this request belongs to, once all of it has arrived."""
    group = groups.setdefault(size, Group())
    group.arrived += 1
    if group.arrived == size:
        del groups[size]  # the next request of this size starts a new group
        group.all_here.set()
    await group.all_here.wait()
    return group


async def send_json(send: Send, body: bytes, *extra: tuple[bytes, bytes]) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": [*headers, *extra]})
    await send({"type": "http.response.body", "body": body})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    seen.append(path)
    body: bytes
    if path == "/sleep":
        await asyncio.sleep(number(scope, "seconds"))
        body = b'{"slept": true}'
    elif path == "/bytes" and number(scope, "together"):
        group = await gathered(int(number(scope, "together")))
        async with group.turn:
            group.made += 1
            body = b"x" * int(number(scope, "size"))
            await send_json(send, body, (b"x-made", b"%d" % group.made))
        return
    elif path == "/bytes":
        await asyncio.sleep(number(scope, "after", 0))
        body = b"x" * int(number(scope, "size"))
    elif path == "/wait":
        static_asked.clear()
        await static_asked.wait()
        body = b'{"waited": true}'
    elif path == "/echo":
        received, messages, more = 0, 0, True
        while more:
            message = await receive()
            received += len(message.get("body", b""))
            messages += 1
            more = message.get("more_body", False)
        body = orjson.dumps({"received": received, "messages": messages})
    elif path == "/readyz":
        body = b'{"status": "ready"}'
    elif path.startswith("/static/"):
        static_asked.set()
        body = orjson.dumps({"path": path, "seen": seen})
    else:
        body = orjson.dumps({"path": path})
    await send_json(send, body)
