"""A deliberately plain second byte-level BPE, for the tokenizer tests to compare.

Python loops and the standard library only, nothing from app/ and no `tokenizers`: the two
splits that llama.cpp applies for the "smollm" pre-tokenizer (llama-vocab.cpp: every \\p{N}
alone, then GPT-2's pattern 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|
\\s+(?!\\S)|\\s+) written out by hand, GPT-2's byte alphabet, and the merges applied lowest
rank first, as in GPT-2's encoder.py. Control tokens are matched whole first.
"""

import unicodedata
from collections.abc import Sequence
from itertools import pairwise

CONTRACTIONS = ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d")


def letter(c: str) -> bool:
    return unicodedata.category(c).startswith("L")


def number(c: str) -> bool:
    return unicodedata.category(c).startswith("N")


def other(c: str) -> bool:
    return not (c.isspace() or letter(c) or number(c))


def digits_apart(text: str) -> list[str]:
    """First split: every number character a piece of its own, the text between kept whole."""
    pieces, run = [], ""
    for c in text:
        if number(c):
            pieces += [run, c] if run else [c]
            run = ""
        else:
            run += c
    return pieces + ([run] if run else [])


def gpt2_split(text: str) -> list[str]:
    """Second split: GPT-2's pattern, alternative by alternative, leftmost first."""
    pieces, i, n = [], 0, len(text)
    while i < n:
        contraction = next((c for c in CONTRACTIONS if text.startswith(c, i)), None)
        if contraction:
            pieces.append(contraction)
            i += len(contraction)
            continue
        j = i + 1 if text[i] == " " and i + 1 < n else i  # the optional leading space
        kind = next((k for k in (letter, number, other) if k(text[j])), None)
        if kind is not None:
            k = j
            while k < n and kind(text[k]):
                k += 1
            pieces.append(text[i:k])
            i = k
            continue
        k = i
        while k < n and text[k].isspace():
            k += 1
        # \s+(?!\S): the run, less its last space when a non-space follows; else \s+
        end = k if k == n or k - i == 1 else k - 1
        pieces.append(text[i:end])
        i = end
    return pieces


def byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest move to 256+."""
    keep = [*range(33, 127), *range(161, 173), *range(174, 256)]
    table = {b: chr(b) for b in keep}
    moved = [b for b in range(256) if b not in table]
    table.update({b: chr(256 + i) for i, b in enumerate(moved)})
    return table


def bpe(word: str, ranks: dict[tuple[str, str], int]) -> list[str]:
    """Merge the adjacent pair of lowest rank, every occurrence left to right, until none is
    left to merge."""
    parts = list(word)
    while len(parts) > 1:
        pairs = [(ranks.get((a, b), len(ranks)), a, b) for a, b in pairwise(parts)]
        rank, a, b = min(pairs)
        if rank == len(ranks):
            break
        merged, i = [], 0
        while i < len(parts):
            if i + 1 < len(parts) and parts[i] == a and parts[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(parts[i])
                i += 1
        parts = merged
    return parts


def ranks_of(merges: Sequence[str]) -> dict[tuple[str, str], int]:
    """Each merge "a b" → its rank, the lowest merged first."""
    return {(a, b): rank for rank, (a, b) in enumerate(m.split(" ", 1) for m in merges)}


def encode(
    text: str, ids: dict[str, int], ranks: dict[tuple[str, str], int], control: Sequence[str]
) -> list[int]:
    """The token ids of `text` under this vocabulary (token → id) and these merge ranks."""
    alphabet = byte_alphabet()
    out: list[int] = []
    rest = text
    while rest:
        at = [(rest.find(c), c) for c in control if c in rest]
        cut, found = min(at) if at else (len(rest), "")
        for piece in (p for part in digits_apart(rest[:cut]) for p in gpt2_split(part)):
            word = "".join(alphabet[b] for b in piece.encode("utf-8"))
            out += [ids[t] for t in bpe(word, ranks)]
        if found:
            out.append(ids[found])
        rest = rest[cut + len(found) :]
    return out
