"""What attention costs, as exact integer arithmetic: the one home of every cost formula.

For a sequence of n tokens, one head of width d_head, h query heads, g key/value heads,
L layers and a batch of B sequences:

    score entries per head   = n²                    (one dense score matrix Q·Kᵀ)
    score bytes per head     = n² · b                (b bytes per element)
    prefill FLOPs per head   = 2·n²·d_head (Q·Kᵀ) + 2·n²·d_head (weights · V)
    decode FLOPs per head    = 2·n·d_head + 2·n·d_head   (one new query, n cached keys)
    KV cache per token       = 2 · L · g · d_head · b   (K and V, every layer)
    with latent attention    = L · (r + d_rope) · b     (MLA: one compressed row of kv_lora_rank
                                                         r plus the shared RoPE key, DeepSeek-V2)

A layer with a sliding window w keeps at most w tokens of K and V (w + s with s attention sinks
kept from the start); the others keep all n. Sizes are integers: int4 packs two elements in a
byte, and llama.cpp's q8_0 and q4_0 store blocks of 32 values in 34 and 18 bytes (32 one-byte
or half-byte values and one fp16 scale), so a size rounds up to whole bytes.
Nothing here knows about the web.
"""

from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

# Element sizes in bits, by storage type.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int4": 4}
# Bytes per element of a KV cache, by type: the plain types, and llama.cpp's block formats
# (q8_0: 32 int8 values + one fp16 scale = 34 bytes; q4_0: 32 four-bit values + scale = 18).
QUANT_BLOCKS: dict[str, tuple[int, int]] = {"q8_0": (34, 32), "q4_0": (18, 32)}
KV_DTYPE_BYTES: dict[str, Fraction] = {
    **{name: Fraction(bits, 8) for name, bits in DTYPE_BITS.items()},
    **{name: Fraction(size, count) for name, (size, count) in QUANT_BLOCKS.items()},
}
# A memory-efficient exact kernel keeps two fp32 numbers per query row (running max and sum).
ROW_STATS_BYTES = 2 * 4
BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")

ElementSize = int | float | Fraction


# ---------------------------------------------------------------- sizes


def storage_bytes(count: int, bytes_per_element: ElementSize = 2) -> int:
    """Bytes for `count` elements, rounded up to whole bytes (two int4 share a byte)."""
    return -(-count * Fraction(bytes_per_element) // 1)


def score_entries(seq_len: int) -> int:
    """n²: one dense score matrix for one head (seed 000's "score entries per head")."""
    return seq_len * seq_len


def score_bytes(seq_len: int, bytes_per_element: ElementSize = 2) -> int:
    """n² · b: that matrix stored at b bytes per element (4,096 tokens → 32 MiB at 2 bytes)."""
    return storage_bytes(score_entries(seq_len), bytes_per_element)


@dataclass(frozen=True)
class BinarySize:
    """A byte count and the same amount in the largest binary unit that keeps it ≥ 1."""

    bytes: int
    value: float
    unit: str

    @property
    def rounded(self) -> Decimal:
        """The amount in its unit to two decimals, rounded half up from the exact quotient."""
        exact = Fraction(self.bytes, 1024 ** BINARY_UNITS.index(self.unit))
        return (Decimal(exact.numerator) / Decimal(exact.denominator)).quantize(
            Decimal("0.01"), rounding=ROUND_HALF_UP
        )

    @property
    def text(self) -> str:
        """For instance 32 MiB, 1.5 GiB, 767.63 MiB, as the API writes it: at most two
        decimals, trailing zeros dropped (pages show app.core.i18n.format_size)."""
        number = f"{self.rounded:,.2f}".rstrip("0").rstrip(".")
        return f"{number} {self.unit}"


def binary_size(n_bytes: int) -> BinarySize:
    """Bytes in KiB = 2¹⁰, MiB = 2²⁰, GiB = 2³⁰ … bytes, with the unit named."""
    power = 0
    while power + 1 < len(BINARY_UNITS) and n_bytes >= 1024 ** (power + 1):
        power += 1
    return BinarySize(n_bytes, n_bytes / 1024**power, BINARY_UNITS[power])


def gib_to_bytes(gib: float) -> int:
    return int(Fraction(gib) * 2**30)


def row_stats_bytes(seq_len: int) -> int:
    """Extra memory of a memory-efficient exact kernel for one head: a running max and sum
    per query row (fp32), 8·n bytes, instead of the n × n matrix. Linear in n."""
    return ROW_STATS_BYTES * seq_len


def qkvo_bytes(
    seq_len: int, heads: int, kv_heads: int, head_dim: int, bytes_per_element: ElementSize = 2
) -> int:
    """Q and the output (h heads) plus K and V (g heads) of one layer, n·d_head each:
    needed by every kernel, dense or memory-efficient."""
    return storage_bytes(2 * (heads + kv_heads) * seq_len * head_dim, bytes_per_element)


# ---------------------------------------------------------------- attention arithmetic


def causal_pairs(seq_len: int, window: int | None = None) -> int:
    """Query–key pairs a causal layer computes: Σᵢ min(i + 1, w) over n queries.

    Without a window that is n(n + 1)/2, about half of n²; with a window w it grows
    only linearly once n > w: w(w + 1)/2 + (n − w)·w.
    """
    if window is None or window >= seq_len:
        return seq_len * (seq_len + 1) // 2
    return window * (window + 1) // 2 + (seq_len - window) * window


def prefill_flops_per_head(seq_len: int, head_dim: int) -> int:
    """Dense prefill, one head, one layer: Q·Kᵀ is 2·n²·d_head, weights · V another 2·n²·d_head."""
    return 4 * score_entries(seq_len) * head_dim


def causal_prefill_flops_per_head(seq_len: int, head_dim: int, window: int | None = None) -> int:
    """The same for a kernel that skips the pairs the causal (and window) mask hides."""
    return 4 * causal_pairs(seq_len, window) * head_dim


def decode_flops_per_head(
    seq_len: int, head_dim: int, window: int | None = None, sinks: int = 0
) -> int:
    """One new token, n tokens in the cache counting it: its query against those n keys
    (min(n, w + s) with a window and sinks), 2·n·d_head for the scores, 2·n·d_head for
    weights · V."""
    return 4 * cached_tokens(seq_len, window, sinks) * head_dim


# ---------------------------------------------------------------- KV cache


def cached_tokens(seq_len: int, window: int | None, sinks: int = 0) -> int:
    """Tokens one layer keeps in its cache: all n, or at most w (+ s sinks) with a window."""
    return seq_len if window is None else min(seq_len, window + sinks)


def kv_elements_per_token_layer(
    kv_heads: int, head_dim: int, kv_lora_rank: int | None = None, rope_head_dim: int = 0
) -> int:
    """Numbers one layer caches per token: 2 · g · d_head (a K and a V row per key/value head),
    or r + d_rope with multi-head latent attention (the compressed row and the RoPE key)."""
    if kv_lora_rank is not None:
        return kv_lora_rank + rope_head_dim
    return 2 * kv_heads * head_dim


def kv_cache_bytes_per_token(
    layers: int,
    kv_heads: int,
    head_dim: int,
    bytes_per_element: ElementSize = 2,
    kv_lora_rank: int | None = None,
    rope_head_dim: int = 0,
) -> int:
    """2 · L · g · d_head · b (or L · (r + d_rope) · b with MLA): one more token, every layer."""
    per_layer = kv_elements_per_token_layer(kv_heads, head_dim, kv_lora_rank, rope_head_dim)
    return storage_bytes(layers * per_layer, bytes_per_element)


def kv_cache_bytes(
    seq_len: int,
    layers: int,
    kv_heads: int,
    head_dim: int,
    bytes_per_element: ElementSize = 2,
    batch: int = 1,
    window: int | None = None,
    window_layers: int | None = None,
    sinks: int = 0,
    kv_lora_rank: int | None = None,
    rope_head_dim: int = 0,
) -> int:
    """K and V (or MLA's latent rows) for `batch` sequences of n tokens.

    `window_layers` of the layers (all of them when omitted) keep at most `window` tokens
    plus `sinks`; the rest attend globally and keep all n.
    """
    windowed = 0 if window is None else (layers if window_layers is None else window_layers)
    token_layers = windowed * cached_tokens(seq_len, window, sinks) + (layers - windowed) * seq_len
    per_layer = kv_elements_per_token_layer(kv_heads, head_dim, kv_lora_rank, rope_head_dim)
    return storage_bytes(batch * token_layers * per_layer, bytes_per_element)


def longest_fitting(size_at: Callable[[int], int], budget: int, limit: int) -> int:
    """The largest n in 0 … limit with size_at(n) ≤ budget, for a size that grows with n."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size_at(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---------------------------------------------------------------- one configuration


@dataclass(frozen=True)
class AttentionConfig:
    """One model's attention, as its configuration states it."""

    layers: int = 1
    heads: int = 1
    kv_heads: int = 1
    head_dim: int = 128
    window: int | None = None
    window_layers: int | None = None
    sinks: int = 0  # tokens from the start kept by each windowed layer, beside its window
    kv_lora_rank: int | None = None  # multi-head latent attention: cache r + d_rope per token
    rope_head_dim: int = 0

    @property
    def windowed_layers(self) -> int:
        if self.window is None:
            return 0
        return self.layers if self.window_layers is None else self.window_layers

    @property
    def global_layers(self) -> int:
        return self.layers - self.windowed_layers

    @property
    def kind(self) -> str:
        """MLA (latent), MHA (g = h), GQA (1 < g < h) or MQA (g = 1)."""
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.kv_heads == self.heads:
            return "MHA"
        return "MQA" if self.kv_heads == 1 else "GQA"

    def score_bytes_per_layer(
        self, seq_len: int, bytes_per_element: ElementSize, batch: int = 1
    ) -> int:
        """n² · b · h · B: every head's dense score matrix in one layer, for the whole batch."""
        return storage_bytes(score_entries(seq_len) * self.heads * batch, bytes_per_element)

    def row_stats_bytes_per_layer(self, seq_len: int, batch: int = 1) -> int:
        """8 · n · h · B: what a memory-efficient exact kernel keeps instead, per layer."""
        return row_stats_bytes(seq_len) * self.heads * batch

    def qkvo_bytes_per_layer(
        self, seq_len: int, bytes_per_element: ElementSize, batch: int = 1
    ) -> int:
        """Q, K, V and the output of one layer for the batch (every kernel needs them)."""
        return batch * qkvo_bytes(
            seq_len, self.heads, self.kv_heads, self.head_dim, bytes_per_element
        )

    def kv_cache_bytes(self, seq_len: int, bytes_per_element: ElementSize, batch: int = 1) -> int:
        return kv_cache_bytes(
            seq_len,
            self.layers,
            self.kv_heads,
            self.head_dim,
            bytes_per_element,
            batch,
            self.window,
            self.windowed_layers if self.window is not None else None,
            self.sinks,
            self.kv_lora_rank,
            self.rope_head_dim,
        )

    def kv_cache_bytes_per_token(self, bytes_per_element: ElementSize) -> int:
        """What one more token adds to the cache while no window is full yet."""
        return kv_cache_bytes_per_token(
            self.layers,
            self.kv_heads,
            self.head_dim,
            bytes_per_element,
            self.kv_lora_rank,
            self.rope_head_dim,
        )

    def prefill_flops(self, seq_len: int, batch: int = 1) -> int:
        """Dense prefill for the whole model: every layer computes all n² pairs per head."""
        return batch * self.layers * self.heads * prefill_flops_per_head(seq_len, self.head_dim)

    def causal_prefill_flops(self, seq_len: int, batch: int = 1) -> int:
        """A kernel that skips masked pairs: n(n+1)/2 per global layer, Σ min(i+1, w) per
        windowed layer."""
        per_head = self.global_layers * causal_prefill_flops_per_head(seq_len, self.head_dim)
        if self.windowed_layers:
            per_head += self.windowed_layers * causal_prefill_flops_per_head(
                seq_len, self.head_dim, self.window
            )
        return batch * self.heads * per_head

    def decode_flops(self, seq_len: int, batch: int = 1) -> int:
        """One new token per sequence with n cached: linear in n, capped at w in windowed layers."""
        per_head = self.global_layers * decode_flops_per_head(seq_len, self.head_dim)
        if self.windowed_layers:
            per_head += self.windowed_layers * decode_flops_per_head(
                seq_len, self.head_dim, self.window, self.sinks
            )
        return batch * self.heads * per_head

    # ---------------------------------------------------------------- what fits

    def max_seq_len(
        self, bytes_per_element: ElementSize, batch: int, budget: int, weight_bytes: int, limit: int
    ) -> int:
        """The longest n with KV(n) for `batch` sequences + weights ≤ budget (0 if none; `limit`
        when every layer is windowed and the cache stops growing)."""
        return longest_fitting(
            lambda m: self.kv_cache_bytes(m, bytes_per_element, batch) + weight_bytes, budget, limit
        )

    def max_batch(
        self, seq_len: int, bytes_per_element: ElementSize, budget: int, weight_bytes: int
    ) -> int:
        """The most sequences of n tokens whose caches + weights ≤ budget: ⌊(budget − W) / KV⌋
        up to rounding of packed types, found exactly."""
        one = self.kv_cache_bytes(seq_len, bytes_per_element, 1)
        if budget - weight_bytes < one:
            return 0
        return longest_fitting(
            lambda b: self.kv_cache_bytes(seq_len, bytes_per_element, b) + weight_bytes,
            budget,
            (budget - weight_bytes) // max(one, 1) + 1,
        )
