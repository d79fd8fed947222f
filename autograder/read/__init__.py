"""The read stage: the gate (``handed_in``), its bounded readers (``bounded``) and the rule that chooses the graded
file (``submission``)."""
