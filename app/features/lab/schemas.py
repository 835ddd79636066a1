"""The request and response shapes of POST /api/attention."""

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    ConfigDict,
    Field,
    model_validator,
)

from app.core import arrays
from app.core.budget import sized
from app.core.i18n import gettext
from app.core.limits import HARD_MAX_TOKENS
from app.core.rules import WORKED_EXAMPLE_REQUEST
from app.features.stages.results import OneHead, QueryBreakdown, StageFields
from app.features.stages.schemas import (
    InputMatrix,
    SequenceRequest,
    Width,
    field_error,
    matrix_width,
)
from app.math.positional import Positional


class AttentionRequest(SequenceRequest):
    """One head. Every field is optional: `{}` is the worked example "The cat sleeps"."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [WORKED_EXAMPLE_REQUEST]}
    )

    d_k: Width | None = Field(None, description="Width of generated W_Q and W_K columns.")
    d_v: Width | None = Field(None, description="Width of generated W_V columns.")
    w_q: InputMatrix | None = Field(None, description="d_model × d_k query projection.")
    w_k: InputMatrix | None = Field(None, description="d_model × d_k key projection.")
    w_v: InputMatrix | None = Field(None, description="d_model × d_v value projection.")
    query: Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)] | None = Field(
        None, description="Position broken down in `query`; default 1 for the worked example."
    )

    @model_validator(mode="after")
    def shapes_agree(self) -> "AttentionRequest":
        """x, d_model and the projections must fit together; each error names the field to fix."""
        self._check_x()
        d_model, d_k = self.given_d_model(), self.given_d_k()
        for name in ("w_q", "w_k", "w_v"):
            w = getattr(self, name)
            if w is None:
                continue
            width = matrix_width(name, w)
            if len(w) != d_model:
                raise field_error(
                    "shape_mismatch",
                    gettext(
                        "%(name)s has %(rows)s rows but %(source)s (d_model = %(d_model)s); "
                        "%(name)s needs one row per number of an x row"
                    )
                    % {
                        "name": name,
                        "rows": len(w),
                        "source": self._d_model_source(),
                        "d_model": d_model,
                    },
                    name,
                )
            expected, label = (self.d_v, "d_v") if name == "w_v" else (d_k, "d_k")
            if expected is not None and width != expected:
                source = self.first_given(("d_k", "w_q")) if label == "d_k" else "d_v"
                values = {"name": name, "width": width, "label": label, "expected": expected}
                if source == label:
                    message = gettext(
                        "%(name)s has %(width)s columns but %(label)s is %(expected)s; leave "
                        "%(label)s out or make them agree"
                    )
                else:
                    message = gettext(
                        "%(name)s has %(width)s columns but %(source)s has %(expected)s; "
                        "queries and keys need the same width d_k so that Q·Kᵀ is defined"
                    )
                    values["source"] = source
                raise field_error("shape_mismatch", message % values, name)
        return self

    def _d_model_source(self) -> str:
        """Which field fixes d_model, in words for a message."""
        source = self.first_given(("x", "d_model", "w_q", "w_k", "w_v"))
        d_model = self.given_d_model()
        if source == "x":
            return gettext("each x row has %(n)s numbers") % {"n": d_model}
        if source == "d_model":
            return gettext("d_model is %(n)s") % {"n": self.d_model}
        return gettext("%(source)s has %(n)s rows") % {"source": source, "n": d_model}

    def given_d_model(self) -> int | None:
        """d_model as the request fixes it: x's width, d_model, or a projection's rows."""
        rows = (len(w) for w in (self.w_q, self.w_k, self.w_v) if w is not None)
        return super().given_d_model() or next(rows, None)

    def given_d_k(self) -> int | None:
        """d_k as the request fixes it: d_k, or the columns of W_Q or W_K."""
        if self.d_k is not None:
            return self.d_k
        return next((len(w[0]) for w in (self.w_q, self.w_k) if w is not None), None)


@dataclass(frozen=True, kw_only=True)
class ResolvedInputs:
    """The inputs actually used: generated ones included."""

    tokens: list[str]
    d_model: int
    d_k: int
    d_v: int
    scale_factor: float  # √d_k, or 1 when scale is false
    positional: Positional
    x: arrays.Matrix  # (n, d_model)
    x_positioned: arrays.Matrix  # what the projections saw: x + PE for sinusoidal, else x
    w_q: arrays.Matrix  # (d_model, d_k)
    w_k: arrays.Matrix  # (d_model, d_k)
    w_v: arrays.Matrix  # (d_model, d_v)
    mask: dict[str, Any]  # the mask as given: causal, padding, window, allowed


CSV_LINE_BYTES = 37  # "weights,12,token,7,token,0.1234567890123\n", on average


@dataclass(frozen=True, kw_only=True)
class AttentionResult(StageFields, ResolvedInputs):
    """The whole /api/attention answer: the inputs used, every stage, one query's breakdown."""

    query: QueryBreakdown

    @staticmethod
    def answer_bytes(n: int, d_model: int, d_k: int, d_v: int) -> int:
        """The JSON size of this answer (app/core/budget.py): the inputs used (x twice, the
        three projections), every stage, the query's breakdown."""
        inputs = sized(numbers=2 * n * d_model + d_model * (2 * d_k + d_v), labels=n, keys=12)
        return inputs + StageFields.answer_bytes(n, d_k, d_v) + QueryBreakdown.answer_bytes(n, d_v)

    @staticmethod
    def csv_bytes(n: int, d_model: int, d_k: int, d_v: int) -> int:
        """The size of the same numbers as the lab's CSV (app/features/lab/download.py): one
        line per number, its stage, row and column written out beside it."""
        cells = n * d_model + d_model * (2 * d_k + d_v) + n * (2 * d_k + 3 * d_v) + 5 * n * n
        return cells * CSV_LINE_BYTES

    def head(self) -> OneHead:
        """This head for the stage strip: what its projections saw and the breakdown made."""
        return OneHead(
            **self.fields(),
            tokens=self.tokens,
            x=self.x_positioned,
            d_k=self.d_k,
            scale_factor=self.scale_factor,
            query=self.query,
        )
