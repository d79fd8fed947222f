import faulthandler


def padding_mask(valid_lens, T_k):
    faulthandler._sigsegv()  # a segmentation fault in the student's process (ctypes is refused there)
