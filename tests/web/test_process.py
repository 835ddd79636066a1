"""Process tuning at start-up: the GIL switch interval and glibc's malloc settings."""

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web import process
from app.web.process import glibc, tune_process

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def switch_interval_kept() -> Iterator[None]:
    """tune_process sets the interval for the whole process: the other tests get it back."""
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_the_app_sets_the_switch_interval_when_it_starts() -> None:
    with TestClient(create_app(Settings(freeze_gc=False, switch_interval_ms=0.75))):
        assert sys.getswitchinterval() == pytest.approx(0.00075)


# Run in a fresh process: in a heap that earlier tests have used, a free block of 4 MB may
# already be there for malloc to hand out, mapped or not.
MAPPED_AFTER_A_LARGER_FREE = """
import ctypes, sys
from app.settings import Settings
from app.web.process import glibc, tune_process
from tests.web.mallinfo import MallInfo2  # not test_process: its imports take seconds
libc = glibc()
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
print(tune_process(Settings(malloc_mmap_threshold_bytes=int(sys.argv[1]), malloc_arena_max=2)))
libc.free(libc.malloc(8 * 2**20))
mapped = libc.mallinfo2().hblks
block = libc.malloc(4 * 2**20)
print(libc.mallinfo2().hblks - mapped)
"""


@pytest.mark.skipif(glibc() is None, reason="mallopt is glibc's")
@pytest.mark.parametrize(("threshold", "mapped"), [(2**20, 1), (0, 0)])
def test_a_fixed_threshold_maps_blocks_even_after_a_larger_one_was_freed(
    threshold: int, mapped: int
) -> None:
    """glibc alone raises its threshold to 8 MB once an 8 MB block is freed, and takes the
    next 4 MB block from the heap, where it stays when freed; with a fixed 1 MB threshold
    it is mapped on its own (one more mapped block), so freeing it gives it back."""
    done = subprocess.run(
        [sys.executable, "-c", MAPPED_AFTER_A_LARGER_FREE, str(threshold)],
        capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    applied, more_mapped = done.stdout.splitlines()
    assert applied == str({"mmap_threshold": bool(threshold), "arena_max": True})
    assert int(more_mapped) == mapped


def test_zero_leaves_glibc_as_it_is() -> None:
    applied = tune_process(Settings(malloc_mmap_threshold_bytes=0, malloc_arena_max=0))
    assert applied == {"mmap_threshold": False, "arena_max": False}


class FakeLibc:
    """Stands in for glibc: mallopt accepted, malloc_trim counted."""

    def __init__(self) -> None:
        self.trims = 0
        self.trimmed = threading.Event()

    def mallopt(self, param: int, value: int) -> int:
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.trims += 1
        self.trimmed.set()
        return 1


def test_free_memory_goes_back_once_the_heavy_work_has_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    libc = FakeLibc()
    monkeypatch.setattr(process, "glibc", lambda: libc)
    monkeypatch.setattr(process.IdleTrim, "timer", None)
    monkeypatch.setattr(process.IdleTrim, "seconds", 0.0)  # tune_process sets it; then back
    settings = Settings(freeze_gc=False, response_cache_bytes=0, malloc_trim_idle_seconds=0.2)
    with TestClient(create_app(settings)) as client:
        body = {"tokens": [f"t{i}" for i in range(64)], "d_model": 16}  # computed in the thread
        for _ in range(3):
            assert client.post("/api/attention", json=body).status_code == 200
        assert libc.trims == 0  # not between pieces of work
        assert libc.trimmed.wait(5)
        assert not client.portal.call(asyncio.sleep, 0.3)  # a further wait: no second trim
    assert libc.trims == 1
