"""The template environment's shortcuts write exactly what Jinja's own ways write."""

from dataclasses import dataclass

import jinja2.ext
import numpy as np
import pytest
from jinja2 import Environment, StrictUndefined, UndefinedError
from markupsafe import Markup

from app.core.i18n import format_number, format_rows, gettext, ngettext, use_locale
from app.web.templating import PageEnvironment, cells, environment

CASES = [
    # (template, variables): translated, formatted, escaped as the page prints them
    ('{{ _("Query") }}', {}),
    ('{{ _("Queries that see no key at all:") }} {{ _("100%% of it") }}', {}),
    ('{{ _("%(q)s sees %(k)s", q=a, k=b) }}', {"a": "<b>cat</b>", "b": Markup("<i>x</i>")}),
    ('{{ _("Step %(number)d of %(total)d: %(label)s", number=n, total=t, label=a) }}',
     {"n": np.int64(2), "t": 7, "a": "Q & K"}),
    ('{{ ngettext("%(num)s head", "%(num)s heads", n) }}', {"n": 1}),
    ('{{ ngettext("%(num)s head", "%(num)s heads", n) }}', {"n": 12}),
    ('{{ ngettext("K cache (%(num)s row)", "K cache (%(num)s rows)", n, num="<3>") }}',
     {"n": 3}),
]  # fmt: skip


def jinja_own() -> Environment:
    """Jinja's new-style gettext, installed as Jinja installs it, as the reference."""
    env = Environment(autoescape=True, extensions=[jinja2.ext.i18n])
    env.install_gettext_callables(gettext, ngettext, newstyle=True)  # type: ignore[attr-defined]
    return env


@pytest.mark.parametrize("locale", ["en", "es"])
@pytest.mark.parametrize(("source", "variables"), CASES)
def test_template_gettext_writes_what_jinjas_own_writes(locale, source, variables) -> None:
    with use_locale(locale):
        ours = environment.from_string(source).render(**variables)
        assert ours == jinja_own().from_string(source).render(**variables)
    assert "<b>" not in ours  # variables are escaped
    assert "<3>" not in ours


@dataclass
class Row:
    label: str


@pytest.mark.parametrize(
    "source",
    [
        "{{ d.label }} {{ d['label'] }} {{ r.label }}",
        "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",  # a dict's own method
        "{{ d.keys() | list }} {{ d.get('label') }} {{ d.missing is defined }}",
        "{{ d.nested.label }} {{ d.items is callable }}",
    ],
)
def test_dict_keys_read_first_find_what_jinja_finds(source) -> None:
    values = {"d": {"label": "a", "nested": {"label": "b"}, "items": "shadowed"}, "r": Row("c")}
    ours = PageEnvironment(autoescape=True).from_string(source).render(**values)
    assert ours == Environment(autoescape=True).from_string(source).render(**values)


def test_a_missing_key_is_undefined_as_before() -> None:
    strict = PageEnvironment(undefined=StrictUndefined).from_string("{{ d.nope }}")
    with pytest.raises(UndefinedError, match="has no attribute 'nope'"):
        strict.render(d={})


def test_table_cells_are_formatted_once_with_hidden_ones_marked() -> None:
    rows = [[0.5, None], [-0.0004, 1234.5678]]
    with use_locale("es"):
        assert cells(rows) == [
            f'<td>{format_number(0.5, 3)}</td><td class="hidden-cell">−∞</td>',
            "<td>0,000</td><td>1.234,568</td>",
        ]
        assert cells(np.array([[1, -2]]), 1) == ["<td>1,0</td><td>−2,0</td>"]
        assert cells(np.array([[None, 2.5]], dtype=object), 1) == [
            '<td class="hidden-cell">−∞</td><td>2,5</td>'
        ]
    assert all(isinstance(row, Markup) for row in cells(rows))


def test_table_cells_print_as_the_per_cell_loop_did() -> None:
    """The rows `cells` writes are the markup the matrix_table macro wrote cell by cell."""
    loop = PageEnvironment(autoescape=True).from_string(
        "{% for row in rows %}{% for text, hidden in row %}<td"
        '{% if hidden %} class="hidden-cell"{% endif %}>{{ text }}</td>{% endfor %}|{% endfor %}'
    )
    matrix = [[0.5, None, -1e-9], [float("nan"), 12345.678, -0.0]]
    texts = format_rows(matrix)
    rows = [
        [(t, v is None) for t, v in zip(tr, r, strict=True)]
        for tr, r in zip(texts, matrix, strict=True)
    ]
    assert "".join(row + "|" for row in cells(matrix)) == loop.render(rows=rows)
