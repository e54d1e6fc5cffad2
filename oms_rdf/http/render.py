"""The store's answers as the facts API and the MCP tools give them: JSON objects.

>>> from oms_rdf import Belief, GrainStore
>>> store = GrainStore()
>>> fact = fact_json(store, store.get(store.put(Belief("a", "b", "c", 0.5, created_at=0))))
>>> fact["status"], fact["namespace"], fact["valid_from"]
('active', 'shared', '1970-01-01T00:00:00.000Z')
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..codec.grain import Grain, system_from
from ..io import dumps_jsonl
from ..store import ErasureReport, EvidenceResult, GrainStore
from ..times import iso

__all__ = ["erasure_json", "evidence_json", "fact_json"]


def fact_json(
    store: GrainStore,
    grain: Grain,
    covers: Callable[[str | None], bool] | None = None,
) -> dict[str, Any]:
    """Return a fact as JSON: its fields, index state and times. ``covers``: the
    namespaces the caller may see (None: all); a successor outside them is not
    named (the fact says it was superseded, not by what), nor is a grain a
    change over a portion of valid time split it into."""
    state = store.status(grain.address)

    def shown(address: str) -> bool:
        return (
            covers is None
            or address not in store
            or covers(store.get(address).namespace)
        )

    successor = state.superseded_by
    if successor is not None and not shown(successor):
        successor = None
    fields = json.loads(
        dumps_jsonl(grain)
    )  # full names; {"$blob"} when only bytes keep it
    entered = system_from(grain)
    return {
        "id": grain.address,
        "type": grain.get("type"),
        "fields": fields,
        "namespace": grain.namespace,
        "status": state.status,
        "verification": state.verification,
        "superseded_by": successor,
        "split_into": [a for a in state.split_into if shown(a)],
        "effective_confidence": (
            state.effective_confidence
            if state.effective_confidence is not None
            else grain.get("confidence")
        ),
        "valid_from": _iso(grain.get("valid_from", entered)),
        "valid_to": _iso(grain.get("valid_to")),
        "system_from": _iso(entered),
        "system_to": _iso(state.system_to),
    }


def evidence_json(result: EvidenceResult) -> dict[str, Any]:
    """Return the state of a belief's sequential test after new evidence."""
    return {
        "id": result.address,
        "status": result.status,
        "log_ratio": result.log_ratio,
        "effective_confidence": result.effective_confidence,
        "changed": result.changed,
    }


def erasure_json(report: ErasureReport) -> dict[str, Any]:
    """Return what an erasure erased, and what remains."""
    return {
        "erased": report.erased,
        "held": report.held,
        "derived": report.derived,
        "complete": report.complete,
        "remaining": report.remaining,
    }


def _iso(ms: int | None) -> str | None:
    return None if ms is None else iso(ms)
