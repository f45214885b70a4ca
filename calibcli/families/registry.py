"""The families ``calibcli report`` composes, by the name of their document: each one's module (its
``plan``). A new family that belongs on the report's page is one entry here."""

from __future__ import annotations

from calibcli.families import binned, smooth, tcal

#: Family modules by document name, in the order the report runs them.
FAMILIES = {"ece": binned, "smece": smooth, "tcal": tcal}
