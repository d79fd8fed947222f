"""The reference solution: the single source the student template and the notebook are built from."""
