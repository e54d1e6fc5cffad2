"""The index layer's rows for a grain leaving the current view (design §4):
superseded, retracted or contradicted, with when, why and by whom.

Rows are N-Triples texts, like a new grain's own rows (:meth:`.Core.rows_for`),
so that a batch of N changes converts no N quads to text before its write.
"""

from __future__ import annotations

from functools import lru_cache
from unicodedata import normalize

from ..rdf.mapping import Row, millis_literal, nt_literal
from ..rdf.sparql import ACTIVE, G_INDEX, P_STATUS
from ..rdf.vocab import OMS
from .state import IndexState

__all__ = ["split_rows", "superseded_rows", "voided_rows"]

_P_SUPERSEDED_BY, _P_SYSTEM_TO = str(OMS.supersededBy), str(OMS.systemTo)
_P_SPLIT_INTO = str(OMS.splitInto)
_P_INVALIDATION_TYPE = str(OMS.invalidationType)
_P_INITIATOR, _P_REASON = str(OMS.invalidationInitiator), str(OMS.invalidationReason)
_P_VOIDED_AT, _P_VERIFICATION = str(OMS.voidedAt), str(OMS.verificationStatus)


@lru_cache(maxsize=16)
def _status(name: str) -> str:
    """The IRI text of a status or verification status, by its local name."""
    return str(getattr(OMS, name))


def superseded_rows(
    node: str, successor: str, at: int, by: str | None, reason: str | None
) -> tuple[list[Row], list[Row]]:
    """The index rows a supersession deletes and inserts for the old grain's
    ``node``: closed at ``at``, replaced by the ``successor`` node."""
    idx = G_INDEX
    insert = [
        (node, P_STATUS, _status("superseded"), idx),
        (node, _P_SUPERSEDED_BY, successor, idx),
        (node, _P_SYSTEM_TO, str(millis_literal(at)), idx),
        (node, _P_INVALIDATION_TYPE, nt_literal("superseded"), idx),
    ]
    return [(node, P_STATUS, ACTIVE, idx)], insert + _why(node, by, reason)


def split_rows(node: str, parts: list[str]) -> list[Row]:
    """The index rows of a grain ``node`` that a change over a portion of its
    valid time replaced by ``parts`` (nodes): the new grain for the portion,
    and the pieces kept outside it. History follows them, and the in-force rule
    reads them as saying that ``node`` describes no valid time once closed."""
    return [(node, _P_SPLIT_INTO, part, G_INDEX) for part in parts]


def voided_rows(
    node: str,
    state: IndexState,
    operation: str,
    at: int,
    reason: str | None,
    by: str | None,
) -> tuple[list[Row], list[Row]]:
    """The index rows a retraction or contradiction at ``at`` deletes and
    inserts: the status (or the verification status) it replaces, the new one,
    the end of a current grain's system interval, and why and by whom (the
    first invalidation's only)."""
    idx, when = G_INDEX, str(millis_literal(at))
    insert = [(node, _P_VOIDED_AT, when, idx)]
    if state.is_current:
        insert.append((node, _P_SYSTEM_TO, when, idx))
    if operation == "retract":
        old = (node, P_STATUS, _status(state.status), idx)
        insert.append((node, P_STATUS, _status("retracted"), idx))
        kind = "retraction"
    else:
        old = (node, _P_VERIFICATION, _status(state.verification), idx)
        insert.append((node, _P_VERIFICATION, _status("contradicted"), idx))
        kind = "contradiction"
    if state.invalidation_type is None:
        insert.append((node, _P_INVALIDATION_TYPE, nt_literal(kind), idx))
        insert += _why(node, by, reason)
    return [old], insert


def _why(node: str, by: str | None, reason: str | None) -> list[Row]:
    """Who made the change and why, as the index records them."""
    rows = []
    if by is not None:
        rows.append((node, _P_INITIATOR, nt_literal(by), G_INDEX))
    if reason:
        rows.append((node, _P_REASON, nt_literal(normalize("NFC", reason)), G_INDEX))
    return rows
