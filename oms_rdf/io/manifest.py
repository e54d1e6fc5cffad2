"""Index state in a `.mg` manifest entry and a JSON line's ``$index`` (spec §11.3).

One home for the entry's shape, both ways: :func:`manifest_entry` makes a stored
grain's entry for an export, :func:`state_from_manifest` the index rows an import
writes from one. Besides the spec's keys (``sb``, ``svt``, ``vstatus``, ``itype``,
``ireason``, ``iinit``), an entry carries local ``oms_rdf:`` fields for what the
store has learnt: evidence, disputes, erasure marks, when a grain was voided, and
what a change over a portion of its valid time split it into.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pyoxigraph as ox

from ..codec import check_address
from ..errors import DecodeError, OmsError
from ..rdf.mapping import (
    NIH_PREFIX,
    Row,
    grain_iri,
    literal_value,
    millis_literal,
    nt_literal,
)
from ..rdf.vocab import OMS, RDF, XSD
from ..store import GrainStore, IndexState
from .records import row_of, term_text

# The spec's vstatus values (1.6); a dispute on a functional relation is ours
# (_MARKED_KEY), read in vstatus too, as 1.2-era files wrote it.
VERIFICATION_OUT = {"verified": "verified", "contradicted": "contested"}
VERIFICATION_IN = {
    "verified": "verified",
    "disputed": "disputed",
    "contested": "contradicted",
    "contradicted": "contradicted",
    "unverified": "unverified",
}
VOIDED_KEY = (
    "oms_rdf:voided"  # our extension: when a grain was retracted or contradicted
)
_MARKED_KEY = "oms_rdf:verification"  # ours: a mark vstatus cannot hold

# The index terms of the states an entry names; the defaults (active,
# unverified) are the absence of index rows, as the store writes them.
_STATUS_TERMS = {"superseded": OMS.superseded, "retracted": OMS.retracted}
_VERIFICATION_TERMS = {
    "verified": OMS.verified,
    "disputed": OMS.disputed,
    "contradicted": OMS.contradicted,
}
_TEXT_KEYS = (
    ("itype", OMS.invalidationType),
    ("ireason", OMS.invalidationReason),
    ("iinit", OMS.invalidationInitiator),
)
XSD_DOUBLE = XSD.double.value
_VOIDING = frozenset({"retracted", "contested", "contradicted"})


def state_from_manifest(address: str, entry: Mapping[str, Any]) -> list[Row]:
    """Index rows for one manifest entry (status and verification replace the defaults).

    Raises:
        DecodeError: ERR_CORRUPT for a value of the wrong type or an address
            that is not one (nothing is pasted into N-Quads unchecked).
    """
    node = f"<{NIH_PREFIX}{address}>"
    idx = str(OMS.index)
    rows: list[Row] = []
    for key, kind in _KINDS.items():
        _check_kind(address, entry, key, kind)
    vstatus = entry.get("vstatus")
    if (
        vstatus is not None
        and vstatus != "retracted"
        and vstatus not in VERIFICATION_IN
    ):
        raise DecodeError(
            f"vstatus of {address[:12]}… is {vstatus!r}; expected retracted or one "
            f"of {sorted(VERIFICATION_IN)}",
            path=f"manifest {address[:12]}… vstatus",
        )
    marked = entry.get(_MARKED_KEY, "unverified")
    if marked not in ("verified", "disputed", "unverified"):
        raise DecodeError(
            f"{_MARKED_KEY} of {address[:12]}… is {marked!r}; expected "
            "verified or disputed",
            path=f"manifest {address[:12]}… {_MARKED_KEY}",
        )
    if vstatus == "retracted":  # one spec value: the verification is ours
        status = "retracted"
        contradicted = entry.get("oms_rdf:contradicted")
        verification = "contradicted" if contradicted else marked
    else:
        status = "superseded" if "sb" in entry else "active"
        verification = VERIFICATION_IN.get(str(vstatus), marked)
    if status in _STATUS_TERMS:
        rows.append((node, str(OMS.status), str(_STATUS_TERMS[status]), idx))
    if verification in _VERIFICATION_TERMS:
        term = _VERIFICATION_TERMS[verification]
        rows.append((node, str(OMS.verificationStatus), str(term), idx))
    if "sb" in entry:
        successor = entry["sb"]
        if not isinstance(successor, str):
            raise DecodeError(
                f"sb of {address[:12]}… must be an address, not {successor!r}"
            )
        check_address(successor)  # never text pasted into N-Quads unchecked
        rows.append((node, str(OMS.supersededBy), f"<{NIH_PREFIX}{successor}>", idx))
    # Another writer's retraction has its time in svt only (the spec's key).
    voided = VOIDED_KEY if VOIDED_KEY in entry or vstatus not in _VOIDING else "svt"
    for key, prop in (("svt", OMS.systemTo), (voided, OMS.voidedAt)):
        if entry.get(key) is not None:
            rows.append((node, str(prop), str(millis_literal(entry[key])), idx))
    for key, prop in _TEXT_KEYS:  # ours since they are no index field of the spec's
        text = entry.get(f"oms_rdf:{key}", entry.get(key))
        if text is not None:
            rows.append((node, str(prop), nt_literal(text), idx))
    return rows + _evidence_rows(address, entry)


# The kinds of the spec's keys of an entry, and of the time this store adds.
_KINDS = {"svt": int, VOIDED_KEY: int, "vstatus": str} | {
    f"{ours}{key}": str for key, _ in _TEXT_KEYS for ours in ("", "oms_rdf:")
}


def _check_kind(address: str, entry: Mapping[str, Any], key: str, kind: type) -> None:
    """Refuse a key of an entry whose value is not of its kind (a bool is no int)."""
    value = entry.get(key)
    if value is not None and (type(value) is not kind):
        raise DecodeError(
            f"{key} of {address[:12]}… must be {kind.__name__}, not {value!r}",
            path=f"manifest {address[:12]}… {key}",
        )


def _evidence_rows(address: str, entry: Mapping[str, Any]) -> list[Row]:
    """Index rows for the local ``oms_rdf:`` fields an export adds (see export.py).

    Each value is checked for its type and written as a typed term, never pasted.
    """
    node, idx = grain_iri(address), OMS.index
    quads: list[ox.Quad] = []

    def field(key: str, kinds: type | tuple[type, ...]) -> Any:
        value = entry.get(key)
        if value is not None and (
            not isinstance(value, kinds) or isinstance(value, bool)
        ):
            raise DecodeError(
                f"{key} of {address[:12]}… must be {kinds}, not {value!r}",
                path=f"manifest {address[:12]}… {key}",
            )
        return value

    for key, prop in (
        ("oms_rdf:lr", OMS.logRatio),
        ("oms_rdf:ec", OMS.effectiveConfidence),
    ):
        if (value := field(key, (int, float))) is not None:
            quads.append(ox.Quad(node, prop, _double(value), idx))
    if (status := field("oms_rdf:sprt", str)) is not None:
        quads.append(
            ox.Quad(node, OMS.sprtStatus, ox.Literal(_one_of(status, _SPRT)), idx)
        )
    for status in field("oms_rdf:entered", list) or ():
        quads.append(
            ox.Quad(node, OMS.sprtEntered, ox.Literal(_one_of(status, _SPRT)), idx)
        )
    for key, prop in (
        ("oms_rdf:conflicts", OMS.conflictsWith),
        ("oms_rdf:split", OMS.splitInto),
        ("oms_rdf:protected", OMS.protectedBy),
    ):
        for other in field(key, list) or ():
            other = check_address(other if isinstance(other, str) else repr(other))
            quads.append(ox.Quad(node, prop, grain_iri(other), idx))
    for far in field("oms_rdf:hops", list) or ():
        marker, _, hops = far.partition(" ") if isinstance(far, str) else ("", "", "")
        if not hops.isdigit():
            raise DecodeError(f'oms_rdf:hops: expected "ADDRESS HOPS", found {far!r}')
        check_address(marker)
        quads.append(ox.Quad(node, OMS.subtreeHops, ox.Literal(far), idx))
    if (marked := field("oms_rdf:pe", int)) is not None:
        quads.append(ox.Quad(node, OMS.pendingErasure, millis_literal(marked), idx))
    for event in field("oms_rdf:evidence", list) or ():
        quads += _evidence_event(node, event, address)
    return [row_of(q) for q in quads]


_SPRT = ("accumulating", "promoted", "demoted")
_EVIDENCE_KINDS = ("supporting", "refuting")


def _one_of(value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise DecodeError(f"expected one of {list(allowed)}, found {value!r}")
    return str(value)


def _double(value: float) -> ox.Literal:
    return ox.Literal(repr(float(value)), datatype=ox.NamedNode(XSD_DOUBLE))


def _evidence_event(node: ox.NamedNode, event: Any, address: str) -> list[ox.Quad]:
    """The quads of one recorded observation, from its manifest map."""
    where = f"manifest {address[:12]}… oms_rdf:evidence"
    if not isinstance(event, Mapping) or not isinstance(event.get("id"), str):
        raise DecodeError("an evidence event must be a map with an id", path=where)
    try:
        iri = f"urn:uuid:{uuid.UUID(event['id'].removeprefix('urn:uuid:'))}"
        kind = _one_of(event.get("kind"), _EVIDENCE_KINDS)
        strength, at = float(event["strength"]), int(event["at"])
        log_ratio = float(event["lr"])
    except (KeyError, TypeError, ValueError, OmsError) as exc:
        raise DecodeError(f"a malformed evidence event: {exc}", path=where) from None
    subject, idx = ox.NamedNode(iri), OMS.index
    quads = [
        ox.Quad(subject, RDF.type, OMS.Evidence, idx),
        ox.Quad(subject, OMS.evidenceFor, node, idx),
        ox.Quad(subject, OMS.evidenceKind, ox.Literal(kind), idx),
        ox.Quad(subject, OMS.strength, _double(strength), idx),
        ox.Quad(subject, OMS.at, millis_literal(at), idx),
        ox.Quad(subject, OMS.logRatio, _double(log_ratio), idx),
    ]
    for key, prop in (("note", OMS.note), ("by", OMS.actor)):
        if isinstance(event.get(key), str):
            quads.append(ox.Quad(subject, prop, ox.Literal(event[key]), idx))
    return quads


def manifest_entry(store: GrainStore, address: str) -> dict[str, Any]:
    """One grain's manifest entry: its index state, compacted (empty: the default)."""
    state = store.status(address)
    entry: dict[str, Any] = {}
    if state.superseded_by is not None:
        entry["sb"] = state.superseded_by
    if state.system_to is not None:
        entry["svt"] = state.system_to
    if state.status == "retracted":
        entry["vstatus"] = "retracted"
    elif state.verification in VERIFICATION_OUT:
        entry["vstatus"] = VERIFICATION_OUT[state.verification]
    if state.verification in ("verified", "disputed") and (
        entry.get("vstatus") != state.verification
    ):
        entry[_MARKED_KEY] = state.verification  # a mark vstatus cannot hold
    if state.voided_at is not None:
        entry[VOIDED_KEY] = state.voided_at
        if state.status == "retracted" and state.verification == "contradicted":
            entry["oms_rdf:contradicted"] = True
    for key, value in (
        ("itype", state.invalidation_type),
        ("ireason", state.reason),
        ("iinit", state.initiator),
    ):
        if value is not None:  # the spec's keys of the superseding grain's blob
            entry[f"oms_rdf:{key}"] = value
    entry.update(_evidence_entry(store, state))
    return entry


def _evidence_entry(store: GrainStore, state: IndexState) -> dict[str, Any]:
    """The local (``oms_rdf:``) manifest fields: evidence, conflicts, erasure
    marks, splits, protection kept through an erasure.

    Spec §11.3 lets an exporter add local fields; these keep what the store has
    learnt about a grain when it travels as ``.mg`` or JSON Lines.
    """
    entry: dict[str, Any] = {}
    if state.log_ratio:
        entry["oms_rdf:lr"] = state.log_ratio
    if state.sprt_status != "accumulating":
        entry["oms_rdf:sprt"] = state.sprt_status
    if state.sprt_entered:
        entry["oms_rdf:entered"] = sorted(state.sprt_entered)
    if state.effective_confidence is not None:
        entry["oms_rdf:ec"] = state.effective_confidence
    if state.conflicts_with:
        entry["oms_rdf:conflicts"] = list(state.conflicts_with)
    if state.split_into:
        entry["oms_rdf:split"] = list(state.split_into)
    if state.protected_by:
        entry["oms_rdf:protected"] = list(state.protected_by)
    if state.subtree_hops:
        entry["oms_rdf:hops"] = list(state.subtree_hops)
    if state.pending_erasure is not None:
        entry["oms_rdf:pe"] = state.pending_erasure
    events = []
    node = ox.NamedNode(NIH_PREFIX + state.address)
    for quad in store.backend.quads(None, OMS.evidenceFor, node, OMS.index):
        event: dict[str, Any] = {"id": term_text(quad.subject)}
        for q in store.backend.quads(quad.subject, None, None, OMS.index):
            key = _EVIDENCE_KEYS.get(q.predicate.value)
            if key is not None:
                event[key] = literal_value(q.object)  # type: ignore[arg-type]
        events.append(event)
    if events:
        entry["oms_rdf:evidence"] = sorted(
            events, key=lambda e: (e.get("at", 0), e["id"])
        )
    return entry


_EVIDENCE_KEYS = {
    OMS.evidenceKind.value: "kind",
    OMS.strength.value: "strength",
    OMS.at.value: "at",
    OMS.logRatio.value: "lr",
    OMS.note.value: "note",
    OMS.actor.value: "by",
}
