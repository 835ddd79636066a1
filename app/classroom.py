"""Classroom state of a page view, all of it in the URL: language, presenter mode, embed, lesson.

Every page understands the same few parameters:
    lang=es          the language chosen with the switch (else Accept-Language decides)
    present=1        presenter mode: big type, thick heatmap cells, high contrast
    embed=1          the page without the site's header and footer, for an iframe
    lesson=<slug>    a built-in lesson's text above the page (app/lessons.py)
    lesson_title, lesson_text   a teacher's own lesson text, carried the same way

`ClassroomMiddleware` takes them out of the query string before any route sees it (so a page's
own parameter parsing never meets them) and serves the request in its language.
`Classroom` (in every template as `classroom`) puts them back into every link and form, so a
student who follows a link or changes a form stays in the language, mode and lesson the
teacher handed out.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from fastapi import Request
from markupsafe import Markup
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.i18n import LOCALES, current_locale, negotiate, use_locale
from app.lessons import Lesson, custom_lesson, lesson_by_slug

VIEW_PARAMS = ("lang", "present", "embed")
LESSON_PARAMS = ("lesson", "lesson_title", "lesson_text")
CLASSROOM_PARAMS = VIEW_PARAMS + LESSON_PARAMS
SCOPE_KEY = "classroom_params"

Pairs = Sequence[tuple[str, str]]


def flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "on", "yes")


def _get(pairs: Pairs, name: str) -> str | None:
    return next((v for k, v in pairs if k == name), None)


def _url(path: str, pairs: Pairs) -> str:
    return path + ("?" + urlencode(list(pairs)) if pairs else "")


def _hidden_inputs(pairs: Pairs) -> Markup:
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
            state=tuple(request.query_params.multi_items()),
            classroom=tuple(request.scope.get(SCOPE_KEY, ())),
            lang=current_locale(),
        )

    @property
    def present(self) -> bool:
        return flag(_get(self.classroom, "present"))

    @property
    def embed(self) -> bool:
        return flag(_get(self.classroom, "embed"))

    @property
    def lesson(self) -> Lesson | None:
        return lesson_by_slug(_get(self.classroom, "lesson")) or custom_lesson(
            _get(self.classroom, "lesson_title"), _get(self.classroom, "lesson_text")
        )

    @property
    def body_class(self) -> str:
        """The <body> classes that switch the stylesheet's modes (no JavaScript needed)."""
        return " ".join(name for name in ("present", "embed") if getattr(self, name))

    def view_params(self) -> list[tuple[str, str]]:
        """The parameters every link keeps: the chosen language, presenter mode, embed."""
        lang = _get(self.classroom, "lang")
        kept = [("lang", lang)] if lang in LOCALES else []
        return kept + [(name, "1") for name in ("present", "embed") if getattr(self, name)]

    def lesson_params(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.classroom if k in LESSON_PARAMS]

    def link(self, path: str, params: Mapping[str, Any] | Pairs | None = None) -> str:
        """A link to another page (or state) that keeps the language and modes."""
        items = params.items() if isinstance(params, Mapping) else params or ()
        given = [(k, str(v)) for k, v in items if v is not None]
        names = {k for k, _ in given}
        return _url(path, given + [p for p in self.view_params() if p[0] not in names])

    def here(self, **changes: str | None) -> str:
        """This very URL with some classroom parameters replaced (None removes one)."""
        kept = [(k, v) for k, v in self.classroom if k not in changes]
        added = [(k, v) for k, v in changes.items() if v is not None]
        return _url(self.path, [*self.state, *kept, *added])

    def without_lesson(self) -> str:
        return _url(self.path, [*self.state, *self.view_params()])

    def fields(self, extra: Pairs = ()) -> Markup:
        """Hidden inputs for a page's GET form: submitting it keeps the view and the lesson
        (and `extra`, state the form does not show)."""
        return _hidden_inputs([*extra, *self.view_params(), *self.lesson_params()])

    def state_fields(self) -> Markup:
        """Hidden inputs with the page's state and view (the lesson maker's form)."""
        return _hidden_inputs([*self.state, *self.view_params()])


def embed_src(src: str | None) -> str | None:
    """A page of this site (a path with its query) as an iframe shows it: with `embed=1`.

    Only local paths are accepted, so the embed page never frames another site."""
    parts = urlsplit(src or "")
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or "\\" in parts.path:
        return None
    pairs = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "embed"]
    return _url(parts.path, [*pairs, ("embed", "1")])


def classroom_context(request: Request) -> dict[str, Any]:
    """Template context for every page: `classroom` and the page's `lang`."""
    classroom = Classroom.from_request(request)
    return {"classroom": classroom, "lang": classroom.lang}


class ClassroomMiddleware:
    """Lift the classroom parameters out of the query string and serve in the right language.

    Pure ASGI (no extra task), so the locale set here is the one the route renders in; each
    request has its own task and context, so concurrent readers keep their own languages.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        lifted = [(k, v) for k, v in pairs if k in CLASSROOM_PARAMS]
        if lifted:
            rest = [(k, v) for k, v in pairs if k not in CLASSROOM_PARAMS]
            scope = {**scope, "query_string": urlencode(rest).encode(), SCOPE_KEY: lifted}
        locale = negotiate(_get(lifted, "lang"), Headers(scope=scope).get("accept-language"))

        async def send_with_language(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("content-language", locale)
                headers.add_vary_header("Accept-Language")
            await send(message)

        with use_locale(locale):
            await self.app(scope, receive, send_with_language)
