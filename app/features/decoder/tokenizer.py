"""SmolLM2's tokenizer, rebuilt with `tokenizers` from the vocabulary and merges in its GGUF file.

The file names a byte-level BPE (tokenizer.ggml.model "gpt2") with the "smollm" pre-tokenizer,
which llama.cpp (llama-vocab.cpp) applies in two splits: every digit becomes a piece of its
own, then GPT-2's pattern cuts the rest into words, numbers, punctuation and runs of spaces,
each keeping one leading space. Every byte is then written as one printable character (GPT-2's
byte alphabet, where a space is "Ġ") and the merges are applied in rank order. No beginning
token is added (tokenizer.ggml.add_bos_token is false). The control tokens (<|im_start|>,
<|endoftext|>, …) are matched whole, as special tokens.
"""

from collections.abc import Sequence
from functools import cache

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CONTROL = 3  # llama.cpp's token type for control tokens


def build_tokenizer(
    tokens: Sequence[str], merges: Sequence[str], types: Sequence[int]
) -> Tokenizer:
    """The tokenizer the file describes: token i gets id i."""
    vocab = {token: i for i, token in enumerate(tokens)}
    pairs = [tuple(merge.split(" ", 1)) for merge in merges]
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=pairs))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    control = [t for t, kind in zip(tokens, types, strict=True) if kind == CONTROL]
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in control])
    return tokenizer


@cache
def byte_alphabet() -> dict[str, int]:
    """GPT-2's byte alphabet, read backwards: the printable character standing for each byte.

    The printable bytes (! to ~, ¡ to ¬, ® to ÿ) stand for themselves; the other 68 (control
    characters, the space, …) are moved to the characters from U+0100 on, in byte order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    moved = [b for b in range(256) if b not in printable]
    letters = {chr(b): b for b in printable}
    letters.update({chr(256 + i): b for i, b in enumerate(moved)})
    return letters


def piece_text(token: str) -> str:
    """A token as the text it stands for ("Ġcat" → " cat"). A piece that holds only part of a
    character (an emoji is often cut in two or three) shows its bytes as \\x escapes."""
    alphabet = byte_alphabet()
    if not all(c in alphabet for c in token):  # a control token such as <|im_start|>
        return token
    return bytes(alphabet[c] for c in token).decode("utf-8", errors="backslashreplace")
