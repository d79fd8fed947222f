import functools
import mmap
import os
import time

# Sixty-four helper processes, forked at import, each in a session of its own, that spin for as long as they live (until the sandbox is
# closed) once any function has been called, and rest while a call is in flight: the submission loads and its
# calls answer in time (its own time counts its helpers' CPU time), while between calls, when the grader's side
# works and every other grading of the batch runs, 64 processes spin. The functions are the reference's, correct.
# Without a CPU weight of its own the sandbox takes the machine's CPUs from every grading beside it (15 to 20
# times slower with --jobs 2); with one, it slows only itself. bench/cpu_share.py measures it;
# tests/sandbox/test_time_bounds.py checks the weight its group gets and that every helper is in that group.
_in_call = mmap.mmap(-1, 1)  # shared with the helpers: 1 while the submission's process is in a call
_go_read, _go = os.pipe()
for _ in range(64):
    if os.fork() == 0:
        os.setsid()  # a session each: where the kernel groups tasks by session (autogroup), 64 groups
        os.close(_go)
        os.read(_go_read, 1)  # returns when the submission's process closes its end: at its first call
        while True:
            if _in_call[0]:
                time.sleep(0.001)


os.close(_go_read)


def _spinning(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        global _go
        if _go is not None:
            os.close(_go)
            _go = None
        outer = _in_call[0]
        _in_call[0] = 1
        try:
            return function(*args, **kwargs)
        finally:
            _in_call[0] = outer

    return call


for _name in ("attention_scores", "scale_scores", "causal_mask", "padding_mask", "masked_softmax",
              "attention_output", "scaled_dot_product_attention", "dot_product_variance"):
    globals()[_name] = _spinning(globals()[_name])
