"""Lessons: a short text and a page in the state that shows it, all carried by the URL.

A built-in lesson is named by its slug (`lesson=padding`); a teacher's own lesson carries its
title and text in the URL (`lesson_title=…&lesson_text=…`). Nothing is stored on the server.
"""

from dataclasses import dataclass, field

from app.core.i18n import N_, gettext
from app.core.limits import MAX_LESSON_TEXT_CHARS, MAX_LESSON_TITLE_CHARS


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


# The lab's generated examples use four-wide vectors (app/features/lab/form.py reads these names).
GENERATED = {"d_model": "4", "d_k": "4", "d_v": "4"}

# The lesson path, in the order a first course on attention takes it: one head, why it
# divides by √d_k, masks, softmax and the weighted values, many heads, positions, what long
# inputs cost, the kernel and the cache that answer it, then two trained models. Each
# lesson's banner links to the next one (`next_lesson`).
LESSONS: tuple[Lesson, ...] = (
    Lesson(
        slug="worked-example",
        title=N_("One head: the worked example"),
        text=N_(
            "Three tokens, “The cat sleeps”, each a vector of two numbers, in a decoder. Follow "
            "the query “cat”: its dot products with the keys are 1, 0 and 1; dividing by √2 "
            "gives 0.707, 0 and 0.707; the causal mask hides “sleeps”, which comes later. "
            "Softmax turns 0.707 and 0 into 0.670 and 0.330, and the output mixes the first two "
            "values in that proportion: [0.835, −0.340]."
        ),
    ),
    Lesson(
        slug="scaling",
        title=N_("Why divide by √d_k"),
        path="/heads",
        text=N_(
            "A score adds up d_k products, so its spread grows like √d_k. Here every head is 64 "
            "numbers wide and the division is switched off: most rows put more than 0.9 of "
            "their weight on a single key, and softmax has almost nothing left to learn from. "
            "Switch Scaling back on and the weights spread out again. “Why divide by √d_k?” on "
            "this page measures it for every width."
        ),
        params={
            "text": "the cat sat on the mat",
            "d_model": "16",
            "heads": "4",
            "kv_heads": "4",
            "d_head": "64",
            "scale": "off",
        },
    ),
    Lesson(
        slug="encoder-decoder",
        title=N_("Encoder and decoder masks"),
        text=N_(
            "An encoder lets every token look at every other token, before and after it: no "
            "cell of the weights is grey. Now switch the mask to causal, as in a decoder that "
            "writes one token at a time and must not read ahead: the cells above the diagonal "
            "turn grey, each row shares its weight among fewer keys, and the first token can "
            "only attend to itself."
        ),
        params={
            **GENERATED,
            "tokens": "the cat sat on the mat",
            "mask": "bidirectional",
            "query": "2",
        },
    ),
    Lesson(
        slug="padding",
        title=N_("Padding"),
        text=N_(
            "Sequences in a batch are filled up to one length with padding tokens. The padding "
            "mask hides those keys from every query, so they get weight 0 and add nothing to "
            "any output. Compare a real token's row with and without the two <pad> keys: only "
            "the visible keys share the weight."
        ),
        params={
            **GENERATED,
            "tokens": "Hello world <pad> <pad>",
            "mask": "bidirectional",
            "pad": "2,3",
            "query": "1",
        },
    ),
    Lesson(
        slug="sliding-window",
        title=N_("A sliding window"),
        text=N_(
            "With a window of w = 3, each token sees itself and the two tokens before it, "
            "however long the text is: a band along the diagonal. The work per token no longer "
            "grows with the length. Stacked layers still carry information further back, one "
            "window per layer."
        ),
        params={
            **GENERATED,
            "tokens": "one two three four five six seven eight",
            "mask": "window",
            "window": "3",
            "query": "7",
        },
    ),
    Lesson(
        slug="softmax-values",
        title=N_("Softmax and the weighted values"),
        path="/walkthrough",
        text=N_(
            "Softmax turns each row of scores into weights between 0 and 1 that add up to 1, "
            "and a hidden key gets exactly 0. For “cat” that is 0.670 for “The”, 0.330 for "
            "itself and 0 for “sleeps”. The output is then a weighted sum of the value rows: "
            "0.670 × [1, −1] + 0.330 × [0.5, 1] = [0.835, −0.340]. Press → to see the "
            "weighted values and their sum."
        ),
        params={"step": "weights"},
    ),
    Lesson(
        slug="heads-gqa",
        title=N_("Many heads and grouped-query attention"),
        path="/heads",
        text=N_(
            "Eight heads run side by side, each with its own query projection, so each can "
            "look for a different pattern: compare their weight maps. Here they share only two "
            "key/value heads, four query heads to each. The heads that share keys and values "
            "still attend differently, and the cache of keys and values is four times smaller "
            "than with eight key/value heads."
        ),
        params={
            "text": "the cat sat on the mat",
            "d_model": "16",
            "heads": "8",
            "kv_heads": "2",
            "d_head": "4",
            "mask": "causal",
        },
    ),
    Lesson(
        slug="positions",
        title=N_("Positions"),
        path="/heads",
        text=N_(
            "Attention compares queries with keys by their content alone. With no positional "
            "encoding and no causal mask, the two “the” of “the cat sat on the mat” get "
            "identical output rows, and shuffling the words only shuffles the outputs: see "
            "“Shuffle the tokens” below. Choose sinusoidal or RoPE under Position information "
            "and the two “the” come apart."
        ),
        params={
            "text": "the cat sat on the mat",
            "d_model": "8",
            "heads": "4",
            "kv_heads": "2",
            "d_head": "4",
            "mask": "bidirectional",
            "positional": "none",
        },
    ),
    Lesson(
        slug="long-context-cost",
        title=N_("What 128k tokens cost"),
        path="/cost",
        text=N_(
            "At 131,072 tokens one head's dense score matrix has 17,179,869,184 entries: 32 GiB "
            "at 2 bytes each, for one head of one layer. That is why long-context kernels never "
            "store it. What has to be stored is the KV cache: for Qwen2.5-7B, with 4 key/value "
            "heads for 28 query heads, 7 GiB per sequence."
        ),
        params={"preset": "qwen2.5-7b", "seq_len": "131072"},
    ),
    Lesson(
        slug="tiled-kernel",
        title=N_("The tiled kernel"),
        path="/kernel",
        text=N_(
            "A memory-efficient kernel never holds the whole score matrix. It takes the "
            "queries in blocks of 4 and the keys in blocks of 2, keeps for each query a running "
            "maximum and a running sum, and rescales what it has so far whenever a later tile "
            "brings a larger score. Step through the tiles: after the last one the output is "
            "the lab's output, yet no more than one 4 × 2 tile of scores was held at a time."
        ),
        params={
            **GENERATED,
            "tokens": "one two three four five six seven eight",
            "mask": "causal",
            "block_q": "4",
            "block_k": "2",
            "step": "3",
        },
    ),
    Lesson(
        slug="kv-cache",
        title=N_("Decoding with a cache"),
        path="/kernel",
        text=N_(
            "A model that writes text adds one token at a time. The first three tokens are the "
            "prompt: their keys and values go into the cache in one pass. After that each new "
            "token computes only its own query, key and value, adds its key and value to the "
            "cache and attends over everything cached so far. Step through the decoding: the "
            "cache grows by one row per token, and nothing computed before is computed again."
        ),
        params={
            **GENERATED,
            "tokens": "the cat sat on the mat",
            "mask": "causal",
            "prompt": "3",
            "decode_step": "2",
        },
    ),
    Lesson(
        slug="trained-encoder",
        title=N_("A trained model: the encoder"),
        path="/model",
        text=N_(
            "all-MiniLM-L6-v2 has 6 layers of 12 heads, trained on English text; its weights "
            "were learned, not chosen to make a point. Each small map is one head's weights for "
            "the same sentence. Look for heads that attend to the previous token, to the token "
            "itself, or to [CLS] and [SEP], then open one: its stages are the ones from the "
            "first lesson."
        ),
        params={"text": "The cat sat on the mat because it was tired."},
    ),
    Lesson(
        slug="trained-decoder",
        title=N_("A trained model that writes: the decoder"),
        path="/decoder",
        text=N_(
            "SmolLM2-135M-Instruct writes text one token at a time. Every one of its 30 layers "
            "has 9 query heads sharing 3 key/value heads, rotates queries and keys with RoPE and "
            "hides later tokens with the causal mask; a cache keeps the keys and values of the "
            "tokens already written. Everything from the earlier lessons, in a model that was "
            "trained."
        ),
    ),
)


def next_lesson(lesson: Lesson) -> Lesson | None:
    """The lesson after a built-in one on the path (None after the last, or for a teacher's)."""
    if not lesson.builtin:
        return None
    index = LESSONS.index(lesson)
    return LESSONS[index + 1] if index + 1 < len(LESSONS) else None


def number_of(lesson: Lesson) -> int:
    """A built-in lesson's place on the path, from 1."""
    return LESSONS.index(lesson) + 1


_BY_SLUG = {lesson.slug: lesson for lesson in LESSONS}


def lesson_by_slug(slug: str | None) -> Lesson | None:
    return _BY_SLUG.get(slug or "")


def custom_lesson(title: str | None, text: str | None) -> Lesson | None:
    """A teacher's lesson from the URL; over-long text is cut, never refused."""
    title = (title or "").strip()[:MAX_LESSON_TITLE_CHARS]
    text = (text or "").strip()[:MAX_LESSON_TEXT_CHARS]
    return Lesson(title=title, text=text) if title or text else None
