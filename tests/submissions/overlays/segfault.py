import faulthandler


def padding_mask(valid_lens, T_k):
    faulthandler._read_null()  # a segmentation fault: a read of address 0 (ctypes would be flagged)
