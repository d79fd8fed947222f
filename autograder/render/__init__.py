"""The edge: wording and pictures made from the results' structured fields (text grids, HTML pages, plots).

render/ words the fields that course/, report.py and cli.py hand it, never the reverse: it imports nothing of
course/, report.py, grade.py or cli.py (tests/docs/test_layout.py). A class's results
(course.class_results.ClassResults), a regrade's changes (course.diff.Diff) and the similarity pass
(course.similarity.Similarity) come in as arguments and are read by their fields; the results record is
record.Result."""
