"""Lessons: a short text and a page in the state that shows it, all carried by the URL.

A built-in lesson is named by its slug (`lesson=padding`); a teacher's own lesson carries its
title and text in the URL (`lesson_title=…&lesson_text=…`). Nothing is stored on the server.
"""

from dataclasses import dataclass, field

from app.i18n import N_, gettext

MAX_TITLE = 120
MAX_TEXT = 1500


@dataclass(frozen=True)
class Lesson:
    """What the banner above a page says, and (for a built-in one) where the lesson starts."""

    title: str
    text: str
    slug: str | None = None  # None for a teacher's own lesson
    path: str = "/"
    params: dict[str, str] = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        return self.slug is not None

    @property
    def heading(self) -> str:
        """Built-in text is translated; a teacher's own words are shown as typed."""
        return gettext(self.title) if self.builtin else self.title

    @property
    def body(self) -> str:
        return gettext(self.text) if self.builtin else self.text

    @property
    def start(self) -> dict[str, str]:
        """The parameters that open the lesson: its page state and its banner."""
        return {**self.params, "lesson": self.slug or ""}


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        slug="worked-example",
        title=N_("The worked example"),
        text=N_(
            "Three tokens, “The cat sleeps”, each a vector of two numbers, in a decoder. Follow "
            "the query “cat”: its dot products with the keys are 1, 0 and 1; dividing by √2 "
            "gives 0.707 and 0; the causal mask hides “sleeps”, which comes later. Softmax "
            "turns 0.707 and 0 into 0.670 and 0.330, and the output mixes the first two values "
            "in that proportion: [0.83, −0.34]."
        ),
    ),
)

_BY_SLUG = {lesson.slug: lesson for lesson in LESSONS}


def lesson_by_slug(slug: str | None) -> Lesson | None:
    return _BY_SLUG.get(slug or "")


def custom_lesson(title: str | None, text: str | None) -> Lesson | None:
    """A teacher's lesson from the URL; over-long text is cut, never refused."""
    title, text = (title or "").strip()[:MAX_TITLE], (text or "").strip()[:MAX_TEXT]
    return Lesson(title=title, text=text) if title or text else None
