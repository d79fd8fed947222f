"""The class: a batch of students graded, resumably, their results counted once, the gradebook and its deadlines,
the regrade diff, similarity for review, and the shards that split a class over machines."""
