"""What runs beside the student: the only code of this project in the same process as the student's.

The rule for this folder: its modules import the standard library, torch and each other, nothing else (nothing of
the grader's, no other package; tests/docs/test_layout.py holds it). The grader copies the folder whole (every ``*.py``
in it but this one) into the worker's library folder (``zygote._library_folder``), where the worker imports them
as top-level modules (``import wire``): ``worker.py``, the zygote, forks a child per submission that
``serving.py`` runs, with ``blocking.py`` (fused attention, code built at run time and imports refused),
``recording.py`` (what the call ran and entered), ``confine.py`` (its sandbox, with ``landlock.py`` and
``seccomp.py``) and ``wire.py`` (the messages). A module added here goes beside the student with the others; the
grader's side of the boundary is the rest of ``autograder/sandbox/``.
"""
