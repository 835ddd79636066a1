"""Standard normals from many seeds at once, equal to `np.random.default_rng(seed)`'s.

`default_rng(seed).standard_normal(shape)` spends most of its ~13 µs building the
generator: a `SeedSequence` hashes the seed into a pool of four 32-bit words and expands
the pool into PCG64's 128-bit state and increment; only then are numbers drawn. For a batch
of seeds the hashing here runs once, as uint32 array arithmetic over all of them (the hash
constants do not depend on the seed, so they are computed at import), and the draws come
from one reused generator set to each seed's state in turn: about 4 µs a seed after a
fixed ~40 µs. A small batch (a new word in a sentence of known ones: the usual case) is
hashed seed by seed in Python integers instead, ~6 µs a seed, and drawn from the same reused
generator: cheaper than numpy's path, whose Python-level lock, error-state context and three
objects cost most between requests. Bit for bit the same numbers: tests/math/test_seeded.py
checks both against numpy.

Followed: numpy/random/bit_generator.pyx (SeedSequence: `hashmix`, `mix`, `mix_entropy`,
`generate_state`) and numpy/random/src/pcg64 (`pcg64_set_seed`).
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
BATCH_MIN = 8  # fewer seeds than this: hashed one by one (pcg64_state)

_M32 = 0xFFFF_FFFF
_M128 = (1 << 128) - 1
_INIT_A, _MULT_A = 0x43B0_D7E5, 0x931E_8875
_INIT_B, _MULT_B = 0x8B51_F9DD, 0x58F3_8DED
_MIX_L, _MIX_R = np.uint32(0xCA01_F9DD), np.uint32(0x4973_F715)
_PCG_MULT = (2549297995355413924 << 64) + 4865540595714422341
_POOL = 4  # SeedSequence's pool, in 32-bit words
_WORDS = 8  # PCG64 asks for 4 uint64 = 8 uint32 words
_SHIFT = np.uint32(16)


def _chain(start: int, mult: int, count: int) -> list[int]:
    """start, start·mult, start·mult², … mod 2³²: the hash constant before each use."""
    out, h = [], start
    for _ in range(count + 1):
        out.append(h)
        h = (h * mult) & _M32
    return out


def _column(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint32)[:, None]


# hashmix(value) with constant number i is ((value ^ h_i) · h_{i+1}) then an xor-shift.
_A = _chain(_INIT_A, _MULT_A, _POOL * _POOL)  # 4 uses to fill the pool, 12 to mix it
_B = _chain(_INIT_B, _MULT_B, _WORDS)
_FILL = (_column(_A[0:_POOL]), _column(_A[1 : _POOL + 1]))
# Mixing round s updates every word d ≠ s with hashmix(pool[s]), using the next three A
# constants in the order of d. Here a round computes all four rows (the one at s with a
# placeholder constant) and puts row s back, which is cheaper than picking rows out.
_ROUNDS = []
for _s in range(_POOL):
    _used = [_POOL + 3 * _s + i for i in range(_POOL - 1)]
    _order = [*_used[:_s], _used[0], *_used[_s:]]  # placeholder at s
    _ROUNDS.append((_s, _column([_A[i] for i in _order]), _column([_A[i + 1] for i in _order])))
_EXPAND = [i % _POOL for i in range(_WORDS)]
_GEN = (_column(_B[0:_WORDS]), _column(_B[1 : _WORDS + 1]))


def _xorshift(v: np.ndarray) -> np.ndarray:
    return v ^ (v >> _SHIFT)


# The same hashing for one seed, in Python integers (cheaper than numpy's own for a few seeds,
# and than the arrays above below BATCH_MIN): the pool's two zero words hashed at import,
# then each (source, destination, constant, next constant) of the twelve mixing steps.
_ZERO_WORDS = [int(v) for v in _xorshift((np.uint32(0) ^ _FILL[0][2:, 0]) * _FILL[1][2:, 0])]
_STEPS = [
    (s, int(before[d, 0]), int(after[d, 0]), d)
    for s, before, after in _ROUNDS
    for d in range(_POOL)
    if d != s
]
_OUT = [(i, int(_GEN[0][w, 0]), int(_GEN[1][w, 0])) for w, i in enumerate(_EXPAND)]
_MIX_L_INT, _MIX_R_INT = int(_MIX_L), int(_MIX_R)


def pcg64_state(seed: int) -> tuple[int, int]:
    """(state, inc) of `np.random.PCG64(seed)` for one 0 ≤ seed < 2⁶⁴ (pcg64_states' one)."""
    lo = ((seed & _M32) ^ _A[0]) * _A[1] & _M32
    hi = ((seed >> 32) ^ _A[1]) * _A[2] & _M32
    pool = [lo ^ (lo >> 16), hi ^ (hi >> 16), *_ZERO_WORDS]
    for source, before, after, target in _STEPS:
        hashed = ((pool[source] ^ before) * after) & _M32
        hashed ^= hashed >> 16
        mixed = (_MIX_L_INT * pool[target] - _MIX_R_INT * hashed) & _M32
        pool[target] = mixed ^ (mixed >> 16)
    w = []
    for i, before, after in _OUT:
        word = ((pool[i] ^ before) * after) & _M32
        w.append(word ^ (word >> 16))
    inc = (((w[4] | w[5] << 32) << 64 | w[6] | w[7] << 32) << 1 | 1) & _M128
    state = ((inc + ((w[0] | w[1] << 32) << 64 | w[2] | w[3] << 32)) * _PCG_MULT + inc) & _M128
    return state, inc


def pcg64_states(seeds: Sequence[int]) -> list[tuple[int, int]]:
    """(state, inc) of `np.random.PCG64(seed)` for each 0 ≤ seed < 2⁶⁴, all at once."""
    entropy = np.array(seeds, dtype=np.uint64)  # (k,)
    pool = np.zeros((_POOL, len(seeds)), dtype=np.uint32)  # (4, k)
    # A seed below 2³² is one word of entropy; the pool pads with zeros, so hi = 0 is the same.
    pool[0] = entropy & np.uint64(_M32)
    pool[1] = entropy >> np.uint64(32)
    pool = _xorshift((pool ^ _FILL[0]) * _FILL[1])
    for s, before, after in _ROUNDS:
        hashed = _xorshift((pool[s] ^ before) * after)  # (4, k)
        mixed = _xorshift(_MIX_L * pool - _MIX_R * hashed)
        mixed[s] = pool[s]
        pool = mixed
    words = _xorshift((pool[_EXPAND] ^ _GEN[0]) * _GEN[1])  # (8, k)
    # generate_state(4, uint64) reads the 32-bit words in pairs, low word first.
    u64 = (words[0::2].astype(np.uint64) | (words[1::2].astype(np.uint64) << np.uint64(32))).T
    states = []
    for seed_hi, seed_lo, inc_hi, inc_lo in u64.tolist():
        inc = (((inc_hi << 64) | inc_lo) << 1 | 1) & _M128
        # pcg64 srandom: state = 0; step; state += initstate; step
        state = ((inc + ((seed_hi << 64) | seed_lo)) * _PCG_MULT + inc) & _M128
        states.append((state, inc))
    return states


_local = threading.local()


def _generator() -> tuple[np.random.PCG64, np.random.Generator]:
    """One generator per thread, set to a new seed's state for every draw."""
    if not hasattr(_local, "generator"):
        bits = np.random.PCG64()
        _local.generator = (bits, np.random.Generator(bits))
    return _local.generator


def standard_normals(seeds: Sequence[int], shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
    """`[np.random.default_rng(s).standard_normal(shape) for s, shape in zip(seeds, shapes)]`."""
    states = [pcg64_state(s) for s in seeds] if len(seeds) < BATCH_MIN else pcg64_states(seeds)
    bits, generator = _generator()
    out = []
    for (state, inc), shape in zip(states, shapes, strict=True):
        bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": state, "inc": inc},
            "has_uint32": 0,
            "uinteger": 0,
        }
        out.append(generator.standard_normal(shape))
    return out


class Memo:
    """Arrays already made, by key, least recently used out first beyond `max_bytes` (each
    entry counted as its numbers plus a fixed 128 bytes for its key and slot).

    A class edits the same words over and over: their generated rows and the default
    projections are looked up instead of drawn again. The arrays held are read-only.
    """

    ENTRY_OVERHEAD = 128

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K, make: Callable[[], np.ndarray]) -> np.ndarray:
        """The array of one key; `make()` makes it when it is not held."""
        with self._lock:
            values = self._entries.get(key)
            if values is not None:
                self._entries.move_to_end(key)
                return values
        values = make()
        values.flags.writeable = False
        self._keep([key], [values])
        return values

    def get_many(
        self, keys: Sequence[K], make: Callable[[list[K]], list[np.ndarray]]
    ) -> list[np.ndarray]:
        """The array of every key; `make(missing keys)` makes those not held, in one call."""
        entries = self._entries
        held: list[np.ndarray | None] = []
        missing: dict[K, None] = {}  # in order, each once
        with self._lock:
            for key in keys:
                values = entries.get(key)
                if values is None:
                    missing[key] = None
                else:
                    entries.move_to_end(key)
                held.append(values)
        if not missing:
            return held  # type: ignore[return-value]  (none is None)
        wanted = list(missing)
        made = make(wanted)
        for values in made:
            values.flags.writeable = False
        self._keep(wanted, made)
        new = dict(zip(wanted, made, strict=True))
        return [new[k] if v is None else v for k, v in zip(keys, held, strict=True)]

    def _keep(self, keys: list[K], made: list[np.ndarray]) -> None:
        with self._lock:
            for key, values in zip(keys, made, strict=True):
                size = values.nbytes + self.ENTRY_OVERHEAD
                if key in self._entries or size > self.max_bytes:
                    continue
                self._entries[key] = values
                self.bytes += size
            while self.bytes > self.max_bytes:
                _, old = self._entries.popitem(last=False)
                self.bytes -= old.nbytes + self.ENTRY_OVERHEAD
