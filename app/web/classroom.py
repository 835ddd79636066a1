"""Classroom state of a page view, all of it in the URL: language, presenter mode, embed, lesson.

Every page understands the same few parameters:
    lang=es          the language chosen with the switch (else Accept-Language decides)
    present=1        presenter mode: big type, thick heatmap cells, high contrast
    embed=1          the page without the site's header and footer, for an iframe
    lesson=<slug>    a built-in lesson's text above the page (app/core/lessons.py)
    lesson_title, lesson_text   a teacher's own lesson text, carried the same way

The edge (app/web/edge.py) takes them out of the query string before any route sees it (so a
page's own parameter parsing never meets them) and sets the request's language from `lang` or
Accept-Language. `Classroom`
(in every template as `classroom`) says which modes are on and builds every link that keeps
them: `classroom.link(target)` for a link, `classroom.fields(action)` inside a GET form,
`classroom.location(target)` for a redirect, `classroom.here(...)` for the toggles. So a
student who follows a link or changes a form stays in the language, mode and lesson the
teacher handed out, on every page (tests/web/test_classroom.py checks every page's links).
A teacher's lesson travels cut to its limits (app/core/limits.py), and the page says so.
"""

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from fastapi import Request
from markupsafe import Markup
from starlette.datastructures import MutableHeaders
from starlette.types import Message

from app.core.i18n import LOCALES, current_locale
from app.core.lessons import LESSONS, Lesson, custom_lesson, lesson_by_slug, next_lesson, number_of
from app.core.limits import MAX_ECHO_CHARS, MAX_LESSON_TEXT_CHARS, MAX_LESSON_TITLE_CHARS

VIEW_PARAMS = ("lang", "present", "embed")
LESSON_PARAMS = ("lesson", "lesson_title", "lesson_text")
CLASSROOM_PARAMS = VIEW_PARAMS + LESSON_PARAMS
SCOPE_KEY = "classroom_params"
LESSON_LIMITS = (("lesson_title", MAX_LESSON_TITLE_CHARS), ("lesson_text", MAX_LESSON_TEXT_CHARS))

Pairs = Sequence[tuple[str, str]]


# Whether the request being served is in presenter mode: set once per request by the edge
# (app/web/edge.py), read where a picture is laid out for it (the heatmap() template global),
# as the language is (app/core/i18n.py).
presenting: ContextVar[bool] = ContextVar("presenting", default=False)


def switched_on(value: str | None) -> bool:
    """Whether a mode's query parameter (present=1, embed=on, …) turns it on."""
    return (value or "").lower() in ("1", "true", "on", "yes")


def param(pairs: Pairs, name: str) -> str | None:
    return next((v for k, v in pairs if k == name), None)


def url(path: str, pairs: Pairs = ()) -> str:
    """A path with its query parameters (a template global)."""
    return path + ("?" + urlencode([(k, str(v)) for k, v in pairs]) if pairs else "")


def hidden(pairs: Pairs) -> Markup:
    """Hidden inputs that send `pairs` with a GET form (a template global)."""
    return Markup("").join(
        Markup('<input type="hidden" name="{}" value="{}">').format(k, v) for k, v in pairs
    )


@dataclass(frozen=True)
class Classroom:
    """How one request wants its page shown, and the URLs that keep it that way."""

    path: str
    state: tuple[tuple[str, str], ...]  # the page's own parameters (its form fields)
    classroom: tuple[tuple[str, str], ...]  # the classroom parameters of the URL
    lang: str  # the locale the page is rendered in

    @classmethod
    def from_request(cls, request: Request) -> "Classroom":
        return cls(
            path=request.url.path,
            # the page's canonical state (app/web/pages.respond), so that no other parameter
            # of the address is copied into every link; a page without one keeps its query
            state=getattr(request.state, "page_state", tuple(request.query_params.multi_items())),
            classroom=tuple(request.scope.get(SCOPE_KEY, ())),
            lang=current_locale(),
        )

    @property
    def present(self) -> bool:
        return switched_on(param(self.classroom, "present"))

    @property
    def embed(self) -> bool:
        return switched_on(param(self.classroom, "embed"))

    @cached_property
    def lesson(self) -> Lesson | None:
        return lesson_by_slug(param(self.classroom, "lesson")) or custom_lesson(
            param(self.classroom, "lesson_title"), param(self.classroom, "lesson_text")
        )

    @property
    def next_lesson(self) -> Lesson | None:
        """The lesson after this one on the path, which its banner links to."""
        return next_lesson(self.lesson) if self.lesson else None

    @property
    def lesson_number(self) -> int | None:
        """A built-in lesson's place on the path (a teacher's own has none)."""
        return number_of(self.lesson) if self.lesson and self.lesson.builtin else None

    lesson_count = len(LESSONS)

    @property
    def unknown_lesson(self) -> str | None:
        """The slug of `lesson=` when no lesson has it (the page says so and shows none)."""
        slug = param(self.classroom, "lesson")
        unknown = slug and lesson_by_slug(slug) is None and self.lesson is None
        return slug[:MAX_ECHO_CHARS] if unknown else None

    @property
    def body_class(self) -> str:
        """The <body> classes that switch the stylesheet's modes (no JavaScript needed)."""
        return " ".join(name for name in ("present", "embed") if getattr(self, name))

    def view_params(self) -> list[tuple[str, str]]:
        """The parameters every link keeps: the chosen language, presenter mode, embed."""
        return list(self._view)

    @cached_property
    def _view(self) -> tuple[tuple[str, str], ...]:
        """view_params, worked out once: a page builds a hundred links and more with it."""
        lang = param(self.classroom, "lang")
        kept = [("lang", lang)] if lang in LOCALES else []
        return (*kept, *((name, "1") for name in ("present", "embed") if getattr(self, name)))

    def lesson_params(self) -> list[tuple[str, str]]:
        """The lesson as the page shows it: a built-in one by its slug, a teacher's own by its
        title and text, cut to their limits (an unknown slug is not carried on)."""
        lesson = self.lesson
        if lesson is None:
            return []
        if lesson.slug is not None:
            return [("lesson", lesson.slug)]
        return [
            (k, v) for k, v in (("lesson_title", lesson.title), ("lesson_text", lesson.text)) if v
        ]

    @property
    def cut(self) -> list[tuple[str, int]]:
        """The teacher's lesson parameters longer than their limit, which the page uses cut:
        (name, limit). A page's own fields say so in its notes (app/web/pages.PageForm)."""
        if self.lesson is None or self.lesson.builtin:
            return []
        return [
            (name, limit)
            for name, limit in LESSON_LIMITS
            if len((param(self.classroom, name) or "").strip()) > limit
        ]

    def link(self, target: str) -> str:
        """A local link that keeps the view (language, presenter mode, embed): every `href`
        to a page of this site is built with it."""
        return with_params(target, self._view)

    def carried_to(self, target: str) -> list[tuple[str, str]]:
        """What a redirect or a form to `target` carries: the view, and the lesson when it
        stays on this page."""
        same = urlsplit(target).path == self.path
        return [*self.view_params(), *(self.lesson_params() if same else ())]

    def location(self, target: str) -> str:
        """A redirect's target, with what it carries."""
        return with_params(target, self.carried_to(target))

    def fields(self, action: str) -> Markup:
        """The hidden inputs of a GET form to `action`: what it carries."""
        return hidden(self.carried_to(action))

    def here(self, **changes: str | None) -> str:
        """This very URL with some classroom parameters replaced (None removes one). Links
        built with it that drop a parameter are marked `data-exact`."""
        own = [*self.view_params(), *self.lesson_params()]
        kept = [(k, v) for k, v in own if k not in changes]
        added = [(k, v) for k, v in changes.items() if v is not None]
        return url(self.path, [*self.state, *kept, *added])

    def without_lesson(self) -> str:
        return self.link(url(self.path, self.state))

    @property
    def carry(self) -> str:
        """The view and lesson parameters as a query string, for a script that rewrites the
        address bar (`data-carry` on <body>)."""
        return urlencode(self.view_params() + self.lesson_params())

    def state_fields(self) -> Markup:
        """Hidden inputs with the page's state and view (the lesson maker's form)."""
        return hidden([*self.state, *self.view_params()])


def with_params(target: str, pairs: Pairs) -> str:
    """`target` with the pairs whose names it does not set already (fragment kept)."""
    if not pairs:  # most links of most pages: nothing to add, nothing to parse
        return target
    parts = urlsplit(target)
    own = parse_qsl(parts.query, keep_blank_values=True)
    names = {k for k, _ in own}
    added = [(k, v) for k, v in pairs if k not in names]
    if not added:
        return target
    query = urlencode([*own, *added])
    return parts.path + "?" + query + (f"#{parts.fragment}" if parts.fragment else "")


def embed_src(src: str | None) -> str | None:
    """A page of this site (a path with its query) as an iframe shows it: with `embed=1`.

    Only local paths are accepted, so the embed page never frames another site."""
    parts = urlsplit(src or "")
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or "\\" in parts.path:
        return None
    pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "embed"]
    return url(parts.path, [*pairs, ("embed", "1")])


def classroom_context(request: Request) -> dict[str, Any]:
    """Template context for every page: `classroom` and the page's `lang`."""
    classroom = Classroom.from_request(request)
    return {"classroom": classroom, "lang": classroom.lang}


def lifted(query: bytes) -> tuple[bytes, list[tuple[str, str]]]:
    """A query string without its classroom parameters (pages built with `Classroom` carry
    them on), and those parameters, in the order they came."""
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True) if query else []
    lifted = [(k, v) for k, v in pairs if k in CLASSROOM_PARAMS]
    if not lifted:
        return query, []
    return urlencode([(k, v) for k, v in pairs if k not in CLASSROOM_PARAMS]).encode(), lifted


def is_html(start: Message) -> bool:
    """Whether a response's start message says it is an HTML page."""
    kind = next((v for k, v in start.get("headers", ()) if k.lower() == b"content-type"), b"")
    return kind.startswith(b"text/html")


def in_language(start: Message, locale: str) -> None:
    """Mark a page with the language it is written in (data and assets are in none)."""
    if is_html(start):
        headers = MutableHeaders(scope=start)
        headers.setdefault("content-language", locale)
        headers.add_vary_header("Accept-Language")
