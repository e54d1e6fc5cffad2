"""IRIs of the oms_rdf ontology (``ontology/oms.ttl``), as pyoxigraph terms.

A test checks that every ``oms:`` term here is declared in ``ontology/oms.ttl`` and
every term declared there is here.

>>> str(OMS.Belief)
'<https://w3id.org/oms-rdf/ns#Belief>'
"""

from __future__ import annotations

from pyoxigraph import NamedNode

__all__ = ["NO_GRAPH", "OMS", "PROV", "RDF", "RDFS", "XSD", "Namespace"]

OMS_NS = "https://w3id.org/oms-rdf/ns#"
DEFAULT_BASE = "https://w3id.org/oms-rdf/id/"
FIELD_NS = (
    "https://w3id.org/oms-rdf/field/"  # one property per otherwise unmapped field
)


# A graph the store never writes: named where a dataset must hold no graph.
NO_GRAPH = NamedNode(OMS_NS + "noGraph")


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


def names(text: str) -> tuple[str, ...]:
    """Return the names a table lists, separated by whitespace, in order.

    >>> names("Belief Event")
    ('Belief', 'Event')
    """
    return tuple(text.split())


# The grain classes in the order of their type bytes, 0x01 to 0x0D (spec type table).
GRAIN_CLASSES = names("""
    Belief Event State Workflow Action Observation Goal Reasoning Consensus Consent
    Skill Recommendation Trigger
""")
CLASSES = (
    "Grain",  # an application type's grain
    *GRAIN_CLASSES,
    *names("AuditEvent Status VerificationStatus Evidence Journal"),
)
# Properties of the grain projection (default graph).
GRAIN_PROPERTIES = names("""
    typeString subjectText relationText objectText objectValue confidence importance
    sourceType createdAt validFrom validTo systemFrom namespace authorDid
    invalidationPolicy provenanceChain context tag relatedTo userId temporalType
    supersessionJustification epistemicStatus graph
""")
# related_to links as typed properties (the closed vocabulary of spec §14.3).
RELATED_PROPERTIES = {
    "similar": "similarTo",
    "contradicts": "contradicts",
    "elaborates": "elaborates",
    "generalizes": "generalizes",
    "temporal_next": "temporalNext",
    "temporal_prev": "temporalPrev",
    "causal": "causes",
    "supports": "supports",
    "refutes": "refutes",
    "replaces": "replaces",
    "depends_on": "dependsOn",
}
# Index layer, audit log and store settings. erasedAt marks a tombstone: it is in
# oms:index, so a flattened grain layer puts it back there.
INDEX_PROPERTIES = names("""
    status verificationStatus supersededBy splitInto systemTo voidedAt invalidationType
    invalidationReason invalidationInitiator needsReview operation at actor target
    result reason count baseIri entityRelation forwardOnly blob envelope signedBy pendingErasure
    evidenceFor evidenceKind strength note logRatio sprtStatus sprtEntered
    effectiveConfidence conflictsWith erasedAt protectedBy subtreeHops
""")
# The journal of a write in progress (store/journal.py); never exported.
JOURNAL_PROPERTIES = ("journalBefore", "journalGrain", "journalQuad")
# The audit log's hash chain (store/audit.py); holder is the write lock of a
# shared store (store/writelock.py).
AUDIT_PROPERTIES = names("chain sequence previous hash auditHead auditChain holder")
# The SPARQL endpoint's service description (http/description.py).
SERVICE_TERMS = names(
    "TimeTravelParameter timeTravelParameter parameterName systemTimeSpan"
)
INDIVIDUALS = names("""
    active superseded retracted unverified verified contradicted disputed
    blobs index current audit grains settings journal writer statusScheme msgpack
""")

OMS = Namespace(
    OMS_NS,
    CLASSES
    + GRAIN_PROPERTIES
    + tuple(RELATED_PROPERTIES.values())
    + INDEX_PROPERTIES
    + JOURNAL_PROPERTIES
    + AUDIT_PROPERTIES
    + SERVICE_TERMS
    + INDIVIDUALS,
)

# Grain class by type byte (spec type table); unknown bytes map to oms:Grain.
CLASS_BY_BYTE = {
    byte: getattr(OMS, name) for byte, name in enumerate(GRAIN_CLASSES, start=1)
}
