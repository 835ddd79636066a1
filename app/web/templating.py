"""The Jinja environment: templates from templates/, translated, and formatting filters.

Templates only format finished values; these filters are the formatting. `_()` in a template
translates into the request's language (app/core/i18n.py); every page also gets `classroom`, the
language, presenter, embed and lesson state of its URL (app/web/classroom.py).
"""

import math
from itertools import chain
from numbers import Number
from typing import Any

import numpy as np
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, FileSystemLoader, pass_context, select_autoescape
from jinja2.runtime import Context
from markupsafe import Markup, escape

from app import TEMPLATES_DIR
from app.core import i18n, limits
from app.figures.heatmap import Heatmap, HeatmapGroup
from app.figures.heatmap import render as render_figure
from app.web.classroom import VIEW_PARAMS, classroom_context, hidden, presenting, url
from app.web.nav import NAV
from app.web.responses import dumps


def cells(matrix: Any, digits: int = 3) -> list[Markup]:
    """A table's rows as the matrix_table macro prints them: each row's numbers formatted in
    one pass and written as its run of <td> cells, a hidden entry (None) as −∞ in a cell of
    class hidden-cell. One string per row instead of a loop, a test and an escape per cell
    in the template (a lab page prints some 400 of them); the numbers are escaped all at once."""
    if isinstance(matrix, np.ndarray) and matrix.dtype.kind in "biuf":
        rows = matrix.astype(float).tolist()
    else:
        rows = [list(row) for row in matrix]  # numbers, and None where hidden
    texts = str(escape("\n".join(chain.from_iterable(i18n.format_rows(rows, digits))))).split("\n")
    out, start = [], 0
    for row in rows:
        shown = texts[start : start + len(row)]
        start += len(row)
        out.append(
            Markup(
                "".join(
                    f'<td class="hidden-cell">{text}</td>' if value is None else f"<td>{text}</td>"
                    for text, value in zip(shown, row, strict=True)
                )
            )
        )
    return out


def field_rows(
    name: str, label: str, rows: list[tuple[str, list[str]]], cols: list[str]
) -> list[Markup]:
    """An editable matrix's rows as the lab's editor prints them: per row, its run of number
    fields (`name`, id name-row-column), each labelled "label row, column" for a screen
    reader. One string per row, as `cells` makes for numbers: a 16-token lab has a hundred
    fields of five escaped attributes each."""
    name, label = str(escape(name)), str(escape(label))
    heads = [str(escape(c)) for c in cols]
    out = []
    for i, (row_label, values) in enumerate(rows):
        row_label = str(escape(row_label))
        out.append(
            Markup(
                "".join(
                    f'<td><input class="cell" id="{name}-{i}-{j}" name="{name}" '
                    f'value="{escape(value)}" inputmode="decimal" size="5" autocomplete="off" '
                    f'aria-label="{label} {row_label}, {heads[j]}"></td>'
                    for j, value in enumerate(values)
                )
            )
        )
    return out


def pattern_rows(pattern: list[list[bool]], tokens: list[str], label: str) -> list[Markup]:
    """A mask pattern's rows as the lab's editor prints them: per query, its run of checkboxes
    (`cell=q.k`, ticked where the query may see the key), each labelled for a screen reader
    by `label`, the translated "%(q)s sees %(k)s". One string per row: a 16-token pattern
    has 256 boxes."""
    names = [str(escape(t)) for t in tokens]
    label = str(escape(label))
    return [
        Markup(
            "".join(
                f'<td><input type="checkbox" class="pattern-cell" name="cell" value="{q}.{k}" '
                f'data-row="{q}" aria-label="{label % {"q": names[q], "k": names[k]}}"'
                f"{' checked' if seen else ''}></td>"
                for k, seen in enumerate(row)
            )
        )
        for q, row in enumerate(pattern)
    ]


def fmt(value: Any, digits: int = 3) -> str:
    """A number as the tables print it: three decimals by default, in the reader's
    convention (app.core.i18n.format_number); −∞ for hidden scores, − for negatives."""
    return i18n.format_number(None if value is None else float(value), digits)


def fmt_int(value: Any) -> str:
    """An exact count grouped as the reader's language groups it: 16,777,216 in English,
    16.777.216 in Spanish."""
    if value is None:
        return "—"
    return i18n.format_number(value if isinstance(value, int) else float(value), 0)


SI_PREFIXES = ("", "k", "M", "G", "T", "P", "E", "Z", "Y", "R", "Q")


def fmt_si(value: Any, unit: str = "") -> str:
    """A large count in powers of 1000, as FLOPs are counted, to three significant digits:
    8.59 G, 1.2 T (never 2¹⁰); 8,59 G in Spanish."""
    number = float(value)
    power = 0
    while abs(number) >= 1000 and power + 1 < len(SI_PREFIXES):
        number /= 1000
        power += 1
    if not power:
        return f"{i18n.format_number(number)} {unit}".strip()
    digits = max(0, 2 - math.floor(math.log10(abs(number)))) if number else 0
    text = i18n.format_number(number, digits, trim=True)
    return f"{text} {SI_PREFIXES[power]}{unit}".strip()


def heatmap(figure: Heatmap | HeatmapGroup) -> Markup:
    """`{{ heatmap(view.weights_map) }}`: a heatmap or a group of them, drawn by the server
    for the request's presenter mode (app/figures/heatmap), from any template or macro."""
    return render_figure(figure, present=presenting.get())


@pass_context
def static_url(context: Context, name: str) -> str:
    """A static file's address, named after its content, so browsers may keep it for good
    (app/web/static.py); the libraries by their names there (plotly.min.js)."""
    return context["request"].app.state.static.url(name)


@pass_context
def address(context: Context, path: str) -> str:
    """A local path as an address to copy elsewhere: PUBLIC_URL + path when the setting is
    made, else the path itself, which static/js/classroom.js completes with the address the
    browser shows (on the element marked `data-fill-origin="{{ path }}"`). Never the Host
    header: a request cannot choose where a teacher's embed code points."""
    public_url = context["request"].app.state.settings.public_url
    return public_url.rstrip("/") + path if public_url else path


def json_data(value: Any) -> Markup:
    """JSON for a <script type="application/json"> data block, safe against </script>."""
    text = dumps(value).decode()
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


DICT_ATTRIBUTES = frozenset(dir(dict))


class PageEnvironment(Environment):
    """Jinja, with `view.stages` read from a dict without a failed attribute lookup first.

    The view models are plain dicts, and Jinja's `x.name` tries getattr(x, "name") before
    x["name"]: a raised and caught AttributeError for every dotted name a page prints (a few
    thousand on /model). A name that is not an attribute of dict would fail that lookup
    anyway, so reading the key first finds the same value, or the same undefined."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


environment = PageEnvironment(
    loader=FileSystemLoader(TEMPLATES_DIR),
    autoescape=select_autoescape(default=True),
    extensions=["jinja2.ext.i18n"],
)
environment.install_gettext_callables(  # type: ignore[attr-defined]
    i18n.gettext, i18n.ngettext, newstyle=True
)


def page_gettext(message: str, /, **variables: Any) -> Markup:
    """`_()` and `gettext()` in a template, as Jinja's new-style gettext does it in an
    autoescaped page: the translation, always formatted (so that "%%" reads "%") with its
    variables escaped. Called directly rather than through two context calls and a lookup,
    with the variables escaped once each: a page calls it hundreds of times."""
    return Markup(i18n.gettext(message) % _escaped(variables))


def page_ngettext(singular: str, plural: str, n: int, /, **variables: Any) -> Markup:
    """`ngettext()` in a template, the same way; `num` is n unless given."""
    variables.setdefault("num", n)
    return Markup(i18n.ngettext(singular, plural, n) % _escaped(variables))


def _escaped(variables: dict[str, Any]) -> dict[str, Any]:
    """Text escaped for HTML; numbers left as numbers, for %(n)d (no number's text needs
    escaping)."""
    return {k: v if isinstance(v, Number) else escape(v) for k, v in variables.items()}


environment.globals.update(_=page_gettext, gettext=page_gettext, ngettext=page_ngettext)
environment.filters.update(
    fmt=fmt,
    cells=cells,
    field_rows=field_rows,
    pattern_rows=pattern_rows,
    fmt_vector=i18n.format_vector,
    fmt_vectors=i18n.format_vectors,
    json_data=json_data,
    fmt_int=fmt_int,
    fmt_si=fmt_si,
    number=i18n.format_number,
    size=i18n.format_size,
)
environment.globals.update(
    nav=NAV,
    static_url=static_url,
    locales=i18n.LOCALES,
    url=url,
    hidden=hidden,
    limits=limits,
    address=address,
    heatmap=heatmap,
    view_params=" ".join(VIEW_PARAMS),
)
templates = Jinja2Templates(env=environment, context_processors=[classroom_context])
