"""The cells of a heatmap as a PNG, one pixel per cell: what a page shows where the cells are
smaller than text (drawn scaled up, pixelated, with the labels and legend around it)."""

import base64
import io

import numpy as np
from PIL import Image

from app.figures.heatmap.model import Heatmap


def png_bytes(heatmap: Heatmap, pixels_per_cell: int = 1) -> bytes:
    """The heatmap's cells as PNG bytes: pixel (x = column, y = row) has the cell's fill (the
    scale's colour, or the hidden grey); each cell a square of `pixels_per_cell` pixels."""
    rgb = heatmap.rgb
    if pixels_per_cell > 1:
        rgb = np.repeat(np.repeat(rgb, pixels_per_cell, axis=0), pixels_per_cell, axis=1)
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb)).save(out, format="PNG")
    return out.getvalue()


def png_data_uri(heatmap: Heatmap) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(heatmap)).decode("ascii")
