"""Long bulk writes shown on stderr: a bar per phase that counts, a line for one that cannot.

>>> with Bars() as stage:
...     tick = stage("writing", 3)
...     tick(3)
...     stage("compacting", None)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click


class Bars:
    """A :data:`oms_rdf.store.progress.Stage` that shows each phase on stderr.

    Use it as a context manager, so that the last bar is closed.
    """

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, name: str, total: int | None) -> Callable[[int], object] | None:
        """Close the bar of the phase before; open one for ``name`` (a line if no total)."""
        self.close()
        if total is None:
            click.echo(f"{name} the store…", err=True)
            return None
        self._bar = click.progressbar(
            length=total, label=f"{name} grains", file=sys.stderr
        )
        self._bar.__enter__()
        update: Callable[[int], object] = self._bar.update
        return update

    def close(self) -> None:
        """Close the open bar, if any."""
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
