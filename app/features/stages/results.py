"""The typed results every one-head computation shares: the stage fields of one head, the
key-by-key breakdown of one query, and a head ready for the stage strip.

One type per shape: the service builds it, orjson writes it (a dataclass with numpy arrays),
the page reads its attributes, and FastAPI documents it from the same annotations.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.arrays import BoolMatrix, MaskedMatrix, Matrix, Vector
from app.core.budget import sized
from app.math.attention import HeadStages


@dataclass(frozen=True, kw_only=True)
class StageFields:
    """Every stage of one head (API.md: q … output, empty_rows)."""

    q: Matrix  # (n, d_k)
    k: Matrix  # (n, d_k)
    v: Matrix  # (n, d_v)
    scores: Matrix  # (n, n) Q·Kᵀ
    scaled: Matrix  # (n, n) Q·Kᵀ / scale_factor
    allowed: BoolMatrix  # (n, n) true where query i may see key j
    masked: MaskedMatrix  # (n, n) scaled + M; −∞ (null in JSON) where hidden
    weights: Matrix  # (n, n) softmax over the visible keys, 0 where hidden
    output: Matrix  # (n, d_v) weights · V
    empty_rows: list[int]  # queries that see no key: their weights and output rows are 0

    @classmethod
    def of(cls, stages: HeadStages) -> "StageFields":
        return cls(**cls.values_of(stages))

    @staticmethod
    def values_of(stages: HeadStages) -> dict[str, Any]:
        """The stage fields of a computed head by name, to lay out in a result."""
        return {
            "q": stages.q,
            "k": stages.k,
            "v": stages.v,
            "scores": stages.scores,
            "scaled": stages.scaled,
            "allowed": stages.allowed,
            "masked": stages.masked,
            "weights": stages.weights,
            "output": stages.output,
            "empty_rows": stages.empty_rows,
        }

    @staticmethod
    def answer_bytes(n: int, d_k: int, d_v: int) -> int:
        """The JSON size of these fields for n tokens (app/core/budget.py): q, k, v and the
        output, four n × n tables of numbers (masked counted as numbers) and the n × n mask."""
        return sized(numbers=n * (2 * d_k + 2 * d_v) + 4 * n * n, flags=n * n + n, keys=10)

    def fields(self) -> dict[str, Any]:
        """The stage fields by name (only these, in a subclass too), to lay them out in
        another result."""
        return {name: getattr(self, name) for name in StageFields.__dataclass_fields__}


@dataclass(frozen=True, kw_only=True)
class QueryRow:
    """One key as the selected query sees it."""

    key_index: int
    key_token: str
    dot: float
    scaled: float
    visible: bool
    weight: float
    weighted_value: Vector  # weight × v_j, (d_v,)


@dataclass(frozen=True, kw_only=True)
class QueryBreakdown:
    """One query's row, key by key; `output` is the sum of the weighted values."""

    index: int
    token: str
    rows: list[QueryRow]
    output: Vector  # (d_v,)

    @staticmethod
    def answer_bytes(n: int, d_v: int) -> int:
        """The JSON size of one query's breakdown over n keys (app/core/budget.py)."""
        return sized(numbers=n * (3 + d_v) + d_v, flags=n, labels=n, keys=7 * n + 4)

    @property
    def weighted(self) -> np.ndarray:
        """The weighted values, one row per key: (n, d_v)."""
        return np.array([row.weighted_value for row in self.rows], dtype=float)

    @property
    def weight_sum(self) -> float:
        return float(sum(row.weight for row in self.rows))


@dataclass(frozen=True, kw_only=True)
class OneHead(StageFields):
    """A head as the stage strip shows it: its stages with the tokens, the x its projections
    saw, its width and scale. `query` is the breakdown the computation made, if any."""

    tokens: list[str]
    x: Matrix  # (n, d_model)
    d_k: int
    scale_factor: float
    query: QueryBreakdown | None = None


def query_breakdown(tokens: list[str], stages: StageFields | HeadStages, i: int) -> QueryBreakdown:
    """One query's row, key by key: dot, scaled, visible, weight, weight × value."""
    weighted = stages.weights[i][:, None] * stages.v  # (n, d_v)
    columns = zip(
        stages.scores[i].tolist(),
        stages.scaled[i].tolist(),
        stages.allowed[i].tolist(),
        stages.weights[i].tolist(),
        weighted,
        strict=True,
    )
    rows = [
        QueryRow(
            key_index=j,
            key_token=tokens[j],
            dot=dot,
            scaled=scaled,
            visible=visible,
            weight=weight,
            weighted_value=value,
        )
        for j, (dot, scaled, visible, weight, value) in enumerate(columns)
    ]
    return QueryBreakdown(index=i, token=tokens[i], rows=rows, output=weighted.sum(axis=0))


@dataclass(frozen=True, kw_only=True)
class TrainedHead(StageFields):
    """One head of a trained model (/model, /decoder): its stages, where it sits, and x, the
    hidden state its projections read."""

    layer: int
    head: int
    d_head: int
    scale_factor: float
    ablated: bool  # switched off: its weights are computed, its output is zeroed
    x: Matrix  # (n, d_model)
    query: QueryBreakdown
