import typing
from typing import Callable, Optional, TypeVar

ModuleT = TypeVar("ModuleT", bound="nn.Module")
Scorer = Callable[..., "Tensor"]


def _maybe(x: Optional["Tensor"] = None) -> Optional["Tensor"]:
    return x


_HINTS = typing.get_type_hints(_maybe)
_SDPA_HINTS = typing.get_type_hints(scaled_dot_product_attention)
