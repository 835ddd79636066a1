"""Process tuning at start-up: the GIL switch interval and glibc's malloc settings."""

import ctypes
import sys
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.process import glibc, tune_process


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h): counts of the heap and of mapped blocks."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


@pytest.fixture(autouse=True)
def switch_interval_kept() -> Iterator[None]:
    """tune_process sets the interval for the whole process: the other tests get it back."""
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_the_app_sets_the_switch_interval_when_it_starts() -> None:
    with TestClient(create_app(Settings(freeze_gc=False, switch_interval_ms=0.75))):
        assert sys.getswitchinterval() == pytest.approx(0.00075)


@pytest.mark.skipif(glibc() is None, reason="mallopt is glibc's")
def test_blocks_over_the_threshold_are_mapped_even_after_a_larger_one_was_freed() -> None:
    """glibc alone would raise its threshold to 8 MB once an 8 MB block is freed, and take the
    next 4 MB block from the heap, where it stays when freed; with the setting it is mapped
    on its own (one more mapped block), so freeing it gives it back to the system."""
    libc = glibc()
    assert libc is not None
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = MallInfo2
    applied = tune_process(Settings(malloc_mmap_threshold_bytes=2**20, malloc_arena_max=2))
    assert applied == {"mmap_threshold": True, "arena_max": True}
    libc.free(libc.malloc(8 * 2**20))
    mapped = libc.mallinfo2().hblks
    block = libc.malloc(4 * 2**20)
    assert libc.mallinfo2().hblks == mapped + 1
    libc.free(block)
    assert libc.mallinfo2().hblks == mapped


def test_zero_leaves_glibc_as_it_is() -> None:
    applied = tune_process(Settings(malloc_mmap_threshold_bytes=0, malloc_arena_max=0))
    assert applied == {"mmap_threshold": False, "arena_max": False}
