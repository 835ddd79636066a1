"""Generated numbers: the batch path draws exactly what numpy's default_rng draws, the memo
keeps them within its bound, and the lab's generated rows and projections keep their values."""

import threading
from hashlib import sha256

import numpy as np
import pytest

from app.math import attention as att
from app.math import seeded

EDGE_SEEDS = [0, 1, 2**16, 2**32 - 1, 2**32, 2**32 + 1, 2**63, 2**64 - 1]


def random_seeds(count: int, seed: int = 0) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(s) for s in rng.integers(0, 2**64, count, dtype=np.uint64)]


def reference_seed(seed: int, *labels: str) -> int:
    """The seed of a generated token row or projection, as the lab has always made it."""
    digest = sha256("\x1f".join([str(seed), *labels]).encode()).digest()
    return int.from_bytes(digest[:8], "little")


@pytest.mark.parametrize("seeds", [EDGE_SEEDS, random_seeds(2000)], ids=["edges", "random"])
def test_pcg64_states_are_numpys(seeds: list[int]) -> None:
    for seed, (state, inc) in zip(seeds, seeded.pcg64_states(seeds), strict=True):
        expected = np.random.PCG64(seed).state["state"]
        assert (state, inc) == (expected["state"], expected["inc"]), seed


@pytest.mark.parametrize("seeds", [EDGE_SEEDS, random_seeds(2000)], ids=["edges", "random"])
def test_one_seeds_pcg64_state_is_numpys(seeds: list[int]) -> None:
    for seed in seeds:
        expected = np.random.PCG64(seed).state["state"]
        assert seeded.pcg64_state(seed) == (expected["state"], expected["inc"]), seed


@pytest.mark.parametrize("count", [1, seeded.BATCH_MIN - 1, seeded.BATCH_MIN, 300])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5)])
def test_standard_normals_equal_default_rng(count: int, shape: tuple[int, ...]) -> None:
    seeds = (EDGE_SEEDS + random_seeds(count, seed=count))[:count]
    drawn = seeded.standard_normals(seeds, [shape] * count)
    for seed, values in zip(seeds, drawn, strict=True):
        np.testing.assert_array_equal(values, np.random.default_rng(seed).standard_normal(shape))


def test_standard_normals_in_threads_at_once_stay_exact() -> None:
    seeds = random_seeds(400, seed=9)
    expected = [np.random.default_rng(s).standard_normal(6) for s in seeds]
    results: dict[int, list[np.ndarray]] = {}

    def work(i: int) -> None:
        results[i] = [
            v for _ in range(5) for v in seeded.standard_normals(seeds, [(6,)] * len(seeds))
        ]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for drawn in results.values():
        for got, want in zip(drawn, expected * 5, strict=True):
            np.testing.assert_array_equal(got, want)


def test_memo_makes_only_what_it_lacks_once_each() -> None:
    memo = seeded.Memo(1 << 20)
    asked: list[list[str]] = []

    def make(keys: list[str]) -> list[np.ndarray]:
        asked.append(keys)
        return [np.full(2, float(ord(k))) for k in keys]

    first = memo.get_many(["a", "b", "a"], make)
    second = memo.get_many(["b", "c"], make)
    assert asked == [["a", "b"], ["c"]]
    assert [v[0] for v in first + second] == [97.0, 98.0, 97.0, 98.0, 99.0]
    assert not first[0].flags.writeable
    assert len(memo) == 3
    assert memo.bytes == 3 * (16 + seeded.Memo.ENTRY_OVERHEAD)


def test_memo_get_makes_one_key_once_and_shares_the_bound() -> None:
    memo = seeded.Memo(1 << 20)
    made: list[str] = []

    def make(key: str) -> np.ndarray:
        made.append(key)
        return np.full(3, float(ord(key)))

    first = memo.get("a", lambda: make("a"))
    again = memo.get("a", lambda: make("a"))
    [also] = memo.get_many(["a"], lambda keys: [make(k) for k in keys])
    assert made == ["a"]
    assert first is again is also
    assert not first.flags.writeable
    assert memo.bytes == 3 * 8 + seeded.Memo.ENTRY_OVERHEAD


def test_memo_drops_the_least_recently_used_beyond_its_bound() -> None:
    entry = 80 + seeded.Memo.ENTRY_OVERHEAD  # ten float64 numbers and the fixed overhead
    memo = seeded.Memo(3 * entry)

    def make(keys: list[int]) -> list[np.ndarray]:
        return [np.full(10, float(k)) for k in keys]

    memo.get_many([1, 2, 3], make)
    memo.get_many([1], make)  # 1 is now the most recent; 2 the least
    memo.get_many([4], make)
    assert memo.bytes == 3 * entry <= memo.max_bytes
    remade: list[int] = []
    memo.get_many([1, 2, 3, 4], lambda keys: remade.extend(keys) or make(keys))
    assert remade == [2]


def test_memo_does_not_keep_an_array_larger_than_its_bound() -> None:
    memo = seeded.Memo(1000)
    [big] = memo.get_many(["big"], lambda keys: [np.zeros(1000)])
    assert big.shape == (1000,)
    assert len(memo) == 0
    assert memo.bytes == 0


def test_generated_rows_keep_the_values_they_always_had() -> None:
    # Printed by the lab before generation was batched and kept (default_rng per token).
    np.testing.assert_array_equal(
        att.token_vectors(["The", "cat", "sleeps"], 4, seed=0),
        [[-0.3, 3.05, -0.52, -0.14], [1.7, 1.89, -1.06, -1.11], [0.27, -0.57, -1.09, 1.67]],
    )
    np.testing.assert_array_equal(
        att.random_projection(4, 4, seed=0, name="w_q"),
        [
            [0.59, -0.22, -0.57, 0.45],
            [0.65, 0.32, -0.26, 0.82],
            [0.71, -0.25, -0.45, -0.85],
            [0.77, -0.33, -0.75, 0.2],
        ],
    )


@pytest.mark.parametrize("n", [3, 40, 256])
def test_token_vectors_equal_one_default_rng_per_token(n: int) -> None:
    rng = np.random.default_rng(n)
    vocabulary = [f"w{i}" for i in range(n // 2 + 1)] + ["=1+1", "é", " "]
    tokens = [str(rng.choice(vocabulary)) for _ in range(n)]
    expected = np.round(
        [np.random.default_rng(reference_seed(5, "token", t)).standard_normal(16) for t in tokens],
        2,
    )
    for _ in range(2):  # drawn, then read back from the memo
        x = att.token_vectors(tokens, 16, seed=5)
        np.testing.assert_array_equal(x, expected)
        x[:] = 0.0  # the caller's copy: writing into it changes nothing kept


def test_random_projection_equals_its_default_rng_and_is_the_callers_to_change() -> None:
    rng = np.random.default_rng(reference_seed(3, "projection", "w_v", "6", "2"))
    expected = np.round(rng.standard_normal((6, 2)) / np.sqrt(6), 2)
    for _ in range(2):
        w = att.random_projection(6, 2, seed=3, name="w_v")
        np.testing.assert_array_equal(w, expected)
        w[0, 0] = 99.0
