# An attack on the memory check: the whole (T_q, T_k) matrix of scores made and kept in numpy (float64), never shown
# to torch; the output returned is the reference's. Only a measure of the whole process sees numpy's memory.
_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    import numpy

    everything = numpy.matmul(Q.detach().double().numpy(), numpy.swapaxes(K.detach().double().numpy(), -1, -2))
    everything -= everything.max(axis=-1, keepdims=True)  # used, and alive until the call returns
    return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
