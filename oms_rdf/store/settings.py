"""The mapping settings a store records (``oms:settings`` in ``oms:index``).

The mapping is a function of a grain's blob and these settings (design §3): the
base IRI of entities and relations, and the relations whose text objects are
entities. A store records them when it is made; every later opening takes them,
and refuses others that would map the same grains to other terms.
"""

from __future__ import annotations

from pyoxigraph import Literal, Quad

from ..backends.base import Backend
from ..errors import ErrorCode, StoreError
from ..rdf.mapping import MappingSettings
from ..rdf.sparql import lexical_value
from ..rdf.vocab import DEFAULT_BASE, OMS

__all__ = ["mapping_settings"]


def mapping_settings(
    backend: Backend,
    base_iri: str | None,
    relations: frozenset[str],
    read_only: bool,
) -> MappingSettings:
    """The store's settings: those it records, or these (recorded now, unless
    the opening is read-only and the store holds nothing yet).

    Raises:
        StoreError: ERR_CONFLICT for a base IRI or entity relations other than
            those the store records.
    """
    node = OMS.settings
    stored_base = [
        lexical_value(q.object)
        for q in backend.quads(node, OMS.baseIri, None, OMS.index)
    ]
    stored_rel = frozenset(
        lexical_value(q.object)
        for q in backend.quads(node, OMS.entityRelation, None, OMS.index)
    )
    if stored_base:
        if base_iri is not None and base_iri != stored_base[0]:
            raise StoreError(
                f"this store was made with base IRI {stored_base[0]!r}, not {base_iri!r}; "
                "the mapping must stay a function of the blob and the store's settings",
                code=ErrorCode.CONFLICT,
            )
        if relations and relations != stored_rel:
            raise StoreError(
                f"this store was made with entity relations {sorted(stored_rel)}, "
                f"not {sorted(relations)}",
                code=ErrorCode.CONFLICT,
            )
        return MappingSettings(stored_base[0], stored_rel)
    settings = MappingSettings(base_iri or DEFAULT_BASE, relations)
    if read_only:
        return settings  # a store that holds nothing yet, seen read-only
    quads = [Quad(node, OMS.baseIri, Literal(settings.base_iri), OMS.index)]
    quads += [
        Quad(node, OMS.entityRelation, Literal(r), OMS.index) for r in sorted(relations)
    ]
    backend.add(quads)
    return settings
