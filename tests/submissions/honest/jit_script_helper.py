@torch.jit.script
def _scale(scores: Tensor, d_k: int) -> Tensor:
    return scores / math.sqrt(d_k)


def scale_scores(scores, d_k):
    return _scale(scores, int(d_k))
