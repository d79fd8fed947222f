"""The hidden checks: plain pytest tests (``test_*.py``), run by autograder.grade against a student's worker,
and only what they need: inputs (cases), comparisons (expect), known mistakes, the integrity scan,
and the one proxy through which they reach student code (student)."""
