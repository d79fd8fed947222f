"""Everything that touches student code: the worker that runs beside it, the wire format, process control.

``worker.py`` (and ``wire.py``, copied beside it) is the only code that runs in the same
process as the student's; it imports the standard library and torch, nothing of this
package. ``runner.py`` and ``processes.py`` are the grader's side of the boundary: they start,
confine, talk to and kill workers, and import nothing from grading, scoring or release.
"""
