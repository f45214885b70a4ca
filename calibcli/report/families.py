"""The families ``calibcli report`` composes, by the name of their document: each one's
:class:`~calibcli.core.family.Family` (options dataclass, plan, finish). A new family that belongs on the report's
page is one entry here."""

from __future__ import annotations

from calibcli.ece_family import family as binned
from calibcli.smooth import family as smooth
from calibcli.tcal import family as tcal

#: Families by document name, in the order the report runs them.
FAMILIES = {"ece": binned.FAMILY, "smece": smooth.FAMILY, "tcal": tcal.FAMILY}
