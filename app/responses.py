"""JSON responses serialized by orjson, which writes numpy arrays directly (and −∞ as null)."""

from typing import Any

import orjson
from starlette.responses import Response

ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def dumps(content: Any) -> bytes:
    return orjson.dumps(content, option=ORJSON_OPTIONS)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
