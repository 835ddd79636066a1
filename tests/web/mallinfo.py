"""glibc's heap counters, for the malloc tests (imported by a fresh process too: nothing
else here, so that it starts in a fraction of a second)."""

import ctypes


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h): counts of the heap and of mapped blocks."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip
