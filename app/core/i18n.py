"""Translations: which language a request reads, its catalog, and gettext for every renderer.

The catalogs are the committed `translations/<locale>/LC_MESSAGES/messages.po` files; they are
compiled in memory on first use (no .mo files, no build step, no download). The locale of the
request being served lives in a context variable, set by app.classroom.ClassroomMiddleware
for the length of one request: each request runs in its own task (and its threadpool call
copies that context), so two students reading in two languages at once never see each
other's words.

To refresh the catalogs after templates or Python strings change, run `make messages`, then
translate every empty msgstr in translations/es/LC_MESSAGES/messages.po (tests/web/test_i18n.py
fails until none is left).
"""

import decimal
import gettext as stdlib_gettext
import io
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from babel.support import Translations

from app import ROOT

TRANSLATIONS_DIR = ROOT / "translations"
DEFAULT_LOCALE = "en"
# Every language the app speaks, named in itself (as the language switch shows it).
LOCALES: dict[str, str] = {"en": "English", "es": "Español"}

_locale: ContextVar[str] = ContextVar("locale", default=DEFAULT_LOCALE)


def catalog_path(locale: str) -> Any:
    return TRANSLATIONS_DIR / locale / "LC_MESSAGES" / "messages.po"


@lru_cache(maxsize=len(LOCALES))
def translations(locale: str) -> stdlib_gettext.NullTranslations:
    """The compiled catalog of a locale; English is the source language and needs none."""
    if locale == DEFAULT_LOCALE:
        return stdlib_gettext.NullTranslations()
    with catalog_path(locale).open("rb") as po:
        catalog = read_po(po, locale=locale)
    mo = io.BytesIO()
    write_mo(mo, catalog, use_fuzzy=False)
    mo.seek(0)
    return Translations(mo)


def accepted_locales(header: str) -> list[str]:
    """The languages of an Accept-Language header, most wanted first ("es-MX;q=0.9" → "es")."""
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


@contextmanager
def use_locale(locale: str) -> Iterator[None]:
    """Render in `locale` for the length of the block (the middleware's one job)."""
    token = _locale.set(locale)
    try:
        yield
    finally:
        _locale.reset(token)


def gettext(message: str) -> str:
    return translations(_locale.get()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translations(_locale.get()).ngettext(singular, plural, n)


def N_(message: str) -> str:  # noqa: N802 (gettext's conventional name)
    """Mark a string for extraction where it is defined; it is translated where it is shown."""
    return message


def format_number(value: float, digits: int | None = None) -> str:
    """A number in the reader's convention: 16,777,216 in English, 16.777.216 in Spanish."""
    pattern = None if digits is None else ("#,##0." + "0" * digits if digits else "#,##0")
    with decimal.localcontext() as context:
        # Babel rounds in the thread's decimal context; its default 28 digits cannot hold
        # 10⁹ tokens² × 65,536 heads × 65,536 sequences (an InvalidOperation, once a 500).
        context.prec = 400  # more than the 309 digits of the largest float
        return format_decimal(value, format=pattern, locale=_locale.get())
