"""Rules the app applies in more than one place, each written once: which key/value head
counts a number of query heads allows, and the worked example of seed 000.

Pages get what their scripts need from these (rendered as data), so no rule is written again
in a template or in JavaScript.
"""

import numpy as np

from app.core.i18n import gettext

# ---------------------------------------------------------------- grouped-query attention


def kv_head_choices(heads: int) -> list[int]:
    """The key/value head counts g that share h query heads evenly: the divisors of h."""
    return [g for g in range(1, heads + 1) if heads % g == 0]


def kv_heads_problem(heads: int, kv_heads: int) -> str | None:
    """Why g key/value heads cannot serve h query heads, or None when they can."""
    if heads % kv_heads == 0:
        return None
    choices = kv_head_choices(heads)
    shown = choices if len(choices) <= 8 else [*choices[:4], *choices[-3:]]
    return gettext(
        "kv_heads is %(g)s but heads is %(h)s, and %(g)s does not divide %(h)s; kv_heads must "
        "divide heads so that every key/value head serves the same number of query heads: "
        "pick kv_heads from %(choices)s"
    ) % {"g": kv_heads, "h": heads, "choices": ", ".join(map(str, shown))}


def nearest_kv_heads(heads: int, wanted: int) -> int:
    """The largest allowed g not above `wanted` (1 always is)."""
    return max(g for g in kv_head_choices(heads) if g <= max(1, wanted))


def grouped_query_kv_heads(heads: int) -> int | None:
    """The grouped-query preset: the fewest groups larger than 1 (h = 8 → g = 2), if any."""
    return next((g for g in kv_head_choices(heads) if 1 < g < heads), None)


# ---------------------------------------------------------------- the worked example

# "The cat sleeps" of seed 000: each word one token, two numbers each, causal, query "cat".
WORKED_TOKENS = ("The", "cat", "sleeps")
WORKED_X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
WORKED_W_Q = np.array([[1.0, 0.5], [0.0, 1.0]])
WORKED_W_K = np.array([[0.5, 1.0], [1.0, 0.0]])
WORKED_W_V = np.array([[1.0, -1.0], [0.5, 1.0]])
WORKED_QUERY = 1
WORKED_EXAMPLE_REQUEST = {
    "tokens": list(WORKED_TOKENS),
    "x": WORKED_X.tolist(),
    "w_q": WORKED_W_Q.tolist(),
    "w_k": WORKED_W_K.tolist(),
    "w_v": WORKED_W_V.tolist(),
    "mask": {"causal": True},
    "scale": True,
    "query": WORKED_QUERY,
}
