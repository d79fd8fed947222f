import functools
import os

# Sixty-four helper processes, forked at import, that spin for as long as they live (until the sandbox is
# closed) once any function has been called: the submission loads (its own time counts its helpers' CPU time),
# then every call sets them spinning. The functions are the reference's, correct. Without a CPU weight of its own,
# the sandbox takes the machine's CPUs from every grading beside it in a batch (15 to 20 times slower with
# --jobs 2); with one, it slows only itself. bench/cpu_share.py measures it; tests/test_wave4_time.py checks
# the weight its group gets and that every helper is in that group.
_go_read, _go = os.pipe()
for _ in range(64):
    if os.fork() == 0:
        os.close(_go)
        os.read(_go_read, 1)  # returns when the submission's process closes its end: at its first call
        while True:
            pass
os.close(_go_read)


def _spinning(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        global _go
        if _go is not None:
            os.close(_go)
            _go = None
        return function(*args, **kwargs)

    return call


for _name in ("attention_scores", "scale_scores", "causal_mask", "padding_mask", "masked_softmax",
              "attention_output", "scaled_dot_product_attention", "dot_product_variance"):
    globals()[_name] = _spinning(globals()[_name])
