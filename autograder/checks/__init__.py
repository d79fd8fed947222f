"""The hidden checks: plain pytest tests, run by autograder.grade against a student's worker."""
