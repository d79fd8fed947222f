"""The hidden checks: plain pytest tests (modules ``check_*.py``, never named like the project's tests; functions
``test_*``), run by autograder.grade against a student's worker, and only what they need: inputs (cases),
comparisons (expect), known mistakes, the integrity scan, and the one proxy through which they reach student code
(student)."""
