import numpy_but_misspelled  # noqa
