# An attack on the memory check: the whole attention, (T_q, T_k) matrix and all, computed in a forked child process
# (one block holding every key), its output sent back through a pipe; the graded process itself only waits.
import os as _os
import pickle as _pickle

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    if Q.requires_grad or K.requires_grad or V.requires_grad:  # gradients cannot cross a pipe
        return _reference_blockwise(Q, K, V, mask, is_causal, block_size)
    read, write = _os.pipe()
    child = _os.fork()
    if child == 0:
        output = _reference_blockwise(Q, K, V, mask, is_causal, block_size=K.size(-2))
        with _os.fdopen(write, "wb") as pipe:
            pipe.write(_pickle.dumps(output.numpy()))
        _os._exit(0)
    _os.close(write)
    with _os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _os.waitpid(child, 0)
    return torch.from_numpy(_pickle.loads(data))
