"""IRIs of the oms_rdf ontology (``ontology/oms.ttl``), as pyoxigraph terms.

A test checks that every ``oms:`` term here is declared in ``ontology/oms.ttl`` and
every term declared there is here.

>>> str(OMS.Belief)
'<https://w3id.org/oms-rdf/ns#Belief>'
"""

from __future__ import annotations

from pyoxigraph import NamedNode

__all__ = ["OMS", "PROV", "RDF", "RDFS", "XSD", "Namespace"]

OMS_NS = "https://w3id.org/oms-rdf/ns#"
DEFAULT_BASE = "https://w3id.org/oms-rdf/id/"
FIELD_NS = (
    "https://w3id.org/oms-rdf/field/"  # one property per otherwise unmapped field
)


class Namespace:
    """Attribute access to the IRIs of one namespace: ``OMS.Belief``."""

    def __init__(self, base: str, terms: tuple[str, ...]) -> None:
        self.base = base
        self.terms = terms
        for term in terms:
            setattr(self, term, NamedNode(base + term))

    def __getattr__(self, name: str) -> NamedNode:
        raise AttributeError(f"{self.base}{name} is not a term of this vocabulary")


RDF = Namespace(
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    ("type", "subject", "predicate", "object", "Statement", "JSON"),
)
RDFS = Namespace("http://www.w3.org/2000/01/rdf-schema#", ("label", "comment"))
XSD = Namespace(
    "http://www.w3.org/2001/XMLSchema#",
    ("string", "integer", "double", "boolean", "dateTime", "base64Binary"),
)
PROV = Namespace(
    "http://www.w3.org/ns/prov#",
    (
        "Entity",
        "wasDerivedFrom",
        "wasAttributedTo",
        "generatedAtTime",
        "invalidatedAtTime",
    ),
)

CLASSES = (
    "Grain", "Belief", "Event", "State", "Workflow", "Action", "Observation", "Goal",
    "Reasoning", "Consensus", "Consent", "Skill", "Recommendation", "Trigger",
    "AuditEvent", "Status", "VerificationStatus", "Evidence", "Journal",
)  # fmt: skip
# Properties of the grain projection (default graph).
GRAIN_PROPERTIES = (
    "typeString", "subjectText", "relationText",
    "objectText", "objectValue", "confidence", "importance", "sourceType", "createdAt",
    "validFrom", "validTo", "systemFrom",
    "namespace", "authorDid", "invalidationPolicy",
    "provenanceChain", "context", "tag", "relatedTo", "userId",
    "temporalType", "supersessionJustification", "epistemicStatus", "graph",
)  # fmt: skip
# related_to links as typed properties (the closed vocabulary of spec §14.3).
RELATED_PROPERTIES = {
    "similar": "similarTo", "contradicts": "contradicts", "elaborates": "elaborates",
    "generalizes": "generalizes", "temporal_next": "temporalNext",
    "temporal_prev": "temporalPrev", "causal": "causes", "supports": "supports",
    "refutes": "refutes", "replaces": "replaces", "depends_on": "dependsOn",
}  # fmt: skip
# Index layer, audit log and store settings.
INDEX_PROPERTIES = (
    "status", "verificationStatus", "supersededBy", "systemTo", "voidedAt",
    "invalidationType", "invalidationReason", "invalidationInitiator", "needsReview",
    "operation", "at", "actor", "target", "result", "reason", "count",
    "baseIri", "entityRelation", "blob", "envelope", "signedBy", "pendingErasure",
    "evidenceFor", "evidenceKind", "strength", "note", "logRatio", "sprtStatus", "sprtEntered",
    "effectiveConfidence", "conflictsWith",
    "erasedAt",  # a tombstone: in oms:index, so a flattened grain layer puts it back there
)  # fmt: skip
# The journal of a write in progress (store/journal.py); never exported.
JOURNAL_PROPERTIES = ("journalBefore", "journalGrain", "journalQuad")
# The audit log's hash chain (store/audit.py).
AUDIT_PROPERTIES = (
    "chain", "sequence", "previous", "hash", "auditHead", "auditChain",
    "holder",  # the write lock of a shared store (store/writelock.py)
)  # fmt: skip
INDIVIDUALS = (
    "active", "superseded", "retracted",
    "unverified", "verified", "contradicted", "disputed",
    "blobs", "index", "current", "audit", "grains", "settings", "journal", "writer", "statusScheme", "msgpack",
)  # fmt: skip

OMS = Namespace(
    OMS_NS,
    CLASSES
    + GRAIN_PROPERTIES
    + tuple(RELATED_PROPERTIES.values())
    + INDEX_PROPERTIES
    + JOURNAL_PROPERTIES
    + AUDIT_PROPERTIES
    + INDIVIDUALS,
)

# Grain class by type byte (spec type table); unknown bytes map to oms:Grain.
CLASS_BY_BYTE = {
    0x01: OMS.Belief, 0x02: OMS.Event, 0x03: OMS.State, 0x04: OMS.Workflow,
    0x05: OMS.Action, 0x06: OMS.Observation, 0x07: OMS.Goal, 0x08: OMS.Reasoning,
    0x09: OMS.Consensus, 0x0A: OMS.Consent, 0x0B: OMS.Skill, 0x0C: OMS.Recommendation,
    0x0D: OMS.Trigger,
}  # fmt: skip
