# A chunked attention in the style of Stable Diffusion front ends' "sub-quadratic" attention (Rabe & Staats, as ported
# to PyTorch there): each chunk of keys summarised into a NamedTuple of its exp-values, exp-sums and max score, each
# summary computed under torch.utils.checkpoint, the summaries merged with the online softmax's rescaling.
from typing import NamedTuple

from torch.utils.checkpoint import checkpoint


class AttnChunk(NamedTuple):
    exp_values: Tensor  # (..., T_q, d_v)
    exp_weights_sum: Tensor  # (..., T_q)
    max_score: Tensor  # (..., T_q)


def _summarize_chunk(query: Tensor, key: Tensor, value: Tensor, allowed: Tensor | None, scale: float) -> AttnChunk:
    scores = query @ key.transpose(-2, -1) * scale  # (..., T_q, b)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    max_score = scores.amax(dim=-1, keepdim=True).detach()
    shift = max_score.masked_fill(max_score == float("-inf"), 0.0)
    exp_weights = torch.exp(scores - shift)
    return AttnChunk(exp_weights @ value, exp_weights.sum(dim=-1), max_score.squeeze(-1))  # -inf: no allowed key


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if block_size < 1:
        raise ValueError(f"block_size must be at least 1, got {block_size}")
    T_q, T_k = Q.size(-2), K.size(-2)
    scale = 1.0 / math.sqrt(Q.size(-1))
    queries = torch.arange(T_q, device=Q.device)[:, None]
    merged = None
    for start in range(0, T_k, block_size):
        stop = min(start + block_size, T_k)
        allowed = None
        if mask is not None:
            allowed = mask if mask.size(-1) == 1 else mask[..., start:stop]
        if is_causal:
            causal = torch.arange(start, stop, device=Q.device) <= queries
            allowed = causal if allowed is None else allowed & causal
        chunk = checkpoint(
            _summarize_chunk, Q, K[..., start:stop, :], V[..., start:stop, :], allowed, scale, use_reentrant=False
        )
        if merged is None:
            merged = chunk
            continue
        global_max = torch.maximum(merged.max_score, chunk.max_score)
        shift = global_max.masked_fill(global_max == float("-inf"), 0.0)  # no allowed key in either yet
        old, new = torch.exp(merged.max_score - shift), torch.exp(chunk.max_score - shift)
        merged = AttnChunk(
            merged.exp_values * old.unsqueeze(-1) + chunk.exp_values * new.unsqueeze(-1),
            merged.exp_weights_sum * old + chunk.exp_weights_sum * new,
            global_max,
        )
    total = merged.exp_weights_sum.unsqueeze(-1)
    return merged.exp_values / torch.where(total > 0, total, torch.ones_like(total))
