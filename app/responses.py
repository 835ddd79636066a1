"""JSON responses serialized by orjson, which writes numpy arrays directly (and −∞ as null)."""

from typing import Any

import numpy as np
import orjson
from starlette.responses import Response

ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def _contiguous(value: Any) -> Any:
    """orjson writes C-contiguous arrays only; a sliced view is copied into one."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(content: Any) -> bytes:
    return orjson.dumps(content, option=ORJSON_OPTIONS, default=_contiguous)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
