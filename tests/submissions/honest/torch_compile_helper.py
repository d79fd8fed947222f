@torch.compile(dynamic=True)
def _scale(scores: Tensor, d_k: int) -> Tensor:
    return scores / math.sqrt(d_k)


@torch.compile
def _output(weights: Tensor, V: Tensor) -> Tensor:
    return weights @ V


def scale_scores(scores, d_k):
    return _scale(scores, d_k)


def attention_output(weights, V):
    return _output(weights, V)
