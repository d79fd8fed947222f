"""The nbgrader front end: the preprocessor that grades a notebook in place of Execute, the verdicts it writes into
the hidden cells, and the late-submission plugin that reads the course's deadlines."""
