"""The Jinja environment: templates from templates/, gettext-ready, and formatting filters.

Templates only format finished values; these filters are the formatting.
"""

import hashlib
from functools import lru_cache
from typing import Any

from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from app import STATIC_DIR, TEMPLATES_DIR
from app.figures import fmt
from app.nav import NAV
from app.responses import dumps
from app.routes.assets import PLOTLY_URL


def fmt_vector(values: Any, digits: int = 2) -> str:
    return "[" + ", ".join(fmt(v, digits) for v in values) + "]"


def fmt_int(value: Any) -> str:
    """An exact count with thousands separators: 16,777,216."""
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{float(value):,.0f}"


SI_PREFIXES = ("", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q")


def fmt_si(value: Any, unit: str = "") -> str:
    """A large count in powers of 1000, as FLOPs are counted: 8.59 G, 1.2 T (never 2¹⁰)."""
    number = float(value)
    power = 0
    while abs(number) >= 1000 and power + 1 < len(SI_PREFIXES):
        number /= 1000
        power += 1
    text = f"{number:.3g}" if power else f"{number:g}"
    return f"{text} {SI_PREFIXES[power]}{unit}".strip()


@lru_cache(maxsize=64)
def static_url(path: str) -> str:
    """A URL under /static with a content hash, so browsers may cache it for good."""
    digest = hashlib.sha256((STATIC_DIR / path).read_bytes()).hexdigest()[:10]
    return f"/static/{path}?v={digest}"


def json_data(value: Any) -> Markup:
    """JSON for a <script type="application/json"> data block, safe against </script>."""
    text = dumps(value).decode()
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


environment = Environment(
    loader=FileSystemLoader(TEMPLATES_DIR),
    autoescape=select_autoescape(default=True),
    extensions=["jinja2.ext.i18n"],
)
environment.install_null_translations(newstyle=True)  # type: ignore[attr-defined]
environment.filters.update(
    fmt=fmt, fmt_vector=fmt_vector, json_data=json_data, fmt_int=fmt_int, fmt_si=fmt_si
)
environment.globals.update(nav=NAV, plotly_url=PLOTLY_URL, static_url=static_url)
templates = Jinja2Templates(env=environment)
