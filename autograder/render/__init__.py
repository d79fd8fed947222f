"""The edge: wording and pictures made from the results' structured fields (text grids, HTML pages, plots)."""
