"""What attention costs, as exact integer arithmetic: the one home of every cost formula.

    score entries per head   = n²        (one dense score matrix Q·Kᵀ)
    score bytes per head     = n² · b    (b bytes per element)

Nothing here knows about the web.
"""

from dataclasses import dataclass

BINARY_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def score_entries(seq_len: int) -> int:
    """n²: one dense score matrix for one head (seed 000's "score entries per head")."""
    return seq_len * seq_len


def score_bytes(seq_len: int, bytes_per_element: int = 2) -> int:
    """n² · b: that matrix stored at b bytes per element (4,096 tokens → 32 MiB at 2 bytes)."""
    return score_entries(seq_len) * bytes_per_element


@dataclass(frozen=True)
class BinarySize:
    """A byte count and the same amount in the largest binary unit that keeps it ≥ 1."""

    bytes: int
    value: float
    unit: str

    @property
    def text(self) -> str:
        """ "32 MiB", "1.5 GiB", "768 bytes": at most two decimals, trailing zeros dropped."""
        number = f"{self.value:,.2f}".rstrip("0").rstrip(".")
        return f"{number} {self.unit}"


def binary_size(n_bytes: int) -> BinarySize:
    """Bytes in KiB = 2¹⁰, MiB = 2²⁰, GiB = 2³⁰ … bytes, with the unit named."""
    power = 0
    while power + 1 < len(BINARY_UNITS) and n_bytes >= 1024 ** (power + 1):
        power += 1
    return BinarySize(n_bytes, n_bytes / 1024**power, BINARY_UNITS[power])
