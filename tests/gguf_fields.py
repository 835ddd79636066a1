"""The key–value fields of a GGUF file, read by a few lines of struct (the format's header:
magic, version, tensor count, field count, then each field as a key, a type and a value), for
the tokenizer tests: gguf's own reader parses every field into numpy views, seconds for the
98,000 strings of a vocabulary and its merges."""

import mmap
import struct
from pathlib import Path
from typing import Any

SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
STRING, ARRAY = 8, 9


def read_fields(path: Path) -> dict[str, Any]:
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        magic, _version, _tensors, count = struct.unpack_from("<4sIQQ", m, 0)
        assert magic == b"GGUF"
        at = 24

        def string() -> str:
            nonlocal at
            (length,) = struct.unpack_from("<Q", m, at)
            at += 8 + length
            return m[at - length : at].decode("utf-8")

        def value(kind: int) -> Any:
            nonlocal at
            if kind == STRING:
                return string()
            if kind == ARRAY:
                item, n = struct.unpack_from("<IQ", m, at)
                at += 12
                return [value(item) for _ in range(n)]
            (v,) = struct.unpack_from("<" + SCALARS[kind], m, at)
            at += struct.calcsize(SCALARS[kind])
            return v

        fields = {}
        for _ in range(count):
            key = string()
            (kind,) = struct.unpack_from("<I", m, at)
            at += 4
            fields[key] = value(kind)
        return fields
