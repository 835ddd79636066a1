"""Translations: which language a request reads, its catalog, and gettext for every renderer.

The catalogs are the committed `translations/<locale>/LC_MESSAGES/*.po` files, one per feature
and one shared (translations/refresh.py); a language's are merged and compiled in memory on
first use (no .mo files, no build step, no download). The locale of the
request being served lives in a context variable, set by app/web/edge.py
for the length of one request: each request runs in its own task (and its threadpool call
copies that context), so two students reading in two languages at once never see each
other's words.

To refresh the catalogs after templates or Python strings change, run `make messages`, then
translate every empty msgstr in translations/es/LC_MESSAGES/ (tests/web/test_i18n.py fails
until none is left).
"""

import gettext as stdlib_gettext
import io
import math
from collections.abc import Iterable
from contextvars import ContextVar
from decimal import Decimal
from functools import lru_cache
from itertools import chain
from typing import Any

import numpy as np
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import get_decimal_symbol, get_group_symbol
from babel.support import Translations

from app import ROOT
from app.math.cost import binary_size

TRANSLATIONS_DIR = ROOT / "translations"
DEFAULT_LOCALE = "en"
# Every language the app speaks, named in itself (as the language switch shows it).
LOCALES: dict[str, str] = {"en": "English", "es": "Español"}

_locale: ContextVar[str] = ContextVar("locale", default=DEFAULT_LOCALE)


def catalog(locale: str) -> Catalog:
    """Every catalog of a locale (one per feature, one shared) merged into one."""
    merged = Catalog(locale=locale)
    for path in sorted((TRANSLATIONS_DIR / locale / "LC_MESSAGES").glob("*.po")):
        with path.open("rb") as po:
            for message in read_po(po, locale=locale):
                if message.id:
                    merged[message.id] = message
    return merged


@lru_cache(maxsize=len(LOCALES))
def translations(locale: str) -> stdlib_gettext.NullTranslations:
    """The compiled catalog of a locale; English is the source language and needs none."""
    if locale == DEFAULT_LOCALE:
        return stdlib_gettext.NullTranslations()
    mo = io.BytesIO()
    write_mo(mo, catalog(locale), use_fuzzy=False)
    mo.seek(0)
    return Translations(mo)


def accepted_locales(header: str) -> list[str]:
    """The languages of an Accept-Language header, most wanted first ("es-MX;q=0.9" → "es")."""
    if not header:
        return []
    ranked: list[tuple[float, int, str]] = []
    for position, item in enumerate(header.split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            ranked.append((-quality, position, tag.split("-")[0].lower()))
    return [tag for _, _, tag in sorted(ranked)]


def negotiate(lang: str | None, accept_language: str | None) -> str:
    """A `lang` URL parameter wins; then the browser's preferences; then English."""
    if lang in LOCALES:
        return lang
    for tag in accepted_locales(accept_language or ""):
        if tag in LOCALES:
            return tag
    return DEFAULT_LOCALE


def current_locale() -> str:
    return _locale.get()


class LocaleBlock:
    """`with` block rendering in one locale: the locale set on entry, the one before back on
    exit (a class, not a generator: it runs around every request)."""

    __slots__ = ("_token", "locale")

    def __init__(self, locale: str) -> None:
        self.locale = locale

    def __enter__(self) -> None:
        self._token = _locale.set(self.locale)

    def __exit__(self, *exc_info: object) -> None:
        _locale.reset(self._token)


def use_locale(locale: str) -> LocaleBlock:
    """Render in `locale` for the length of the block (the middleware's one job)."""
    return LocaleBlock(locale)


def gettext(message: str) -> str:
    return translations(_locale.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(_locale.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 (gettext's conventional name)
    """Mark a string for extraction where it is defined; it is translated where it is shown."""
    return message


@lru_cache(maxsize=len(LOCALES))
def _symbols(locale: str) -> tuple[str, str]:
    """(decimal mark, group mark) of a locale, from CLDR through babel: (".", ",") in English,
    (",", ".") in Spanish."""
    return get_decimal_symbol(locale), get_group_symbol(locale)


@lru_cache(maxsize=len(LOCALES))
def _marks(locale: str) -> dict[int, str] | None:
    """The table that turns Python's "1,234.5" into the locale's marks (None: already so)."""
    decimal, group = _symbols(locale)
    return None if (decimal, group) == (".", ",") else str.maketrans({".": decimal, ",": group})


def format_number(
    value: float | None,
    digits: int | None = None,
    *,
    trim: bool = False,
    signed: bool = False,
    scientific: bool = False,
) -> str:
    """Every number a page shows, in the reader's convention: 16,777,216 and 0.707 in English,
    16.777.216 and 0,707 in Spanish. `digits` fixes the decimals (the tables' 3); without it
    an integer is written whole and a float with at most 3 decimals; `trim` drops trailing
    zeros (32 MiB, 1.5 GiB); `signed` writes + before a positive number; `scientific` writes
    1.2e-07. A negative number gets a true minus sign and −0.000 reads 0.000; None (a hidden
    score) is −∞. Machine-readable text (URLs, forms, JSON, CSV) never comes
    from here: app/core/formatting.py writes that.

    Floats are rounded as Python rounds them; past 2⁵³, and for integers, the digits are
    exact (10³⁰ FLOPs keeps all 31). Many numbers at once: format_numbers."""
    text = _unmarked(value, digits, trim=trim, signed=signed, scientific=scientific)
    marks = _marks(_locale.get())
    return text if marks is None else text.translate(marks)


def _unmarked(value: Any, digits: int | None, *, trim: bool, signed: bool, scientific: bool) -> str:
    """format_number in Python's marks ("1,234.5"). The tables' numbers go the short way: a
    Python float below 2⁵³ with fixed decimals and no other option."""
    if digits is not None and not (trim or signed or scientific) and _short(value):
        return _fixed(value, f",.{digits}f")
    return _general(value, digits, trim=trim, signed=signed, scientific=scientific)


def _short(value: Any) -> bool:
    """Whether a value takes the short way: a Python float below 2⁵³ (NaN and ±∞ fail)."""
    return type(value) is float and -(2**53) < value < 2**53


def _fixed(value: float, spec: str) -> str:
    """A finite float with Python's grouping and decimals; a true minus sign, and none on a
    number that reads 0 (−0.000 is 0.000)."""
    text = format(value, spec)
    if text[0] == "-":
        return "−" + text[1:] if text.strip("-0.,") else text[1:]
    return text


def _general(value: Any, digits: int | None, *, trim: bool, signed: bool, scientific: bool) -> str:
    """format_number in Python's marks, the long way: every value and option."""
    if value is None:
        return "−∞"
    if hasattr(value, "item"):  # a numpy scalar: its Python int or float
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "—")
    if digits is None:
        digits, trim = (0, False) if isinstance(value, int) else (3, True)
    magnitude = abs(value)
    if scientific:
        text = f"{magnitude:.{digits}e}"
    elif isinstance(value, int) or magnitude >= 2**53:
        text = format(
            Decimal(magnitude if isinstance(value, int) else repr(magnitude)), f",.{digits}f"
        )
    else:
        text = f"{magnitude:,.{digits}f}"
    if trim and digits:
        text = text.rstrip("0").rstrip(".")
    if text.strip("0.,").partition("e")[0] != "" and (value < 0 or signed):
        text = ("−" if value < 0 else "+") + text
    return text


def format_numbers(values: Iterable[float | None], digits: int = 3) -> list[str]:
    """format_number(v, digits) of every value, in one pass: a page's thousand numbers cost a
    fraction of a microsecond each, and the locale's marks are put in once for all of them."""
    values = values.ravel().tolist() if isinstance(values, np.ndarray) else list(values)
    if not values:
        return []
    text = _lines(values, digits)
    marks = _marks(_locale.get())
    return (text if marks is None else text.translate(marks)).split("\n")[1:]


def _lines(values: list[Any], digits: int) -> str:
    """The values as format_number writes them, in Python's marks, each after a newline. A
    run of finite floats below 2⁵³ (a table's numbers, as a rule) is written by one call of
    str.format, its minus signs made true ones and its negative zeros plain zeros after."""
    spec = f",.{digits}f"
    if not all(map(_short, values)):
        return "".join(
            "\n" + _unmarked(v, digits, trim=False, signed=False, scientific=False) for v in values
        )
    text = (("\n{:" + spec + "}") * len(values)).format(*values) + "\n"
    if "-" in text:
        zero = f"\n{0.0:{spec}}\n"
        text = text.replace("-", "−")
        negative_zero = zero.replace("\n", "\n−", 1)
        # twice: a replacement takes the newline after it, so of two negative zeros in a row
        # the first pass finds only the first
        text = text.replace(negative_zero, zero).replace(negative_zero, zero)
    return text[:-1]


def format_rows(matrix: Any, digits: int = 3) -> list[list[str]]:
    """format_numbers of every row of a matrix (a numpy array, or rows of numbers and None)."""
    rows = matrix.tolist() if isinstance(matrix, np.ndarray) else [list(r) for r in matrix]
    texts = format_numbers(list(chain.from_iterable(rows)), digits)
    out, start = [], 0
    for row in rows:
        out.append(texts[start : start + len(row)])
        start += len(row)
    return out


def format_vector(values: Iterable[float | None], digits: int = 2) -> str:
    """A vector as the tables print it, [1.00, −0.50]; where the decimal mark is a comma the
    numbers are separated by semicolons, [1,00; −0,50]."""
    return format_vectors([list(values)], digits)[0]


def format_vectors(matrix: Any, digits: int = 2) -> list[str]:
    """format_vector of every row of a matrix, in one pass."""
    separator = "; " if _symbols(_locale.get())[0] == "," else ", "
    return ["[" + separator.join(row) + "]" for row in format_rows(matrix, digits)]


def format_size(n_bytes: int) -> str:
    """A byte count in the largest binary unit that keeps it ≥ 1, with at most two decimals:
    32 MiB, 1.5 GiB, 767.63 MiB (767,63 MiB in Spanish)."""
    size = binary_size(n_bytes)
    return f"{format_number(size.rounded, 2, trim=True)} {size.unit}"


def plotly_separators() -> str:
    """plotly's layout.separators for the reader's locale: the decimal mark, then the group
    mark, so that axis ticks and hover numbers drawn by plotly read as the page's do."""
    decimal, group = _symbols(_locale.get())
    return decimal + group
