"""Putting grains into the store."""

from __future__ import annotations

from collections.abc import Iterable

from ..grain import Grain
from ..mapping import (
    Row,
)
from ._common import GrainLike, _rows
from .revising import Revising


class Writes(Revising):
    """put and put_many."""

    def put(self, item: GrainLike, /) -> str:
        """Store a grain; return its address. Storing the same bytes again is a no-op.

        Raises:
            DecodeError, EncodeError, SchemaError: the grain is invalid.
            PolicyError: ERR_INVALIDATION_DENIED when ``derived_from`` names a current
                protected grain with the same subject, relation and namespace: that
                is a supersession, which must go through :meth:`supersede`.
        """
        grain = self._grain(item)
        with self._lock:
            if grain.address in self:
                return grain.address
            self._check_put(grain)
            rows = self._new_rows(grain)
            rows += _rows(self._audit("put", target=grain.address))
            self._load(rows)
        return grain.address

    def put_many(
        self, items: Iterable[GrainLike], /, *, progress: bool = False
    ) -> list[str]:
        """Store many grains in one atomic write; return their addresses in order.

        Raises:
            as :meth:`put`; nothing is stored when any grain is refused.
        """
        grains = [self._grain(item) for item in items]
        with self._lock:
            rows: list[Row] = []
            seen: set[str] = set()
            fresh = []
            for grain in grains:
                if grain.address in seen or grain.address in self:
                    continue
                seen.add(grain.address)
                fresh.append(grain)
            batch = {g.address: g for g in fresh}
            iterator: Iterable[Grain] = fresh
            if progress:
                import click

                bar = click.progressbar(fresh, label="mapping grains", file=None)
                iterator = bar
            for grain in iterator:
                self._check_put(grain, batch)
                rows.extend(self._new_rows(grain))
            rows += _rows(self._audit("put_many", count=len(fresh)))
            self._load(rows)
        return [g.address for g in grains]
