"""Colour scales of the heatmaps: which colour a value gets, computed here and nowhere else
(the SVG cells, the PNG pixels and the colour bar all come from `Scale.rgb`).

Colour-blind-safe scales only: viridis for weights, always on [0, 1] so that a colour means
the same weight in every figure; ColorBrewer's RdBu for signed values, symmetric about 0 so
that its white middle is 0; viridis over a stated range for other magnitudes (entropy).
Hidden cells take a flat grey that neither scale contains, named in the legend. A heatmap of
states rather than values (the tiled kernel's progress: not computed, computed, held now) has
a categorical scale: one flat colour per state, each named in the legend.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from app.core.i18n import N_, format_number, gettext

# Viridis at ten evenly spaced stops, interpolated linearly in sRGB (as plotly.js draws it,
# so a weight keeps the colour it had in the plotly figures).
VIRIDIS = (
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e",
    "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
)  # fmt: skip
# ColorBrewer's RdBu, red for negative through near-white at 0 to blue for positive (plotly's
# own "RdBu" has a grey middle, which would read as "hidden").
DIVERGING = (
    "#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7",
    "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061",
)  # fmt: skip
# Hidden cells: a neutral mid grey that no value can take (viridis has no grey, the diverging
# scale's middle is near white).
HIDDEN_COLOUR = "#8a8a8a"
HIDDEN_LEGEND = N_("hidden (%(value)s)")

ScaleKind = Literal["weights", "signed", "sequential", "categorical"]


def hex_to_rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


@lru_cache(maxsize=4)
def _stop_rgb(stops: tuple[str, ...]) -> np.ndarray:
    return np.array([hex_to_rgb(c) for c in stops], dtype=float)


def rgb_to_hex(rgb: np.ndarray) -> list[str]:
    """ "#rrggbb" of every row of an (…, 3) uint8 array, flattened."""
    digits = np.ascontiguousarray(rgb, dtype=np.uint8).tobytes().hex()
    return ["#" + digits[k : k + 6] for k in range(0, len(digits), 6)]


@dataclass(frozen=True)
class Scale:
    """A value → colour map over [low, high]: values outside are clamped to the ends.

    Build one with `weights_scale`, `signed_scale`, `sequential_scale` or
    `categorical_scale`; `label` names the quantity on the colour bar ("weight", "score"),
    already translated. A categorical scale's `states` are (colour, name) of the values
    0, 1, 2 …"""

    kind: ScaleKind
    low: float
    high: float
    label: str
    states: tuple[tuple[str, str], ...] = ()

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"

    @property
    def stops(self) -> tuple[str, ...]:
        if self.categorical:
            return tuple(colour for colour, _ in self.states)
        return DIVERGING if self.kind == "signed" else VIRIDIS

    def rgb(self, values: ArrayLike) -> np.ndarray:
        """The colour of every value as (…, 3) uint8 sRGB: the one place a value becomes a
        colour. Non-finite values get the low end (hidden cells are drawn over, never so)."""
        z = np.asarray(values, dtype=float)
        stops = _stop_rgb(self.stops)  # (s, 3)
        if self.categorical:  # state k: its own colour, never a blend
            state = np.clip(np.rint(np.where(np.isnan(z), 0.0, z)), 0, len(stops) - 1)
            return stops[state.astype(int)].astype(np.uint8)
        # linear between the stops, evenly spaced on [0, 1] (as np.interp would, in one pass
        # for the three channels: a page draws a hundred small heatmaps)
        z = np.where(np.isnan(z), self.low, z)
        t = np.clip((z - self.low) / (self.high - self.low), 0.0, 1.0) * (len(stops) - 1)
        at = np.minimum(t.astype(int), len(stops) - 2)
        part = (t - at)[..., None]
        low = stops[at]
        return np.rint(low + (stops[at + 1] - low) * part).astype(np.uint8)

    def colour(self, value: float) -> str:
        """ "#rrggbb" of one value."""
        return rgb_to_hex(self.rgb(value))[0]

    def ticks(self) -> list[float]:
        """Where the colour bar is labelled: both ends, the middle (0 on a signed scale) and
        the quarters."""
        return [self.low + (self.high - self.low) * k / 4 for k in range(5)]

    def tick_texts(self) -> list[str]:
        """The ticks as the colour bar writes them, in the reader's convention (0,25 in
        Spanish): at most three decimals, trailing zeros dropped."""
        return [format_number(t, 3, trim=True) for t in self.ticks()]


def weights_scale(label: str | None = None) -> Scale:
    """Attention weights: viridis on the fixed range [0, 1], whatever the data, so that 0.5
    is the same colour in every figure."""
    return Scale("weights", 0.0, 1.0, gettext("weight") if label is None else label)


def signed_scale(*values: ArrayLike, label: str | None = None) -> Scale:
    """Signed values (scores, projections): RdBu on [−m, m], m the largest |value| of all the
    arrays given (one figure, or every panel of a group) rounded up to a nice number, so that 0
    is the white middle. Non-finite entries (−∞ where hidden) are left out; give hidden
    entries as −∞ or NaN so that they do not stretch the scale."""
    reach = max((_largest_magnitude(v) for v in values), default=0.0)
    limit = nice_limit(reach)
    return Scale("signed", -limit, limit, gettext("score") if label is None else label)


def sequential_scale(low: float, high: float, label: str) -> Scale:
    """A magnitude on a stated range (entropy from 0 to log₂ n bits, say): viridis from low
    to high."""
    if not high > low:
        raise ValueError(f"a sequential scale needs low < high, not {low} … {high}")
    return Scale("sequential", float(low), float(high), label)


def categorical_scale(states: Sequence[tuple[str, str]], label: str) -> Scale:
    """States, not values: value k is drawn in states[k]'s colour (a flat colour, no blend)
    and named by its name in the legend; `states` are (colour, name), names translated."""
    if len(states) < 2:
        raise ValueError("a categorical scale needs at least two states")
    return Scale("categorical", 0.0, float(len(states) - 1), label, tuple(states))


def nice_limit(reach: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10ᵏ that is at least `reach` (1 for nothing to show):
    a colour bar labelled −2.5 … 2.5 rather than −2.137 … 2.137."""
    if not reach > 0 or not math.isfinite(reach):
        return 1.0
    power = 10.0 ** math.floor(math.log10(reach))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        if step * power >= reach * (1 - 1e-12):
            return step * power
    return 10.0 * power  # unreachable: 10 × 10ᵏ ≥ reach by the choice of k


def _largest_magnitude(values: ArrayLike) -> float:
    z = np.abs(np.asarray(values, dtype=float))
    finite = z[np.isfinite(z)]
    return float(finite.max()) if finite.size else 0.0


def text_colours(rgb: np.ndarray) -> np.ndarray:
    """Black or white, whichever stands out more (WCAG contrast) on each fill: the colour of
    a cell's number, fixed like the fill itself. Returns a bool array, True = white."""
    linear = np.asarray(rgb, dtype=float) / 255.0
    linear = np.where(linear <= 0.04045, linear / 12.92, ((linear + 0.055) / 1.055) ** 2.4)
    luminance = linear @ np.array([0.2126, 0.7152, 0.0722])
    # contrast with white (1.05 / (L + 0.05)) beats contrast with black ((L + 0.05) / 0.05)
    return (luminance + 0.05) ** 2 < 1.05 * 0.05
