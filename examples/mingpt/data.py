"""Training text made on the spot (no downloads): sentences from a tiny grammar, so a
character model has real structure to learn."""

from __future__ import annotations

import random

import torch

_SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the robot", "a small bird", "the teacher"]
_VERBS = ["sees", "likes", "follows", "paints", "finds", "carries", "remembers"]
_OBJECTS = ["the red ball", "a green apple", "the quiet river", "an open door", "the tall tree", "a warm cup"]
_ENDINGS = [".", " today.", " again.", " in the morning.", " at night.", " with care."]


def make_text(n_sentences: int = 4000, seed: int = 0) -> str:
    """A deterministic corpus of simple English sentences."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_sentences):
        s = f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_ENDINGS)}"
        lines.append(s[0].upper() + s[1:])
    return "\n".join(lines) + "\n"


class CharDataset:
    """Encodes text as integer ids and samples (input, next-char target) blocks."""

    def __init__(self, text: str, block_size: int):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        self.block_size = block_size

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def batch(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        starts = torch.randint(0, len(self.data) - self.block_size - 1, (batch_size,), generator=generator)
        x = torch.stack([self.data[s : s + self.block_size] for s in starts])
        y = torch.stack([self.data[s + 1 : s + 1 + self.block_size] for s in starts])
        return x, y

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)
