from typing import Annotated, Final, Literal, cast, get_type_hints, overload

HEADS: Final = 8
Reduction = Literal["sum", "mean"]
Scores = Annotated[Tensor, "shape (..., T_q, T_k)"]


@overload
def _as_float(x: int) -> float: ...
@overload
def _as_float(x: float) -> float: ...
def _as_float(x):
    return float(x)


_reference_scale = scale_scores


def scale_scores(scores: Scores, d_k: int) -> Scores:
    return cast("Tensor", _reference_scale(scores, d_k))


_HINTS = get_type_hints(scale_scores, include_extras=True)
