"""The families ``calibcli report`` composes, by the name of their document: each one's
:class:`~calibcli.families.Family` (options dataclass, plan, finish). A new family that belongs on the report's
page is one entry here."""

from __future__ import annotations

from calibcli.families import binned, smooth, tcal

#: Families by document name, in the order the report runs them.
FAMILIES = {"ece": binned.FAMILY, "smece": smooth.FAMILY, "tcal": tcal.FAMILY}
