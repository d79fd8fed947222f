"""Everything that touches student code: the worker that runs beside it, the wire format, process control.

``student_side/`` (the worker and the modules it imports, copied whole beside it) is the only code that runs in the
same process as the student's; it imports the standard library and torch, nothing of this package. The modules
here are the grader's side of the boundary: ``protocol.py`` is the seam the checks see (``Runner``, ``Reply``);
``zygote.py`` and ``client.py``, ``processes.py``, ``cgroups.py``, ``seccomp_policy.py`` (the filter
``student_side/seccomp.py`` installs) and the rest start, confine, talk to and kill workers, and import nothing from
grading, scoring or release (limits arrive as plain values).
"""
