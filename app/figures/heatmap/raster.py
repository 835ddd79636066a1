"""The cells of a heatmap as a PNG, one pixel per cell: what a page shows where the cells are
smaller than text (drawn scaled up, pixelated, with the labels and legend around it)."""

import base64
import struct
import zlib

import numpy as np

from app.figures.heatmap.model import Heatmap

SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(rgb: np.ndarray) -> bytes:
    """An (h, w, 3) uint8 array as an 8-bit RGB PNG (each row unfiltered; zlib does the
    rest). Written here, not through an imaging library, because a page may hold 72 small
    heatmaps and the library's fixed cost per image outweighs the pixels by far."""
    height, width, _ = rgb.shape
    rows = np.zeros((height, 1 + width * 3), dtype=np.uint8)  # filter byte 0: none
    rows[:, 1:] = rgb.reshape(height, width * 3)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + _chunk(b"IEND", b"")
    )


def png_bytes(heatmap: Heatmap, pixels_per_cell: int = 1) -> bytes:
    """The heatmap's cells as PNG bytes: pixel (x = column, y = row) has the cell's fill (the
    scale's colour, or the hidden grey); each cell a square of `pixels_per_cell` pixels."""
    rgb = heatmap.rgb
    if pixels_per_cell > 1:
        rgb = np.repeat(np.repeat(rgb, pixels_per_cell, axis=0), pixels_per_cell, axis=1)
    return encode_png(np.ascontiguousarray(rgb, dtype=np.uint8))


def png_data_uri(heatmap: Heatmap) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(heatmap)).decode("ascii")
