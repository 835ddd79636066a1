"""Numbers as text: the matrix text format of the lab's URLs and forms (rows separated by ";",
numbers by ","), written so that it reads back as the same floats."""

from typing import Any

import numpy as np


def number_text(value: float) -> str:
    """The shortest text that reads back as the same float: 1, 0.5, -0.34, 1e-07."""
    value = float(value)
    if value == 0:
        return "0"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def matrix_text(m: Any) -> str:
    return ";".join(",".join(number_text(v) for v in row) for row in np.asarray(m).tolist())
