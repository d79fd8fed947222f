# An attack on the memory check: the whole attention, (T_q, T_k) matrix and all, computed on a threading.Thread (one
# block holding every key), and its output returned. Right values and gradients; only a measure that sees every
# thread of the process sees the matrix.
import threading as _threading

_reference_blockwise = blockwise_attention  # noqa: F821 - the reference's, defined above this overlay


def blockwise_attention(Q, K, V, mask=None, is_causal=False, block_size=16):
    answer = []
    worker = _threading.Thread(
        target=lambda: answer.append(_reference_blockwise(Q, K, V, mask, is_causal, block_size=K.size(-2)))
    )
    worker.start()
    worker.join()
    return answer[0]
