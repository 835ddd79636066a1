"""The rebuilt tokenizer gives the model's own token ids: the GGUF file's vocabulary, cut as a
plain second BPE (tests/bpe_reference.py) cuts it, on texts with spaces, digits, punctuation,
accents, emoji and control tokens."""

from functools import cache

import pytest

from app.features.decoder.store import LoadedDecoder, package_gguf
from app.features.decoder.tokenizer import piece_text
from tests import bpe_reference
from tests.gguf_fields import read_fields

TEXTS = [
    "The capital of France is",
    "When John and Mary went to the store, John gave a drink to",
    "  two  spaces,\ttabs and\n\nnew lines \n",
    "In 2024 it cost 3.14 × 10⁶ € (about $3,140,000)!",
    "café naïve Ñandú façade São Paulo Zürich",
    "emoji 👋🏽 and 🐈‍⬛ and 🇪🇸 flags",
    "don't WON'T I'll they've she'd 'quoted'",
    "<|im_start|>user\nHi there<|im_end|>",
    "数学と日本語, русский, ελληνικά",
    "def f(x):\n    return x ** 2  # squares",
    "   ",
    "1234567890",
]


@cache
def vocabulary() -> tuple[list[str], dict[str, int], dict[tuple[str, str], int], list[str]]:
    """The file's tokens, merges and control tokens, read from the file (no cache folder)."""
    gguf = package_gguf()
    assert gguf is not None
    fields = read_fields(gguf)
    tokens = fields["tokenizer.ggml.tokens"]
    types = fields["tokenizer.ggml.token_type"]
    control = [t for t, kind in zip(tokens, types, strict=True) if kind == 3]
    ids = {token: i for i, token in enumerate(tokens)}
    return tokens, ids, bpe_reference.ranks_of(fields["tokenizer.ggml.merges"]), control


@pytest.mark.parametrize("text", TEXTS)
def test_token_ids_are_the_files_vocabulary_cut_by_a_plain_bpe(
    decoder: LoadedDecoder, text: str
) -> None:
    tokens, ids, ranks, control = vocabulary()
    encoding = decoder.tokenizer.encode(text)
    assert encoding.ids == bpe_reference.encode(text, ids, ranks, control)
    assert encoding.tokens == [tokens[i] for i in encoding.ids]
    assert decoder.tokenizer.decode(encoding.ids, skip_special_tokens=False) == text


def test_digits_are_pieces_of_their_own_and_no_beginning_token_is_added(
    decoder: LoadedDecoder,
) -> None:
    encoding = decoder.tokenizer.encode("Year 2024")
    assert encoding.tokens == ["Year", "Ġ", "2", "0", "2", "4"]


@pytest.mark.parametrize(
    ("token", "text"),
    [
        ("Ġcat", " cat"),
        ("ĊĊ", "\n\n"),
        ("Ã©", "é"),
        ("<|im_start|>", "<|im_start|>"),
        ("ðŁ", "\\xf0\\x9f"),  # the first two bytes of an emoji: shown as bytes
    ],
)
def test_a_piece_shows_the_text_it_stands_for(token: str, text: str) -> None:
    assert piece_text(token) == text
