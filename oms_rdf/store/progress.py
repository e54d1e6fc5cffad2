"""The callback a long bulk write reports its phases to (no output of its own).

A :data:`Stage` is called as each long phase begins: ``"mapping"`` or
``"writing"`` with the number of grains, ``"compacting"`` with None (RocksDB
tells nothing on the way). It may return a callable that is given the number of
grains done, as they are. The command line shows them as bars
(``oms_rdf.cli.progress.Bars``); this module imports nothing.

>>> said = []
>>> def stage(name: str, total: int | None) -> None:
...     said.append((name, total))
>>> stage("writing", 3)
>>> said
[('writing', 3)]
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Stage"]

Stage = Callable[[str, int | None], Callable[[int], object] | None]
