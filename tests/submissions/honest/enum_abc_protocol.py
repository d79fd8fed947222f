import abc
import enum
import functools
from typing import Protocol


class Fill(enum.Enum):
    NEG_INF = enum.auto()
    FINFO_MIN = enum.auto()


class Scorer(Protocol):
    def __call__(self, Q: Tensor, K: Tensor) -> Tensor: ...


class Base(abc.ABC):
    @abc.abstractmethod
    def run(self) -> None: ...


@functools.lru_cache(maxsize=8)
def _cached_mask(T_q: int, T_k: int) -> Tensor:
    return torch.ones(T_q, T_k, dtype=torch.bool).tril()
