"""Inputs for the hidden checks, drawn fresh from a seed the submission cannot know."""

from __future__ import annotations

import torch
from torch import Tensor


class Draw:
    """Random sizes and tensors from one generator; sizes of different axes never coincide."""

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed)

    def integer(self, low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (), generator=self.generator))

    def sizes(self, count: int, low: int = 2, high: int = 12) -> list[int]:
        """``count`` distinct sizes in [low, high]: a wrong transpose then changes a shape."""
        order = torch.randperm(high - low + 1, generator=self.generator)[:count]
        return [low + int(i) for i in order]

    def normal(self, *shape: int, dtype: torch.dtype = torch.float64, scale: float = 1.0) -> Tensor:
        return (torch.randn(*shape, generator=self.generator, dtype=torch.float64) * scale).to(dtype)

    def mask(self, *shape: int, keep: float = 0.6) -> Tensor:
        """A random bool mask whose first key is always allowed (rows never fully masked)."""
        mask = torch.rand(*shape, generator=self.generator) < keep
        mask[..., 0] = True
        return mask

    def lengths(self, count: int, high: int) -> Tensor:
        return torch.randint(1, high + 1, (count,), generator=self.generator)
