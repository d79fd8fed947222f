# The whole (T_q, T_k) matrix computed in numpy and brought back with torch.from_numpy: no torch op makes it, so a
# measure of ops alone would not see it. Its storage is new to the call, and the first op on it (a slice) shows it
# whole: the memory check fails it as any full matrix. (It loses its gradients too: numpy is outside autograd.)
_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    import numpy

    everything = numpy.matmul(Q.detach().numpy(), numpy.swapaxes(K.detach().numpy(), -1, -2))
    scores = torch.from_numpy(everything)  # (..., T_q, T_k), made outside torch's ops
    scores[..., :1].sum()  # a slice of it, as a loop over blocks would take
    return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
