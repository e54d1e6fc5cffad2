"""One transaction for a mix of operations: one atomic write, one system time.

A publication is puts, supersessions and retractions together; a reader, or a
crash, must never see half of one. Inside ``with store.transaction() as tx:``
every operation runs its checks as it always does, against the store as it was
when the transaction began, and hands its write to :class:`Pending` instead of
making it. Leaving the block writes them all in one atomic write, at the one
system time the transaction's clock was frozen at, with one audit event that
lists them; leaving it by an exception writes nothing.

An operation that changes a grain an earlier operation of the same transaction
created or changed is refused (ERR_CONFLICT): its checks could not see that
change. Erasure is not part of a transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pyoxigraph import Quad

from ..codec.grain import Grain
from ..errors import ErrorCode, StoreError
from ..rdf.mapping import NIH_PREFIX, Row
from ..rdf.sparql import as_rows
from ..rdf.vocab import OMS

__all__ = ["Pending", "refuse_made"]

_G_AUDIT, _G_BLOBS = str(OMS.audit), str(OMS.blobs)
_P_OPERATION, _P_TARGET = str(OMS.operation), str(OMS.target)
_P_RESULT, _P_REVIEW = str(OMS.result), str(OMS.needsReview)
_NODE_AT = len(NIH_PREFIX) + 1  # where the address starts in a node's "<nih:…>"


@dataclass
class Pending:
    """The writes of a transaction's operations, in order, not yet written."""

    delete: list[Row] = field(default_factory=list)
    insert: list[Row] = field(default_factory=list)
    current: list[str] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)  # grains created or changed
    closed: set[str] = field(default_factory=set)  # ``current``, to look up
    made: dict[str, Grain] = field(default_factory=dict)  # new grains, by address
    operations: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    review: list[str] = field(default_factory=list)

    def add(
        self,
        delete: Sequence[Quad | Row],
        insert: Sequence[Quad | Row],
        before: str,
        current: Sequence[str],
    ) -> None:
        """Take one operation's write (see ``Core.write``).

        Raises:
            StoreError: ERR_CONFLICT when it changes a grain the transaction
                already created or changed; ERR_STORE for an erasure.
        """
        if before:
            raise StoreError(
                "erasure is not part of a transaction: erase before or after it",
                code=ErrorCode.STORE,
            )
        rows = as_rows(insert)
        self._refuse_again(current)
        created = {r[0][_NODE_AT:-1] for r in rows if r[3] == _G_BLOBS}
        # None of ``current`` is listed yet: every listed grain is in ``changed``,
        # which ``current`` was just found not to meet (a list scan was quadratic).
        self.current += dict.fromkeys(current)
        self.closed.update(current)
        self.changed |= created | set(current)
        self.delete += as_rows(delete)
        # The operation's own audit event is not written: what it names joins
        # the transaction's one event (see event()).
        audit = [r for r in rows if r[3] == _G_AUDIT]
        self.insert += [r for r in rows if r[3] != _G_AUDIT] if audit else rows
        events: dict[str, tuple[str, list[str], list[str]]] = {}
        for s, p, o, _g in audit:
            _operation, targets, results = events.setdefault(s, ("", [], []))
            if p == _P_OPERATION:
                events[s] = (o, targets, results)
            elif p == _P_TARGET:
                targets.append(o)
            elif p == _P_RESULT:
                results.append(o)
            elif p == _P_REVIEW:
                self.review.append(o)
        self.operations += events.values()

    def touch(self, addresses: Sequence[str]) -> None:
        """Take grains an operation changes without replacing them (evidence, a
        verification mark): refused as :meth:`add` refuses, and listed.

        Raises:
            StoreError: ERR_CONFLICT when the transaction already created or
                changed one of them.
        """
        self._refuse_again(addresses)
        self.changed.update(addresses)

    def _refuse_again(self, addresses: Sequence[str]) -> None:
        again = self.changed.intersection(addresses)
        if again:
            raise StoreError(
                f"{sorted(again)[0][:12]}… was created or changed by an earlier "
                "operation of this transaction, whose checks could not see it; "
                "change it in a transaction of its own",
                code=ErrorCode.CONFLICT,
            )

    def event(self, rows: list[Row]) -> list[Row]:
        """The transaction's one audit event (``rows``: its own event's rows),
        listing every grain its operations targeted and made."""
        node = rows[0][0]
        listed = [
            (node, predicate, term, _G_AUDIT)
            for _op, targets, results in self.operations
            for predicate, terms in ((_P_TARGET, targets), (_P_RESULT, results))
            for term in terms
        ]
        review = [(node, _P_REVIEW, note, _G_AUDIT) for note in self.review]
        return [*rows, *dict.fromkeys(listed), *dict.fromkeys(review)]

    def summary(self) -> str:
        """What the transaction did, in order, for its audit event."""
        return "; ".join(op.strip('"') for op, _t, _r in self.operations)


def refuse_made(made: Iterable[str], ref: str) -> None:
    """Refuse a grain an open transaction made (``made``: the addresses its
    operations wrote so far), named by its address or a prefix: the
    transaction's checks see the store as it was, without it.

    Raises:
        StoreError: ERR_CONFLICT.
    """
    for address in made:
        if address.startswith(ref):
            raise StoreError(
                f"{address[:12]}… is made by an earlier operation of this "
                "transaction and is not written until it ends; change it in a "
                "transaction of its own",
                code=ErrorCode.CONFLICT,
            )
