"""The typed results of POST /api/kernel/tiled and /api/kernel/decode.

One frozen dataclass per shape: the service builds it, orjson writes it (numpy arrays
included, −∞ as null), the /kernel page reads its attributes, and FastAPI documents it from
these same annotations. The counts in closed form reuse app/math's own dataclasses
(TiledCounts, DecodeCounts, Traffic, Transfer), which already have the fields of the answer.
"""

from dataclasses import asdict, dataclass
from math import ceil
from typing import Annotated, Any

from pydantic import Field

from app.core import arrays
from app.core.budget import sized
from app.features.lab.schemas import ResolvedInputs
from app.math import decoding as dc
from app.math import flash as fl
from app.math import kernel as kn


def doc(description: str) -> Any:
    """A field's description in the OpenAPI document."""
    return Field(description=description)


@dataclass(frozen=True, kw_only=True)
class InputsUsed(ResolvedInputs):
    """The lab state as resolved on the server, with its projections and mask."""

    scale: bool
    q: arrays.Matrix  # (n, d_k), position applied as in /api/attention
    k: arrays.Matrix  # (n, d_k)
    v: arrays.Matrix  # (n, d_v)
    allowed: arrays.BoolMatrix  # (n, n)
    empty_rows: list[int]


# ---------------------------------------------------------------- long sequences, counted


@dataclass(frozen=True, kw_only=True)
class LongSequenceUsed:
    """The long sequences counted: the request's `long_sequence` with its defaults."""

    seq_lens: list[int]
    block: int
    head_dim: int
    sram_elements: int


@dataclass(frozen=True, kw_only=True)
class TrafficCount:
    """Elements read from and written to slow memory."""

    reads: Annotated[int, doc("Elements read from slow memory.")]
    writes: Annotated[int, doc("Elements written to slow memory.")]

    @property
    def total(self) -> int:
        return self.reads + self.writes


@dataclass(frozen=True, kw_only=True)
class LongTraffic:
    """Slow-memory traffic of one head at this length, counted in closed form."""

    sram_elements: int
    block_q: Annotated[int, doc("B_r = min(B_c, d).")]
    block_k: Annotated[int, doc("B_c = ⌈M / 4d⌉.")]
    standard: TrafficCount
    fa1: fl.Traffic
    fa2: fl.Traffic
    fa1_causal: fl.Traffic
    fa2_causal: fl.Traffic


@dataclass(frozen=True, kw_only=True)
class LongSequenceRow(kn.TiledCounts):
    """Full attention of n tokens, counted: tiles, bytes, decoding and traffic."""

    dense_score_bytes: Annotated[int, doc("dense_score_entries × 2 bytes.")]
    tiled_score_bytes: Annotated[int, doc("tiled_score_entries × 2 bytes.")]
    decode: kn.DecodeCounts
    traffic: LongTraffic

    @classmethod
    def of(
        cls,
        counts: kn.TiledCounts,
        dense_bytes: int,
        tiled_bytes: int,
        decode: kn.DecodeCounts,
        traffic: LongTraffic,
    ) -> "LongSequenceRow":
        return cls(
            **asdict(counts),
            dense_score_bytes=dense_bytes,
            tiled_score_bytes=tiled_bytes,
            decode=decode,
            traffic=traffic,
        )


@dataclass(frozen=True, kw_only=True)
class TrafficCurve:
    """Reads + writes of one head against n, for the chart."""

    seq_len: list[int]
    standard: list[int]
    fa1: list[int]
    fa2: list[int]
    fa1_causal: list[int]
    fa2_causal: list[int]


@dataclass(frozen=True, kw_only=True)
class KernelResult(InputsUsed):
    """What both walk-throughs share: the lab state used and the long sequences counted."""

    long_sequence: LongSequenceUsed
    long_sequences: list[LongSequenceRow]
    traffic_curve: TrafficCurve

    @staticmethod
    def shared_bytes(n: int, widths: tuple[int, int, int], long_rows: int) -> int:
        """The JSON size of these shared fields (app/core/budget.py): the inputs used, q, k,
        v, the n × n mask, one row of counts per long sequence and the traffic curve."""
        d_model, d_k, d_v = widths
        numbers = 2 * n * d_model + d_model * (2 * d_k + d_v) + n * (2 * d_k + d_v)
        inputs = sized(numbers=numbers, flags=n * n, labels=n, keys=25)
        return inputs + long_rows * sized(numbers=25, keys=40) + sized(numbers=40, keys=10)


# ---------------------------------------------------------------- tiled attention


@dataclass(frozen=True, kw_only=True)
class TileStep:
    """One (query block, key block) step of the tiled walk-through, as the API answers it
    (from app/math/flash.TileComputation)."""

    order: fl.LoopOrder
    index: int
    query_block: Annotated[list[int], doc("[start, stop) of the query rows.")]
    key_block: Annotated[list[int], doc("[start, stop) of the key rows.")]
    skipped: Annotated[bool, doc("Every pair hidden: nothing loaded, state unchanged.")]
    allowed: arrays.BoolMatrix
    scores: Annotated[arrays.MaskedMatrix, doc("S = Q_i·K_jᵀ/√d_k; null where hidden.")]
    m_before: Annotated[arrays.MaskedVector, doc("Running row maximum before; null is −∞.")]
    m: Annotated[arrays.MaskedVector, doc("Running row maximum after.")]
    grew: Annotated[arrays.BoolVector, doc("Rows whose maximum rose, so the sums were rescaled.")]
    rescale: Annotated[arrays.Vector, doc("exp(m_before − m) per row.")]
    p: Annotated[arrays.Matrix, doc("exp(S − m); 0 where hidden.")]
    l_before: arrays.Vector
    l: Annotated[arrays.Vector, doc("Running sum: rescale · l_before + rowsum(p).")]  # noqa: E741
    o_before: arrays.Matrix
    o: Annotated[arrays.Matrix, doc("Unnormalised output: rescale · o_before + p · V_j.")]
    output_rows: Annotated[
        arrays.Matrix | None, doc("o / l, written after the last key block of this query block.")
    ]
    m_tile: Annotated[arrays.MaskedVector, doc("rowmax S of this tile (fa1's m̃).")]
    p_scale: Annotated[arrays.Vector, doc("fa1: exp(m̃ − m) on the new tile; fa2: 1.")]
    logsumexp_rows: Annotated[
        arrays.MaskedVector | None,
        doc("fa2, last key block of the rows: L = m + log l, written with O."),
    ]
    final_rescale: Annotated[bool, doc("fa2's one division by l, at the rows' end.")]
    reads: Annotated[list[fl.Transfer], doc("Read from slow memory in this step.")]
    writes: Annotated[list[fl.Transfer], doc("Written to slow memory in this step.")]
    elements_read: int
    elements_written: int
    score_entries: Annotated[int, doc("Score entries alive during this step.")]
    touched: Annotated[arrays.BoolMatrix, doc("n × n: scores computed so far.")]
    touched_entries: int

    @classmethod
    def of(cls, step: fl.TileComputation, touched: arrays.BoolMatrix) -> "TileStep":
        return cls(
            order=step.order,
            index=step.index,
            query_block=list(step.query_block),
            key_block=list(step.key_block),
            skipped=step.skipped,
            allowed=step.allowed,
            scores=step.scores,
            m_before=step.m_before,
            m=step.m,
            grew=step.grew,
            rescale=step.rescale,
            p=step.p,
            l_before=step.l_before,
            l=step.l,
            o_before=step.o_before,
            o=step.o,
            output_rows=step.output_rows,
            m_tile=step.m_tile,
            p_scale=step.p_scale,
            logsumexp_rows=step.logsumexp_rows,
            final_rescale=step.final_rescale,
            reads=list(step.reads),
            writes=list(step.writes),
            elements_read=step.elements_read,
            elements_written=step.elements_written,
            score_entries=step.score_entries,
            touched=touched,
            touched_entries=int(touched.sum()),
        )


@dataclass(frozen=True, kw_only=True)
class TiledTraffic:
    """Elements of slow memory moved by this run and by standard attention."""

    order: fl.LoopOrder
    tiled: TrafficCount
    standard: TrafficCount
    setup_writes: Annotated[int, doc("fa1 first writes O = 0, l = 0, m = −∞: n·d_v + 2n.")]
    tiles: int
    skipped_tiles: int


@dataclass(frozen=True, kw_only=True)
class TiledMemory:
    """Score entries held and dot products done, tiled against dense."""

    dense_score_entries: int
    peak_score_entries: int
    dense_dot_products: int
    tiled_dot_products: int
    skipped_steps: int
    full_attention: kn.TiledCounts


@dataclass(frozen=True, kw_only=True)
class TiledResult(KernelResult):
    """The whole /api/kernel/tiled answer."""

    order: fl.LoopOrder
    sram_elements: int | None
    block_q: int
    block_k: int
    blocks_from_sram: Annotated[bool, doc("The tile sizes came from sram_elements.")]
    logsumexp: Annotated[arrays.MaskedVector, doc("L = m + log l per row; null: no key seen.")]
    traffic: TiledTraffic
    steps: list[TileStep]
    output: Annotated[arrays.Matrix, doc("The tiled result, n × d_v.")]
    dense_output: Annotated[arrays.Matrix, doc("weights · V, as /api/attention.")]
    max_abs_difference: float
    memory: TiledMemory

    @staticmethod
    def answer_bytes(
        n: int, widths: tuple[int, int, int], blocks: tuple[int, int], long_rows: int
    ) -> int:
        """The JSON size of this answer: every step's tile (scores, p, its mask, the row
        state, o) with the n × n map of scores touched so far, the outputs, the counts."""
        block_q, block_k = blocks
        d_v = widths[2]
        steps = ceil(n / block_q) * ceil(n / block_k)
        tile = block_q * block_k
        per_step = sized(
            numbers=2 * tile + 8 * block_q + 3 * block_q * d_v,
            flags=tile + block_q + n * n,
            keys=50,
        )
        ending = sized(numbers=2 * n * d_v + n + 20, keys=30)
        return KernelResult.shared_bytes(n, widths, long_rows) + steps * per_step + ending


# ---------------------------------------------------------------- cached decoding


@dataclass(frozen=True, kw_only=True)
class Prefill:
    """The first `prompt` tokens at once."""

    tokens: list[str]
    scores: arrays.Matrix
    scaled: arrays.Matrix
    allowed: arrays.BoolMatrix
    weights: arrays.Matrix
    output: arrays.Matrix
    dots: int
    cache_length: int
    cached_positions: Annotated[arrays.IntVector, doc("What the cache keeps after the prefill.")]


@dataclass(frozen=True, kw_only=True)
class CacheUsed:
    """The cache policy a decoding ran with."""

    policy: dc.Policy
    window: int | None
    sinks: int
    capacity: Annotated[int | None, doc("Most positions ever held: none for full.")]


@dataclass(frozen=True, kw_only=True)
class DecodeStep:
    """One generated token against the cache, as the API answers it (from
    app/math/decoding.DecodedToken)."""

    position: int
    token: str
    cached_positions: Annotated[arrays.IntVector, doc("Positions the cache holds after the step.")]
    cached_tokens: list[str]
    evicted: Annotated[arrays.IntVector, doc("Positions dropped in this step.")]
    cache_elements: Annotated[int, doc("Numbers the cache holds: positions · (d_k + d_v).")]
    q: arrays.Vector
    k: Annotated[arrays.Vector, doc("Appended to the K cache.")]
    v: Annotated[arrays.Vector, doc("Appended to the V cache.")]
    cache_length: int
    scores: arrays.Vector
    scaled: arrays.Vector
    allowed: arrays.BoolVector
    weights: arrays.Vector
    output: arrays.Vector
    full_output: Annotated[arrays.Vector, doc("The same row of full causal attention.")]
    max_abs_difference: Annotated[float, doc("Largest |output − full_output|: 0 for full.")]
    dots_cached: int
    dots_uncached: int
    dots_cached_total: int
    dots_uncached_total: int
    cache_entries: int


@dataclass(frozen=True, kw_only=True)
class DecodeResult(KernelResult):
    """The whole /api/kernel/decode answer."""

    forced_causal: Annotated[bool, doc("The state was not causal; decoding made it so.")]
    prompt: int
    cache: CacheUsed
    policy_mask_difference: Annotated[
        float, doc("Largest difference from the dense head given the policy as a mask: ~0.")
    ]
    prefill: Prefill
    steps: list[DecodeStep]
    output: arrays.Matrix
    full_output: Annotated[arrays.Matrix, doc("Full causal attention, nothing dropped.")]
    max_abs_difference: float

    @staticmethod
    def answer_bytes(n: int, widths: tuple[int, int, int], prompt: int, long_rows: int) -> int:
        """The JSON size of this answer: the prefill's prompt × prompt tables, then per
        generated token the cache it holds (at most n positions) and its row of scores."""
        _, d_k, d_v = widths
        prefill = sized(
            numbers=3 * prompt * prompt + prompt * d_v + prompt,
            flags=prompt * prompt,
            labels=prompt,
            keys=10,
        )
        per_step = sized(numbers=2 * n + 3 * n + 2 * d_k + 3 * d_v, flags=n, labels=n, keys=25)
        ending = sized(numbers=2 * n * d_v, keys=10)
        shared = KernelResult.shared_bytes(n, widths, long_rows)
        return shared + prefill + (n - prompt) * per_step + ending
