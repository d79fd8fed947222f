"""Everything that touches student code: the worker that runs beside it, the wire format, process control.

``worker.py`` (and ``wire.py``, ``confine.py``, ``landlock.py`` and ``seccomp.py``, copied beside it)
is the only code that runs in the same process as the student's; it imports the standard library
and torch, nothing of this package. ``protocol.py`` is the seam the checks see (``Runner``,
``Reply``); ``runner.py``, ``processes.py``, ``cgroups.py``, ``seccomp_policy.py`` (the filter
``seccomp.py`` installs) and the rest are the grader's side of the boundary: they start, confine,
talk to and kill workers, and import nothing from grading, scoring or release (limits arrive as
plain values).
"""
