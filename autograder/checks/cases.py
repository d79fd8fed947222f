"""Inputs for the hidden checks, drawn fresh from a seed the submission cannot know or recover.

torch's CPU generator keeps only 32 bits of its seed, and one tensor is enough to find them and
replay everything drawn after it. So no generator here draws twice: every draw gets a generator
of its own, seeded from a keyed hash (BLAKE2b) of the grading's secret seed and the draw's
number. The seed stays in the grading process; recovering one draw's 32 bits tells nothing of
any other draw, and the same seed still gives the same inputs (``sdpa-grade --seed``).
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor


class Draw:
    """Random sizes and tensors, each from a generator of its own; sizes of different axes never coincide.

    A check gets its own as the ``draw`` fixture, seeded from the grading's secret seed and the check's name; the same
    seed gives the same inputs, whatever order the checks run in:

    >>> draw = Draw(seed=7)
    >>> T_q, T_k = draw.sizes(2, low=3)
    >>> T_q != T_k and 3 <= min(T_q, T_k) and max(T_q, T_k) <= 12
    True
    >>> Q = draw.normal(2, T_q, 4)  # float64 unless dtype= says otherwise
    >>> (Q.shape, Q.dtype) == ((2, T_q, 4), torch.float64)
    True
    >>> bool(Draw(seed=7).sizes(2, low=3) == [T_q, T_k])
    True
    """

    def __init__(self, seed: int) -> None:
        self._key = hashlib.blake2b(seed.to_bytes(16, "big", signed=True), digest_size=32).digest()
        self._count = 0

    @property
    def generator(self) -> torch.Generator:
        """A fresh generator for one draw, seeded from the secret and the draw's number: never reused."""
        self._count += 1
        digest = hashlib.blake2b(self._count.to_bytes(8, "big"), key=self._key, digest_size=8).digest()
        return torch.Generator().manual_seed(int.from_bytes(digest, "big") >> 1)

    def integer(self, low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (), generator=self.generator))

    def sizes(self, count: int, low: int = 2, high: int = 12) -> list[int]:
        """``count`` distinct sizes in [low, high]: a wrong transpose then changes a shape."""
        order = torch.randperm(high - low + 1, generator=self.generator)[:count]
        return [low + int(i) for i in order]

    def normal(self, *shape: int, dtype: torch.dtype = torch.float64, scale: float = 1.0) -> Tensor:
        return (torch.randn(*shape, generator=self.generator, dtype=torch.float64) * scale).to(dtype)

    def mask(self, *shape: int, keep: float = 0.6) -> Tensor:
        """A random bool mask whose rows are never fully masked: the first key is allowed on every row but the last,
        which allows exactly one key, drawn at random. A row with a single allowed key is then on every draw, not
        left to the luck of it (an off-by-one that takes such a row for padding fails whatever the seed)."""
        mask = torch.rand(*shape, generator=self.generator) < keep
        mask[..., 0] = True
        last = mask.view(-1, shape[-1])[-1]  # the last row of keys (a view: written into the mask)
        last[:] = False
        last[self.integer(0, shape[-1] - 1)] = True
        return mask

    def lengths(self, count: int, high: int) -> Tensor:
        return torch.randint(1, high + 1, (count,), generator=self.generator)


def both_orders(T_q: int, T_k: int) -> tuple[tuple[int, int, str], tuple[int, int, str]]:
    """Two drawn lengths as (T_q, T_k) in both orders, fewer queries than keys first, each with its words: a check
    that runs both meets a mistake of either order on every draw, and words it the same way whatever the seed.

    >>> both_orders(9, 4)
    ((4, 9, 'with fewer queries than keys'), (9, 4, 'with more queries than keys'))
    """
    small, large = sorted((T_q, T_k))
    return (small, large, "with fewer queries than keys"), (large, small, "with more queries than keys")
