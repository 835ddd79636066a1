"""What each step says about the data, worded from the numbers as the page shows them (three
decimals), so that a sentence stays true for every state: ties, hidden keys, negative
scores, a query that sees no key, scaling off or d_k = 1."""

from collections.abc import Sequence
from dataclasses import dataclass

from app.core.i18n import N_, format_number, format_vector, gettext, ngettext
from app.features.stages.results import OneHead, QueryRow

DIGITS = 3  # every number of the walk-through, as the tables and the heatmaps print them
NAMES_UP_TO = 3  # keys named in a sentence; the rest are counted


def shown(value: float) -> float:
    """A number as the page prints it, read back: what a student compares and adds up."""
    return round(float(value), DIGITS) + 0.0  # + 0.0: −0.0 reads 0


def number(value: float) -> str:
    return format_number(float(value), DIGITS)


def vector(values: Sequence[float]) -> str:
    return format_vector([float(v) for v in values], DIGITS)


def quoted(token: str) -> str:
    return gettext("“%(token)s”") % {"token": token}


def names(tokens: Sequence[str]) -> str:
    """“a”, “b” and “c”; past NAMES_UP_TO keys, the first ones and how many more."""
    said = [quoted(t) for t in tokens[:NAMES_UP_TO]]
    more = len(tokens) - len(said)
    if more:
        return ngettext("%(names)s and %(num)d more", "%(names)s and %(num)d more", more) % {
            "names": ", ".join(said),
            "num": more,
        }
    if len(said) == 1:
        return said[0]
    return gettext("%(names)s and %(last)s") % {"names": ", ".join(said[:-1]), "last": said[-1]}


@dataclass(frozen=True)
class Top:
    """The keys that share a row's largest value as shown."""

    value: float
    rows: list[QueryRow]

    @property
    def tokens(self) -> list[str]:
        return [row.key_token for row in self.rows]


def top(rows: Sequence[QueryRow], value_of: str) -> Top | None:
    if not rows:
        return None
    best = max(shown(getattr(row, value_of)) for row in rows)
    return Top(best, [row for row in rows if shown(getattr(row, value_of)) == best])


def x_sentence(head: OneHead, positional: str) -> str:
    n, d = len(head.tokens), len(head.x[0])
    text = ngettext(
        "The %(num)s token starts as a row of x, d_model = %(d)s numbers wide. Nothing is "
        "mixed yet: the row knows only its own token.",
        "Each of the %(num)s tokens starts as a row of x, d_model = %(d)s numbers wide. "
        "Nothing is mixed yet: each row knows only its own token.",
        n,
    ) % {"num": n, "d": d}
    if positional == "sinusoidal":
        text += " " + gettext(
            "Each row shown already has its position's sinusoidal pattern added: that is what "
            "W_Q, W_K and W_V see."
        )
    return text


def qkv_sentence(head: OneHead, positional: str) -> str:
    text = gettext(
        "Three learned matrices turn every row of x into a query (what the token looks for), a "
        "key (what it offers) and a value (what it passes on). Q and K have d_k = %(d_k)d "
        "columns, V has d_v = %(d_v)d."
    ) % {"d_k": head.d_k, "d_v": len(head.v[0])}
    if positional == "rope":
        text += " " + gettext("With RoPE the Q and K shown are already rotated by their position.")
    return text


def scores_sentence(query: str, rows: Sequence[QueryRow]) -> str:
    parts = [
        gettext(
            "Q·Kᵀ compares every query with every key by a dot product: a large score is a "
            "good match."
        )
    ]
    best = top(rows, "dot")
    assert best is not None  # a row has at least one key
    values = {"query": query, "score": number(best.value), "keys": names(best.tokens)}
    if len(rows) > 1 and len(best.rows) == len(rows):
        parts.append(
            gettext(
                "In the row of “%(query)s” every score is %(score)s: no key matches better "
                "than another."
            )
            % values
        )
    elif len(best.rows) > 1:
        parts.append(
            gettext(
                "In the row of “%(query)s” the largest score, %(score)s, is a tie between %(keys)s."
            )
            % values
        )
    else:
        parts.append(
            gettext("In the row of “%(query)s” the largest score, %(score)s, is with %(keys)s.")
            % values
        )
    hidden = [row.key_token for row in best.rows if not row.visible]
    if hidden:
        parts.append(
            gettext("The mask will hide %(keys)s from “%(query)s”.")
            % {"keys": names(hidden), "query": query}
        )
    negative = [row.key_token for row in rows if shown(row.dot) < 0]
    if negative:
        parts.append(
            ngettext(
                "A score below 0, as with %(keys)s, is a poor match, not a ban: only the mask "
                "hides a key.",
                "Scores below 0, as with %(keys)s, are poor matches, not bans: only the mask "
                "hides a key.",
                len(negative),
            )
            % {"keys": names(negative)}
        )
    return " ".join(parts)


def scaled_sentence(head: OneHead, query: str, rows: Sequence[QueryRow], by: str) -> str:
    if by == "1":
        if head.d_k == 1:
            return gettext("Here d_k = 1, and √1 = 1: dividing by it leaves every score as it was.")
        return gettext(
            "Scaling is switched off here: the scores are divided by 1 and stay as they were."
        )
    text = gettext(
        "Every score is divided by %(by)s, the square root of d_k = %(d_k)d, so that wide "
        "heads do not push softmax towards all-or-nothing weights."
    ) % {"by": by, "d_k": head.d_k}
    best = max(rows, key=lambda row: row.dot)
    if shown(best.dot) != 0:
        text += " " + gettext(
            "In the row of “%(query)s”, %(dot)s with %(key)s becomes %(scaled)s."
        ) % {
            "query": query,
            "dot": number(best.dot),
            "key": quoted(best.key_token),
            "scaled": number(best.scaled),
        }
    return text


def masked_sentence(query: str, rows: Sequence[QueryRow]) -> str:
    n = len(rows)
    hidden = [row.key_token for row in rows if not row.visible]
    seen = n - len(hidden)
    text = gettext("The mask M adds 0 where a query may look and −∞ where it may not.") + " "
    if not seen:
        return text + ngettext(
            "“%(query)s” sees no key: the %(num)d key is hidden from it.",
            "“%(query)s” sees no key: all %(num)d keys are hidden from it.",
            n,
        ) % {"query": query, "num": n}
    if not hidden:
        return text + ngettext(
            "“%(query)s” sees the %(num)d key: nothing is hidden from it.",
            "“%(query)s” sees all %(num)d keys: nothing is hidden from it.",
            n,
        ) % {"query": query, "num": n}
    return text + ngettext(
        "“%(query)s” sees %(visible)d of the %(num)d key; hidden from it: %(keys)s.",
        "“%(query)s” sees %(visible)d of the %(num)d keys; hidden from it: %(keys)s.",
        n,
    ) % {"query": query, "visible": seen, "num": n, "keys": names(hidden)}


SOFTMAX = N_(
    "Softmax turns each row into weights between 0 and 1 that add up to 1: e to the power of "
    "each visible score, divided by their total. Hidden keys get exactly 0."
)


def weights_sentence(query: str, rows: Sequence[QueryRow], hold_back: bool) -> str:
    visible = [row for row in rows if row.visible]
    if not visible:
        return gettext(
            "“%(query)s” sees no key at all, so every weight in its row is 0 and its output is "
            "a row of zeros, never NaN."
        ) % {"query": query}
    text = gettext(SOFTMAX)
    if hold_back:
        return text + " " + gettext("Guess before you look.")
    best = top(visible, "weight")
    assert best is not None
    values = {"query": query, "weight": number(best.value), "keys": names(best.tokens)}
    if len(visible) > 1 and len(best.rows) == len(visible):
        return (
            text
            + " "
            + gettext("“%(query)s” gives every key it sees the same weight, %(weight)s.") % values
        )
    if len(best.rows) > 1:
        return (
            text
            + " "
            + gettext("“%(query)s” gives its largest weight, %(weight)s, to %(keys)s alike.")
            % values
        )
    return (
        text
        + " "
        + gettext("“%(query)s” gives its largest weight, %(weight)s, to %(keys)s.") % values
    )


def weighted_sentence(query: str, rows: Sequence[QueryRow]) -> str:
    text = gettext("Each value row v_j is multiplied by the weight “%(query)s” gives to key j.") % {
        "query": query
    }
    visible = [row for row in rows if row.visible]
    if not visible:
        return (
            text
            + " "
            + gettext("“%(query)s” sees no key, so every weighted value is 0.") % {"query": query}
        )
    heaviest = top(visible, "weight")
    assert heaviest is not None
    if len(heaviest.rows) > 1:
        text += " " + gettext(
            "The heaviest keys, %(keys)s, each pass on %(weight)s × their value."
        ) % {"keys": names(heaviest.tokens), "weight": number(heaviest.value)}
    else:
        row = heaviest.rows[0]
        text += " " + gettext(
            "The heaviest key, %(key)s, passes on %(weight)s × its value: %(value)s."
        ) % {
            "key": quoted(row.key_token),
            "weight": number(row.weight),
            "value": vector(row.weighted_value),
        }
    if len(visible) < len(rows):
        text += " " + gettext("Hidden keys pass on nothing.")
    return text


def output_sentence(query: str, rows: Sequence[QueryRow], output: Sequence[float]) -> str:
    if not any(row.visible for row in rows):
        return gettext(
            "“%(query)s” sees no key, so its new vector is %(output)s: a row of zeros, never NaN."
        ) % {"query": query, "output": vector(output)}
    return gettext(
        "Σ: adding up the weighted values gives the new vector of “%(query)s”, %(output)s. "
        "Every token gets such a row; together they are the head's output, weights · V."
    ) % {"query": query, "output": vector(output)}
