"""The request shape of POST /api/decoder (its result is in results.py)."""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from app.core.i18n import gettext
from app.core.limits import (
    HARD_MAX_TOKENS,
    MAX_ALL_WEIGHTS_TOKENS,
    MAX_CANDIDATES,
    MAX_GENERATED,
    MAX_PROMPT_CHARS,
    MAX_PROMPT_TOKENS,
    MAX_REPEAT,
    MAX_TEMPERATURE,
    MAX_TOP_K,
    MIN_REPEAT,
)
from app.features.stages.schemas import CacheSpec, Seed, field_error
from app.math.sampling import Method

Index = Annotated[int, Field(strict=True, ge=0, le=HARD_MAX_TOKENS)]
HeadPair = Annotated[
    list[Index], Field(min_length=2, max_length=2, description="[layer, head], 0-based.")
]
WeightsWanted = Literal["none", "layer", "all"]


class SamplingSpec(BaseModel):
    """How each new token is chosen."""

    model_config = ConfigDict(extra="forbid")

    method: Method = Field(
        "greedy",
        description="greedy: the most likely token; sample: a seeded draw among the top_k, "
        "at the temperature.",
    )
    temperature: Annotated[float, Field(gt=0, le=MAX_TEMPERATURE, allow_inf_nan=False)] = Field(
        1.0, description="Divides the logits before sampling: below 1 sharper, above 1 flatter."
    )
    top_k: Annotated[int, Field(strict=True, ge=1, le=MAX_TOP_K)] = Field(
        50, description="Sampling draws among this many most likely tokens."
    )
    seed: Seed = Field(0, description="The same seed draws the same tokens.")


class RepeatSpec(BaseModel):
    """The induction test (Olsson et al. 2022): random tokens, then the same tokens again."""

    model_config = ConfigDict(extra="forbid")

    length: Annotated[int, Field(strict=True, ge=MIN_REPEAT, le=MAX_REPEAT)] = Field(
        description="How many random tokens, before they are repeated once."
    )
    seed: Seed = Field(0, description="Which random tokens.")


class DecoderRequest(BaseModel):
    """A prompt for the decoder (or the induction test), what to generate and what to show."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"text": "The capital of France is", "generate": 8},
                {"text": "When John and Mary went to the store, John gave a drink to"},
                {"repeat_random": {"length": 32, "seed": 0}, "weights": "layer", "layer": 3},
            ]
        },
    )

    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT_CHARS)] | None = (
        Field(
            None,
            description=f"The prompt: 1 to {MAX_PROMPT_CHARS} characters, at most "
            f"{MAX_PROMPT_TOKENS} tokens. Required unless repeat_random is given.",
        )
    )
    generate: Annotated[int, Field(strict=True, ge=0, le=MAX_GENERATED)] = Field(
        0, description="New tokens to generate after the prompt (it stops early at an end token)."
    )
    sampling: SamplingSpec = Field(default_factory=SamplingSpec)
    top: Annotated[int, Field(strict=True, ge=1, le=MAX_CANDIDATES)] = Field(
        10, description="How many next-token candidates to list."
    )
    cache: CacheSpec = Field(
        default_factory=CacheSpec,
        description="Which positions every layer's cache keeps, for the prompt and the "
        "generation (default full); positions keep their RoPE angles.",
    )
    ablate: Annotated[list[HeadPair], Field(max_length=270)] = Field(
        [],
        description="[layer, head] query heads switched off: each one's slice of the attention "
        "output is zeroed before the output projection.",
    )
    weights: WeightsWanted = Field(
        "none",
        description='"layer": the 9 heads\' n × n weights of `layer`; "all": every layer\'s, '
        f"for at most {MAX_ALL_WEIGHTS_TOKENS} tokens.",
    )
    layer: Index | None = Field(None, description="0-based layer (default 0).")
    head: Index | None = Field(
        None, description="0-based query head of `layer`: its stages over the whole sequence."
    )
    query: Index | None = Field(
        None, description="With head: the position broken down key by key (default the last)."
    )
    repeat_random: RepeatSpec | None = Field(
        None, description="In place of text: random tokens repeated once (the induction test)."
    )

    @field_validator("text", mode="before")
    @classmethod
    def not_blank(cls, text: Any) -> Any:
        if isinstance(text, str) and not text.strip():
            message = (
                gettext("text has no words, only spaces; type a prompt for the model to continue")
                if text
                else gettext("text is empty; type a prompt for the model to continue")
            )
            raise PydanticCustomError("blank_text", message)
        return text

    @model_validator(mode="after")
    def text_or_repeat(self) -> "DecoderRequest":
        if self.text is None and self.repeat_random is None:
            raise field_error(
                "missing",
                gettext(
                    "text is required (the prompt); or give repeat_random for the induction test"
                ),
                "text",
            )
        if self.text is not None and self.repeat_random is not None:
            raise field_error(
                "text_and_repeat",
                gettext(
                    "repeat_random replaces text with random tokens; give one of them, not both"
                ),
                "repeat_random",
            )
        if self.query is not None and self.head is None:
            raise field_error(
                "missing_pair",
                gettext("query needs head: it is a row of that head's weights"),
                "query",
            )
        return self

    @property
    def shown_layer(self) -> int:
        return self.layer or 0
