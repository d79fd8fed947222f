"""What students and Gradescope receive, built from the single source in ``reference/``:
the student template, the nbgrader notebook (with its knowledge check), the Gradescope bundle."""
