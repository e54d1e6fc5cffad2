"""oms_rdf: Open Memory Specification grains as a bi-temporal RDF knowledge graph.

>>> import oms_rdf as oms
>>> g = oms.Belief("user", "prefers", "dark mode", 0.9, created_at=1768471200000)
>>> oms.decode(g.blob)["object"]
'dark mode'
"""

from __future__ import annotations

from typing import Any as _Any

from .codec import content_address, decode, encode, signing, verify
from .codec.grain import Belief, Grain
from .errors import (
    ConflictWarning,
    DecodeError,
    EncodeError,
    ErrorCode,
    IntegrityError,
    NotFoundError,
    OmsError,
    PolicyError,
    QueryError,
    SchemaError,
    SignatureError,
    StoreError,
    TimeRangeError,
)
from .notebook import plot
from .rdf.mapping import MappingSettings, grain_to_quads, quads_to_grain
from .store import (
    AuditReport,
    ErasureReport,
    EvidenceEvent,
    EvidenceResult,
    GrainStore,
    IndexState,
    QueryRow,
    Snapshot,
    Solutions,
    SubjectReport,
    Triples,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> _Any:
    """The server backends need httpx (the ``[remote]`` extra): imported when asked for."""
    if name == "SparqlBackend":
        from .backends.protocol import SparqlBackend

        return SparqlBackend
    if name == "VirtuosoBackend":
        from .backends.virtuoso import VirtuosoBackend

        return VirtuosoBackend
    raise AttributeError(f"module 'oms_rdf' has no attribute {name!r}")


__all__ = [
    "AuditReport",
    "Belief",
    "ConflictWarning",
    "DecodeError",
    "EncodeError",
    "ErasureReport",
    "ErrorCode",
    "EvidenceEvent",
    "EvidenceResult",
    "Grain",
    "GrainStore",
    "IndexState",
    "IntegrityError",
    "MappingSettings",
    "NotFoundError",
    "OmsError",
    "PolicyError",
    "QueryError",
    "QueryRow",
    "SchemaError",
    "SignatureError",
    "Snapshot",
    "Solutions",
    "SparqlBackend",
    "StoreError",
    "SubjectReport",
    "TimeRangeError",
    "Triples",
    "VirtuosoBackend",
    "__version__",
    "content_address",
    "decode",
    "encode",
    "grain_to_quads",
    "plot",
    "quads_to_grain",
    "signing",
    "verify",
]
