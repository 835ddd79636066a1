"""numpy arrays as fields of typed results: the JSON schema they have on the wire.

Results keep their numbers as numpy arrays (orjson writes them straight to JSON, −∞ as null);
these annotations tell pydantic, and so the OpenAPI document, what each array looks like.
"""

from typing import Annotated, Any

import numpy as np
from pydantic import PlainValidator, WithJsonSchema


def _nested(depth: int, item: dict[str, Any]) -> dict[str, Any]:
    schema = item
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    return schema


def _array(depth: int, item: dict[str, Any], description: str) -> Any:
    return Annotated[
        np.ndarray,
        PlainValidator(np.asarray),
        WithJsonSchema({**_nested(depth, item), "description": description}),
    ]


NUMBER = {"type": "number"}
NUMBER_OR_NULL = {"anyOf": [{"type": "number"}, {"type": "null"}]}
BOOLEAN = {"type": "boolean"}

Vector = _array(1, NUMBER, "A list of numbers.")
Matrix = _array(2, NUMBER, "A matrix as a list of rows.")
MaskedMatrix = _array(2, NUMBER_OR_NULL, "A matrix as a list of rows; null where hidden (−∞).")
BoolMatrix = _array(2, BOOLEAN, "A matrix of true/false as a list of rows.")
Tensor3 = _array(3, NUMBER, "A list of matrices.")
Tensor4 = _array(4, NUMBER, "A list of lists of matrices.")
