"""The temporal questions: beliefs, history, derived grains."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

from pyoxigraph import (
    Literal,
    QuerySolutions,
    Variable,
)

from ..errors import ErrorCode, StoreError
from ..grain import Grain
from ..mapping import (
    address_of,
    grain_iri,
    literal_value,
    millis_literal,
)
from ..vocab import OMS
from ._common import _QUERIES, STATUSES, TimeLike, _to_millis, texts_query
from .base import StoreBase
from .lookup import chain_rows, subject_rows


class Questions(StoreBase):
    """What is believed, was true, was believed; how beliefs evolved."""

    def beliefs(
        self,
        subject: str | None = None,
        relation: str | None = None,
        *,
        namespace: str | None = None,
        valid_at: TimeLike = None,
        as_of: TimeLike = None,
        status: str | None = None,
    ) -> list[Grain]:
        """Return the beliefs true at ``valid_at`` as known at ``as_of``.

        Both default to now (design §5). "What did we believe at T" about the world
        at T is ``beliefs(valid_at=T, as_of=T)``; ``beliefs(as_of=T)`` asks what we
        believed at T about now. Ordered by effective confidence (earned by
        evidence), highest first.

        With ``status`` ("active", "superseded" or "retracted") the beliefs are
        listed by their index status instead, whatever their times (the listing
        semantics of REST memory APIs); it does not combine with the times.

        Raises:
            StoreError: ERR_SCHEMA for an unknown status, or status with a time.
        """
        if status is not None:
            if status not in STATUSES or valid_at is not None or as_of is not None:
                raise StoreError(
                    f"status lists by index status, one of {list(STATUSES)}, without "
                    f"valid_at/as_of; found status={status!r}",
                    code=ErrorCode.SCHEMA,
                )
            texts, bindings = _bound_texts(subject, relation, namespace)
            bindings[Variable("statusNode")] = getattr(OMS, status)
            query = texts_query("beliefs_by_status", texts)
            return self._grains(self.backend.query(query, bindings))
        known = _to_millis(as_of, self.clock)
        valid = _to_millis(valid_at, self.clock)
        if subject is None:
            return self._beliefs_query(subject, relation, namespace, valid, known)
        # One subject has a handful of grains: reading them by pattern is several
        # times faster than the query, with the same answer (see lookup.py).
        rows = subject_rows(self.backend, subject, relation, namespace,
                            valid_at=valid, as_of=known)  # fmt: skip
        return [self._grain_of(address_of(r.node), r.blob) for r in rows]

    def _beliefs_query(
        self,
        subject: str | None,
        relation: str | None,
        namespace: str | None,
        valid: int,
        known: int,
    ) -> list[Grain]:
        """:meth:`beliefs` by the general query ``beliefs.rq``."""
        texts, bindings = _bound_texts(subject, relation, namespace)
        bindings[Variable("asOf")] = millis_literal(known)
        bindings[Variable("validAt")] = millis_literal(valid)
        query = texts_query("beliefs", texts)
        return self._grains(self.backend.query(query, bindings))

    def count_beliefs(
        self, *, valid_at: TimeLike = None, as_of: TimeLike = None
    ) -> int:
        """Count the beliefs :meth:`beliefs` would return for these times (a snapshot size)."""
        known = _to_millis(as_of, self.clock)
        valid = _to_millis(valid_at, self.clock)
        bindings = {
            Variable("asOf"): millis_literal(known),
            Variable("validAt"): millis_literal(valid),
        }
        rows = list(self.backend.query(_QUERIES["beliefs_count"], bindings))
        return int(rows[0]["count"].value) if rows else 0

    def history(self, address: str | Grain) -> list[Grain]:
        """Return the supersession chain through a grain, oldest first (forks included)."""
        address = self._resolve(address)
        # A chain is a few grains: walking it by pattern beats the query (lookup.py).
        return self._chronological(chain_rows(self.backend, grain_iri(address)))

    def ancestors(self, address: str | Grain) -> list[Grain]:
        """Return the versions before a grain, first version first (not the grain itself)."""
        address = self._resolve(address)
        chain = []
        seen = {address}
        current = address
        while True:
            earlier = next(
                self.backend.quads(
                    None, OMS.supersededBy, grain_iri(current), OMS.index
                ),
                None,
            )
            if earlier is None:
                break
            current = str(earlier.subject)[1:-1].removeprefix("nih:sha-256;")
            if current in seen:
                break  # a cycle in imported index state; stop rather than loop
            seen.add(current)
            chain.append(self.get(current))
        return chain[::-1]

    def derived(self, address: str | Grain) -> list[Grain]:
        """Return the grains derived from a grain, transitively, oldest first."""
        address = self._resolve(address)
        solutions = self.backend.query(
            _QUERIES["derived"], {Variable("target"): grain_iri(address)}
        )
        return self._chronological(_triples(solutions))

    def _chronological(self, rows: Iterable[tuple[Any, Any, Any]]) -> list[Grain]:
        """The grains of ``(?g, ?sf, ?blob)`` rows, oldest system time first."""
        # Compare times as values: lexical forms differ ("…00Z" vs "…00.5Z").
        ordered = sorted(
            (literal_value(start), address_of(node), blob) for node, start, blob in rows
        )
        return [self._grain_of(address, blob) for _, address, blob in ordered]

    def _grains(self, solutions: QuerySolutions) -> list[Grain]:
        """The grains of query solutions; a projected ``?blob`` spares a lookup."""
        names = {v.value for v in solutions.variables}
        return [
            self._grain_of(
                address_of(row["g"]), row["blob"] if "blob" in names else None
            )
            for row in solutions
        ]

    def _grain_of(self, address: str, blob: Any) -> Grain:
        """A grain from a query row: its projected blob spares a lookup."""
        if blob is None or address in self._cache:
            return self.get(address)
        return self._remember(Grain.stored(base64.b64decode(blob.value), address))


def _bound_texts(
    subject: str | None, relation: str | None, namespace: str | None
) -> tuple[tuple[str, ...], dict[Variable, Any]]:
    """The text patterns to write, most selective first, and their bindings.

    Oxigraph keeps the written order of equally selective patterns, and binds only
    what the query projects, so only the bound texts are written.
    """
    bindings: dict[Variable, Any] = {}
    texts = []
    for name, value in (
        ("subject", subject),
        ("relation", relation),
        ("namespace", namespace),
    ):
        if value is not None:
            bindings[Variable(name)] = Literal(value)
            texts.append(name)
    return tuple(texts), bindings


def _triples(solutions: QuerySolutions) -> Iterator[tuple[Any, Any, Any]]:
    return ((row["g"], row["sf"], row["blob"]) for row in solutions)
