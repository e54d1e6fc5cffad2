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

# Called as each long phase of a bulk write begins: "writing" with the number of
# grains to write, "compacting" with None (RocksDB tells nothing on the way). It
# may return a callable that is given the number of grains written, as they are.
Stage = Callable[[str, int | None], Callable[[int], object] | None]


class Bars:
    """A :data:`Stage` that shows each phase on stderr (click is imported when used).

    Use it as a context manager, so that the last bar is closed.
    """

    def __init__(self) -> None:
        self._bar: Any = None

    def __call__(self, name: str, total: int | None) -> Callable[[int], object] | None:
        self.close()
        import click

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
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
