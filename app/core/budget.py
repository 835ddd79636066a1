"""The answer budget: a request whose answer would be larger than the server's setting
(`ANSWER_BUDGET_BYTES`, 16 MB) is refused before anything is computed, with a sentence that
names the fields to shrink.

Each result type has one `answer_bytes(...)` function that counts its parts from the
request's shape (n, widths, heads): numbers as orjson writes them at full precision, flags,
labels. tests/web/test_budget.py holds each estimate to the real answer: from 0.8 to 1.5
times it.
"""

from collections.abc import Sequence

from app.core.errors import InputError
from app.core.i18n import gettext

NUMBER_BYTES = 16  # a float64 at full precision with its comma, on average: -0.123456789012345,
NUMBER32_BYTES = 12  # a float32 (the trained model's numbers) with its comma: -0.12345679,
FLAG_BYTES = 5  # true, false, null (a hidden score), with the comma
LABEL_BYTES = 12  # a short token in quotes with its comma
KEY_BYTES = 12  # a field name in quotes with its colon


def sized(
    numbers: int = 0, flags: int = 0, labels: int = 0, keys: int = 0, float32: bool = False
) -> int:
    """Bytes of a JSON answer with that many numbers, flags, labels and field names."""
    number = NUMBER32_BYTES if float32 else NUMBER_BYTES
    return numbers * number + flags * FLAG_BYTES + labels * LABEL_BYTES + keys * KEY_BYTES


def check_answer(estimate: int, budget: int, fields: Sequence[str], source: str = "body") -> None:
    """Refuse the request (422 naming `fields`, the first as its place) when its answer would
    be larger than the budget."""
    if estimate <= budget:
        return
    names = ", ".join(fields)
    raise InputError(
        (fields[0],),
        gettext(
            "%(fields)s: the answer would be about %(size)s MB, more than this server sends "
            "at once (%(budget)s MB); make %(fields)s smaller"
        )
        % {"fields": names, "size": f"{estimate / 1e6:.0f}", "budget": f"{budget / 1e6:g}"},
        source,
    )
