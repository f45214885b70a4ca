"""A candidate against a baseline (``calibcli compare``): the paired bootstrap, the comparison run over
both inputs and the family."""
