import torch


def attention_scores(Q, K):
    return torch.einsum("...qd,...kd->...qk", Q, K)


def attention_output(weights, V):
    return torch.einsum("...qk,...kv->...qv", weights, V)
