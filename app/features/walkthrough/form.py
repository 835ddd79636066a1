"""The walk-through's own parameters, beside the lab state its URL also carries:

/walkthrough?<the lab's parameters>&step=weights&predict=1&key=0&guess=0.6
"""

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator
from pydantic_core import PydanticCustomError

from app.core.formatting import number_text
from app.core.i18n import format_number, gettext
from app.web.pages import Decimal, PageForm, Whole

StepName = Literal["x", "qkv", "scores", "scaled", "masked", "weights", "weighted", "output"]
STEP_NAMES: tuple[str, ...] = get_args(StepName)


def known_step(value: Any) -> Any:
    if isinstance(value, str) and value.strip() not in STEP_NAMES:
        raise PydanticCustomError(
            "walk_step",
            gettext("step “{given}” is not a step of this walk-through; choose one of {steps}"),
            {"given": value[:40], "steps": ", ".join(STEP_NAMES)},
        )
    return value.strip() if isinstance(value, str) else value


def a_weight(value: float) -> float:
    if not 0 <= value <= 1:
        raise PydanticCustomError(
            "walk_guess",
            gettext("guess is {given}, but a weight is never below 0 or above 1; guess again"),
            {"given": format_number(value)},
        )
    return value


class WalkForm(PageForm):
    """The step shown, and "predict first": the key whose weight the class guesses, and the
    guess (sent with the guess form's one button, or Enter)."""

    step: Annotated[StepName, BeforeValidator(known_step)] = "x"
    predict: bool = False
    key: Whole | None = None
    guess: Annotated[Decimal, AfterValidator(a_weight)] | None = None

    def state(self, key: int | None = None) -> list[tuple[str, str]]:
        """The walk-through's part of a page state: the step, the mode, and on the weights
        step of "predict first" the guess once made (for the key the page used)."""
        pairs = [("step", self.step)]
        if self.predict:
            pairs.append(("predict", "1"))
            if self.step == "weights" and self.guess is not None and key is not None:
                pairs += [("key", str(key)), ("guess", number_text(self.guess))]
        return pairs
