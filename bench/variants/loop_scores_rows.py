import torch


def attention_scores(Q, K):
    # one query row at a time
    return torch.cat([Q[..., i : i + 1, :] @ K.transpose(-2, -1) for i in range(Q.size(-2))], dim=-2)
