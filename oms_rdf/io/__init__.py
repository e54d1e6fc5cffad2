"""Moving whole stores in and out: RDF formats, ``.mg`` containers, JSON Lines.

Export formats:

- ``trig``, ``nquads``: the whole store, every graph (index, audit, blobs).
- ``turtle``: the knowledge only (default graph, no blobs); every grain still comes
  back byte for byte through :func:`oms_rdf.quads_to_grain`.
- ``jsonld``: the whole store as JSON-LD (RDF 1.1).
- ``turtle12``, ``trig12``: an RDF 1.2 view: as ``turtle`` / ``trig``, plus
  ``<grain> rdf:reifies <<( s p o )>>`` for every belief.
- ``mg``: the OMS container with an index manifest; ``jsonl``: one grain a line.

Imports are all or nothing: a first pass reads and checks every record (a bad one
stops the import with its line or offset, unless ``skip_invalid``), a second pass
writes in atomic chunks, and a failure while writing removes what the import had
written. Sources are streamed, so files larger than memory import; a Turtle file
is first loaded into a staging store on disk to group each grain's triples.
A Turtle or N-Triples graph that is not ours (no ``oms:contentAddress``) is
adopted: each triple becomes a belief grain (``source_type: "imported"``).

rdflib is imported only inside the functions that need it.
"""

from __future__ import annotations

from ._common import FORMATS, ImportReport, dumps_jsonl, format_for
from .bridge import from_rdflib, to_rdflib
from .export import PLAIN_FORMATS, dumps_turtle, export
from .importing import import_

__all__ = [
    "FORMATS",
    "PLAIN_FORMATS",
    "ImportReport",
    "dumps_jsonl",
    "dumps_turtle",
    "export",
    "format_for",
    "from_rdflib",
    "import_",
    "to_rdflib",
]
