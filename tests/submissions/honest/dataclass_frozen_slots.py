import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class Shapes:
    """Sizes read off a call's inputs."""

    T_q: int
    T_k: int


_reference_scores = attention_scores


def attention_scores(Q: Tensor, K: Tensor) -> Tensor:
    shapes = Shapes(Q.shape[-2], K.shape[-2])
    scores = _reference_scores(Q, K)
    assert scores.shape[-2:] == (shapes.T_q, shapes.T_k)
    return scores
