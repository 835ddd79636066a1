"""The typed result of POST /api/decoder: built by the service, written by orjson, read by the
tests (and the /decoder page), and documented at /docs from these same annotations."""

from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal

from pydantic import Field
from typing_extensions import TypedDict  # pydantic reads its fields on Python 3.11

from app.core import arrays
from app.core.budget import sized
from app.features.stages.results import QueryBreakdown, StageFields, TrainedHead


@dataclass(frozen=True)
class DecoderInfo:
    name: str
    layers: int
    heads: int  # query heads per layer
    kv_heads: int  # key/value heads per layer
    d_head: int
    d_model: int
    vocab: int
    context: int  # the longest sequence it was trained on
    rope_base: float
    weights: Annotated[str, Field(description="How the file stores the weights.")]
    source: Annotated[str, Field(description="Where the weights came from.")]
    kv_groups: Annotated[
        list[list[int]],
        Field(description="The query heads that read each key/value head's cached K and V."),
    ]


@dataclass(frozen=True)
class Candidate:
    token: str  # the piece as text, its leading space a space
    id: int
    p: float  # softmax of the logits (temperature 1)


@dataclass(frozen=True, kw_only=True)
class Step:
    """One generated token, and what the model offered at that step."""

    token: str
    id: int
    p: float  # its probability under the model (temperature 1)
    p_sampled: Annotated[
        float, Field(description="Its probability in the draw (temperature, top_k); 1 if greedy.")
    ]
    top: list[Candidate]
    cached_positions: arrays.IntVector  # the positions every layer's cache held for this step


@dataclass(frozen=True, kw_only=True)
class KVCacheSize:
    """Measured from the K and V arrays the server holds after the last step."""

    dtype: str
    bytes_per_token: int  # bytes / positions: K and V of one position, every layer
    bytes: int  # the rows held, every layer and key/value head
    positions: int  # rows held per layer and key/value head
    layers: int
    kv_heads: int
    d_head: int
    formula_bytes_per_token: Annotated[
        int,
        Field(description="2 · layers · kv_heads · d_head · bytes per number, as /api/cost says."),
    ]
    allocated_bytes: Annotated[
        int, Field(description="The buffers reserved for this request's cache.")
    ]


# A TypedDict: "self" (the API's name) cannot be a dataclass field.
class DecoderRole(TypedDict):
    """What one head does on this sequence: means over queries 1 … n − 1."""

    previous: float  # mean weight on the position before the query
    self: float  # mean weight on the query itself
    first: float  # mean weight on position 0 (an attention sink when large)
    entropy: float  # mean entropy of the rows, in nats
    labels: list[str]  # previous, self, first (> 0.5); broad (≥ 0.8 · mean ln of keys seen)


@dataclass(frozen=True)
class CacheUsed:
    policy: Literal["full", "window", "sinks"]
    window: int | None
    sinks: int


@dataclass(frozen=True)
class RepeatTest:
    """The induction test's sequence and how surprised the model was by each copy."""

    length: int
    seed: int
    first_copy_surprisal: float  # mean over positions 1 … length − 1, nats
    second_copy_surprisal: float  # mean over positions length … 2·length − 1


@dataclass(frozen=True, kw_only=True)
class DecoderHead(TrainedHead):
    """One query head over the whole sequence: x is RMSNorm of the hidden state entering the
    layer, q and k are after RoPE, k and v are those of the key/value head it reads."""

    kv_head: int


@dataclass(frozen=True, kw_only=True)
class DecoderResult:
    """One run of the decoder, as POST /api/decoder answers it (see `json`)."""

    model: DecoderInfo
    tokens: Annotated[
        list[str], Field(description="The whole sequence, prompt then generated, as pieces.")
    ]
    token_ids: arrays.IntVector
    text: Annotated[str, Field(description="The whole sequence as text.")]
    prompt_length: int
    surprisal: Annotated[
        list[float | None], Field(description="−ln p(token | the tokens before it), nats.")
    ]
    next: list[Candidate]
    steps: list[Step]
    stopped: Annotated[
        Literal["length", "end"] | None,
        Field(description='With generate: "end" when the model wrote an end token.'),
    ] = None
    kv_cache: KVCacheSize
    cache: CacheUsed
    ablate: list[tuple[int, int]]  # the heads switched off, sorted
    unablated_next: Annotated[
        list[Candidate] | None,
        Field(description="With ablate: the top candidates with every head on."),
    ] = None
    unablated_p: Annotated[
        list[float] | None,
        Field(description="With ablate: each candidate of `next`, its p with every head on."),
    ] = None
    roles: list[list[DecoderRole]]  # layers × heads
    induction: Annotated[
        arrays.Matrix | None,
        Field(description="With repeat_random: layers × heads induction scores."),
    ] = None
    repeat: RepeatTest | None = None
    weights: Annotated[
        arrays.Tensor3 | arrays.Tensor4 | None,
        Field(description='9 × n × n ("layer") or layers × 9 × n × n ("all") softmax weights.'),
    ] = None
    weights_layer: int | None = None  # with weights "layer"
    stages: Annotated[DecoderHead | None, Field(description="Only when head is given.")] = None
    kv_head: int | None = None  # with head: the key/value head it reads

    @staticmethod
    def answer_bytes(
        n: int, steps: int, top: int, shape: tuple[int, int, int, int], weight_layers: int,
        one_head: bool,
    ) -> int:  # fmt: skip
        """The JSON size of this answer (app/core/budget.py) for n tokens, the generated
        steps, `top` candidates each, the model's (layers, heads, d_model, d_head), the layers
        of weights sent and whether one head's stages are: the tokens and their surprisal,
        each step's candidates and cached positions, the roles, the weights, the stages."""
        layers, heads, d_model, d_head = shape
        size = sized(numbers=3 * n, labels=2 * n, keys=60)
        size += (steps + 1) * sized(numbers=2 * top + n + 3, labels=top + 1, keys=3 * top + 8)
        size += layers * heads * sized(numbers=5, labels=2, keys=6)  # roles, induction
        size += sized(numbers=weight_layers * heads * n * n, float32=True)
        if one_head:
            size += StageFields.answer_bytes(n, d_head, d_head)
            size += sized(numbers=n * d_model, float32=True)
            size += QueryBreakdown.answer_bytes(n, d_head)
        return size

    def json(self) -> dict[str, Any]:
        """The fields for JSON, those that do not apply (None) left out."""
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: value for name, value in values if value is not None}
