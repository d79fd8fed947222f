"""What the assignment is, below every other layer (the standard library only): where its files live (``paths``), the
hidden checks' declared facts (``catalogue``) and when it is due, with what lateness costs (``deadline``)."""
