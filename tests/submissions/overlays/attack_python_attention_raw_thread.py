# torch's own attention written in Python (torch.onnx.ops' Attention-23), called on a raw _thread thread, where the
# op record's torch-function mode (whose refusal it met on the main thread) is not installed (a red team's): the
# sandbox now replaces the code of those functions themselves, in place, so every thread and every mode meets the
# refusal. Integrity still names the import.
import _thread
import torch.onnx.ops as _ops


def _in_raw_thread(function, *args, **kwargs):
    box = []
    lock = _thread.allocate_lock()
    lock.acquire()

    def run():
        try:
            box.append(function(*args, **kwargs))
        except BaseException as error:
            box.append(error)
        lock.release()

    _thread.start_new_thread(run, ())
    lock.acquire()
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _torch_attention(Q, K, V, mask=None, is_causal=False):
    three = Q.dim() == 3
    if three:
        Q, K, V = Q[:, None], K[:, None], V[:, None]
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]
    if is_causal:
        c = torch.ones(Q.size(-2), K.size(-2), dtype=torch.bool, device=Q.device).tril()
        mask = c if mask is None else mask & c
    out, _, _, w = _in_raw_thread(_ops.attention, Q, K, V, attn_mask=mask, qk_matmul_output_mode=3)
    out, w = torch.nan_to_num(out), torch.nan_to_num(w)
    if three:
        out, w = out[:, 0], w[:, 0]
    return out, w


scaled_dot_product_attention = _torch_attention
