"""What an import is made of and reports: rows or quads, skipped records, the report."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph as ox

from ..errors import DecodeError, OmsError
from ..rdf.mapping import Row


@dataclass
class ImportReport:
    """What an import did: grains added, grains already held, triples already
    believed, records skipped."""

    added: int = 0
    held: int = 0  # grains of the source the store held already (not added again)
    believed: int = 0  # adopted triples the namespace already believed
    quads: int = 0  # quads of the grains written (the audit event not counted)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why)


Item = Row | ox.Quad  # grain sources build rows; RDF sources pass parsed quads on


def row_of(quad: ox.Quad) -> Row:
    g = "" if isinstance(quad.graph_name, ox.DefaultGraph) else str(quad.graph_name)
    return str(quad.subject), str(quad.predicate), str(quad.object), g


def fail_or_skip(report: ImportReport, skip: bool, where: str, exc: OmsError) -> None:
    if not skip:
        raise type(exc)(
            f"{where}: {exc.message}",
            code=exc.code,
            path=where if exc.path is None else f"{where} {exc.path}",
        ) from exc
    report.skipped.append((where, str(exc)))


def term_text(term: object) -> str:
    """The lexical value of an IRI, blank node or literal term.

    Raises:
        DecodeError: for a term that has none (an RDF 1.2 triple term).
    """
    if isinstance(term, ox.NamedNode | ox.BlankNode | ox.Literal):
        return term.value
    found = f"<<( {term} )>>" if isinstance(term, ox.Triple) else str(term)
    raise DecodeError(f"expected an IRI, a blank node or a literal, found {found}")
