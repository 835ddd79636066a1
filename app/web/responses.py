"""JSON answers: orjson writes numpy arrays directly (JSON has no −∞: results put None)."""

import dataclasses
from typing import Any

import numpy as np
import orjson
from starlette.responses import Response

ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
INT64_MAX = 2**63 - 1


def wide_ints_as_floats(value: Any) -> Any:
    """orjson writes integers up to 64 bits; a wider one (10⁹ tokens squared, times heads,
    layers and batch) goes out as the nearest float, which JSON readers parse anyway.
    A typed result (a dataclass) is walked field by field, as orjson would write it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: wide_ints_as_floats(getattr(value, f.name)) for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {k: wide_ints_as_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [wide_ints_as_floats(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
        return float(value)
    return value


def contiguous(value: Any) -> Any:
    """orjson writes C-contiguous arrays only; a sliced view is copied into one."""
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(content: Any) -> bytes:
    try:
        return orjson.dumps(content, option=ORJSON_OPTIONS, default=contiguous)
    except orjson.JSONEncodeError:
        wide = wide_ints_as_floats(content)
        return orjson.dumps(wide, option=ORJSON_OPTIONS, default=contiguous)


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
