# A -1e9 fill: uniform rows where every key is masked, and in float16 masked_fill raises ("value
# cannot be converted to type c10::Half without overflow"). The float16 error is not "uniform weights".
import torch


def masked_softmax(scores, mask=None):
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    return torch.softmax(scores, dim=-1)
