"""What attention costs in memory, in pure arithmetic (no numpy, no web)."""


def kv_cache_bytes_per_token(
    layers: int, kv_heads: int, head_dim: int, bytes_per_element: int = 2
) -> int:
    """2 · L · g · d_head · b: one K and one V row per key/value head in every layer."""
    return 2 * layers * kv_heads * head_dim * bytes_per_element
