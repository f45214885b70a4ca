"""Reliability diagrams (``calibcli diagram``): the picture's data, the bands, the drawing, the placement of
legends, the accumulator and the family."""
