"""End the grading process without the interpreter's teardown (``sdpa-grade``'s last step).

With torch, sympy and pytest loaded, a normal exit frees every module and object one by one and runs
torch's static destructors: about 0.7 CPU-s, a sixth of a cold grading (``bench/cold_start.py``), that
nobody sees. What a normal exit does that is seen is done first, in its order: it waits for other
threads (here: where one still runs, the normal exit is taken instead), runs the ``atexit`` callbacks
(temporary folders left to ``weakref.finalize``, logging's flush), flushes stdout and stderr.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` would, less the teardown."""
    main = threading.main_thread()
    if any(thread is not main and not thread.daemon for thread in threading.enumerate()):
        sys.exit(code)  # an exit waits for it: so do we
    atexit._run_exitfuncs()  # noqa: SLF001 - the interpreter's own call at exit; it clears what it ran
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):  # a closed or broken stream: the normal exit reports it as it always does
        sys.exit(code)
    os._exit(code)
