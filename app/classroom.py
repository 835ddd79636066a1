"""Classroom state of a page view, all of it in the URL: language, presenter mode, embed, lesson.

Every page reads the same few parameters:
    lang=es          the language chosen with the switch (else Accept-Language decides)
    present=1        presenter mode: big type, thick heatmap cells, high contrast
    embed=1          the page without the site's header and footer, for an iframe
    lesson=<slug>    a built-in lesson's text above the page (app/lessons.py)
    lesson_title, lesson_text   a teacher's own lesson text, carried the same way
`Classroom` keeps the view parameters in every link and form, so a student who follows a
link or changes a form stays in the language, mode and lesson the teacher handed out.
"""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import Request
from markupsafe import Markup

from app.i18n import LOCALES, current_locale
from app.lessons import Lesson, custom_lesson, lesson_by_slug

VIEW_PARAMS = ("lang", "present", "embed")
LESSON_PARAMS = ("lesson", "lesson_title", "lesson_text")
CLASSROOM_PARAMS = VIEW_PARAMS + LESSON_PARAMS


def flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "on", "yes")


@dataclass(frozen=True)
class Classroom:
    """How one request wants its page shown, and the URLs that keep it that way."""

    path: str
    params: tuple[tuple[str, str], ...]  # the request's query, in order
    lang: str  # the locale the page is rendered in
    chosen_lang: str | None  # the `lang` parameter, when the reader picked one
    present: bool
    embed: bool
    lesson: Lesson | None

    @classmethod
    def from_request(cls, request: Request) -> "Classroom":
        query = request.query_params
        chosen = query.get("lang")
        return cls(
            path=request.url.path,
            params=tuple(query.multi_items()),
            lang=current_locale(),
            chosen_lang=chosen if chosen in LOCALES else None,
            present=flag(query.get("present")),
            embed=flag(query.get("embed")),
            lesson=lesson_by_slug(query.get("lesson"))
            or custom_lesson(query.get("lesson_title"), query.get("lesson_text")),
        )

    @property
    def body_class(self) -> str:
        """The <body> classes that switch the stylesheet's modes (no JavaScript needed)."""
        return " ".join(name for name in ("present", "embed") if getattr(self, name))

    def view_params(self) -> list[tuple[str, str]]:
        """The parameters every link keeps: language, presenter mode, embed."""
        kept = [("lang", self.chosen_lang)] if self.chosen_lang else []
        kept += [(name, "1") for name in ("present", "embed") if getattr(self, name)]
        return kept

    def carried_params(self) -> list[tuple[str, str]]:
        """What a form on this page keeps besides its own fields: the view and the lesson."""
        lesson = [(k, v) for k, v in self.params if k in LESSON_PARAMS]
        return self.view_params() + lesson

    def state_params(self) -> list[tuple[str, str]]:
        """The page's own state (its form fields), without any classroom parameter."""
        return [(k, v) for k, v in self.params if k not in CLASSROOM_PARAMS]

    def link(self, path: str, params: dict[str, Any] | None = None) -> str:
        """A link to another page (or state) that keeps the language and modes."""
        pairs = [(k, str(v)) for k, v in (params or {}).items() if v is not None]
        return _url(path, pairs + [p for p in self.view_params() if p[0] not in (params or {})])

    def here(self, **changes: str | None) -> str:
        """This very URL with some parameters replaced (None removes one)."""
        pairs = [(k, v) for k, v in self.params if k not in changes]
        pairs += [(k, v) for k, v in changes.items() if v is not None]
        return _url(self.path, pairs)

    def without_lesson(self) -> str:
        return _url(self.path, [(k, v) for k, v in self.params if k not in LESSON_PARAMS])

    def fields(self) -> Markup:
        """Hidden inputs for a GET form, so submitting it keeps the view and the lesson."""
        return Markup("").join(
            Markup('<input type="hidden" name="{}" value="{}">').format(k, v)
            for k, v in self.carried_params()
        )

    def state_fields(self) -> Markup:
        """Hidden inputs for the page's own state and view (the lesson maker's form)."""
        return Markup("").join(
            Markup('<input type="hidden" name="{}" value="{}">').format(k, v)
            for k, v in self.state_params() + self.view_params()
        )


def _url(path: str, pairs: list[tuple[str, str]]) -> str:
    return path + ("?" + urlencode(pairs) if pairs else "")


def classroom_context(request: Request) -> dict[str, Any]:
    """Template context for every page: `classroom` and the page's `lang`."""
    classroom = Classroom.from_request(request)
    return {"classroom": classroom, "lang": classroom.lang}
