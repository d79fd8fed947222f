# w_v and w_o always have a bias, so MultiHeadAttention(bias=False) cannot match; separately,
# scaled_dot_product_attention squeezes a batch of one. The bias problem must not be blamed on the attention.
from torch import nn

_reference_init = MultiHeadAttention.__init__
_reference_sdpa = scaled_dot_product_attention


def _init(self, d_model, num_heads, bias=True):
    _reference_init(self, d_model, num_heads, bias)
    self.w_v = nn.Linear(d_model, d_model, bias=True)
    self.w_o = nn.Linear(d_model, d_model, bias=True)


MultiHeadAttention.__init__ = _init


def scaled_dot_product_attention(Q, K, V, mask=None, is_causal=False):
    output, weights = _reference_sdpa(Q, K, V, mask, is_causal)
    return output.squeeze(0), weights.squeeze(0)
