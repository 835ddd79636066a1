"""The typed result of POST /api/model: built by the service, written by orjson, read by the
/model page and the tests, and documented at /docs from these same annotations."""

from dataclasses import dataclass, fields
from typing import Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads its fields on Python 3.11

from app.core import arrays
from app.core.budget import sized
from app.features.stages.results import QueryBreakdown, StageFields, TrainedHead
from app.math.similarity import HeadEffect


@dataclass(frozen=True)
class ModelInfo:
    name: str
    layers: int
    heads: int
    d_head: int
    d_model: int
    source: Annotated[str, Field(description="Where the weights came from.")]


# A TypedDict, not a dataclass: one of its keys is "self" (the API's name), which cannot be
# a dataclass field (its __init__ would take self twice).
class HeadRole(TypedDict):
    """Clark et al.'s measures of one head on this sentence, and the labels they give."""

    previous: float  # mean over queries i ≥ 1 of the weight on key i − 1
    next: float  # mean over queries i ≤ n − 2 of the weight on key i + 1
    self: float  # mean weight on the query itself
    cls: float  # mean weight on key 0, [CLS]
    sep: float  # mean weight on key n − 1, [SEP]
    entropy: float  # mean entropy of the rows, in nats
    labels: list[str]  # previous, next, self (> 0.5); cls, sep (> 0.6); broad (≥ 0.8 · ln n)


@dataclass(frozen=True)
class AttentionTo:
    """layers × heads: the mean over queries of the total weight on these keys."""

    cls: arrays.Matrix
    sep: arrays.Matrix
    punctuation: arrays.Matrix


@dataclass(frozen=True)
class Compared:
    tokens: list[str]
    embedding: arrays.Vector


@dataclass(frozen=True, kw_only=True)
class ModelHead(TrainedHead):
    """One trained head: x is the hidden state entering the layer; q = x·W_Q + b_Q, …"""


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    """One run of the model on a sentence, as POST /api/model answers it (see `json`)."""

    model: ModelInfo
    tokens: Annotated[list[str], Field(description="Word pieces, [CLS] first and [SEP] last.")]
    ids: arrays.IntVector  # their ids in the model's vocabulary
    special: list[bool]  # true for [CLS] and [SEP]
    ablate: list[tuple[int, int]]  # the heads switched off, sorted
    weights: Annotated[
        arrays.Tensor4 | None,
        Field(description="layers × heads × n × n softmax weights (left out on request)."),
    ] = None
    embedding: Annotated[
        arrays.Vector,
        Field(description="The sentence embedding: mean of the last hidden states, length 1."),
    ]
    unablated_cosine: Annotated[
        float | None, Field(description="With ablate: the cosine to every head on.")
    ] = None
    entropy: arrays.Matrix  # (layers, heads): mean row entropy, nats
    roles: list[list[HeadRole]]  # layers × heads
    attention_to: AttentionTo
    rollout: Annotated[
        arrays.Matrix,
        Field(description="n × n: Â_L · … · Â_1, Â_l = 0.5 · mean over heads + 0.5 · I."),
    ]
    input_share: arrays.Vector  # the mean row of rollout: each piece's share in the embedding
    similarity: Annotated[float | None, Field(description="With compare_text: the cosine.")] = None
    compare: Compared | None = None  # with compare_text
    ranking: Annotated[
        list[HeadEffect] | None,
        Field(description="With rank_heads: the 72 heads, the largest drop in similarity first."),
    ] = None
    head: Annotated[ModelHead | None, Field(description="Only when layer and head are given.")] = (
        None
    )

    @staticmethod
    def answer_bytes(
        n: int,
        config: tuple[int, int, int, int],
        include_weights: bool,
        one_head: bool,
        compare_n: int = 0,
    ) -> int:
        """The JSON size of this answer (app/core/budget.py) for n word pieces and the
        model's (layers, heads, d_model, d_head): every head's n × n weights when included,
        rollout, the per-head means and roles, the second sentence, the ranking, one head's
        stages when asked."""
        layers, heads, d_model, d_head = config
        per_head = layers * heads
        numbers = n * n + 2 * n + 2 * d_model + 4 * per_head
        size = sized(numbers=numbers, flags=n, labels=n + compare_n, keys=40)
        size += per_head * sized(numbers=6, labels=2, keys=8)  # roles
        size += per_head * sized(numbers=4, keys=4)  # the ranking, when there is one
        if include_weights:
            size += sized(numbers=per_head * n * n, float32=True)
        if one_head:
            size += StageFields.answer_bytes(n, d_head, d_head) + sized(numbers=n * d_model)
            size += QueryBreakdown.answer_bytes(n, d_head)
        return size

    def json(self) -> dict[str, Any]:
        """The fields for JSON, those that do not apply (None) left out."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in values if value is not None}
