"""Moving whole stores in and out: RDF formats, ``.mg`` containers, JSON Lines.

Export formats:

- ``turtle``, ``ntriples``, ``rdfxml``: the plain knowledge held now (or of a
  bi-temporal point, or a namespace), with the exact terms the grains record;
  ``trig`` and ``nquads`` with ``grains=False`` too, named graphs kept.
- ``trig``, ``nquads``, ``jsonld``: the whole store, every graph (grains, index,
  audit, blobs, and the knowledge, which an import rebuilds from the grains).
- ``turtle``/``ntriples`` with ``grains=True``: the grain layer, its blobs and
  index state in one graph.
- ``turtle12``, ``trig12``: an RDF 1.2 view: the grain layer (``trig12``: every
  graph) plus ``<grain> rdf:reifies <<( s p o )>>`` for every belief.
- ``mg``: the OMS container with an index manifest; ``jsonl``: one grain a line.

Imports are all or nothing: a first pass reads and checks every record (a bad one
stops the import with its line or offset, unless ``skip_invalid``), a second pass
writes in atomic chunks, and a failure while writing removes what the import had
written. Sources are streamed, so files larger than memory import. RDF that is not
an oms_rdf export (no blobs in graph ``oms:blobs``) is adopted: each triple becomes a
belief (see :mod:`oms_rdf.io.adopt`).

rdflib is imported only inside the functions that need it.

Layer: io sits on the store and may import from it only what ``oms_rdf.store``
exports (an import writes through :class:`oms_rdf.store.BulkImport`), and from
``rdf``, ``codec``, ``times`` and ``errors``; never from ``http``, ``cli`` or
``notebook``. Modules: ``importing`` runs an import, with one plan per kind of
source (``jsonl_plan``, ``mg_plan``, ``dataset_plan``, ``adopt``; ``plans`` holds
what they share) and the fast ``restore``; ``export``, ``manifest`` (index state
in a manifest entry, both ways), ``tombstones``, ``jsonl``, ``container``
(``.mg``), ``formats``, ``sources`` (reading sources; ``entity_guard`` for
RDF/XML), ``layer`` and ``evidence`` (checks of an export's grain layer and
evidence), ``update`` (SPARQL Update as belief operations), ``bridge`` (rdflib).
"""

from __future__ import annotations

from .bridge import from_rdflib, to_rdflib
from .export import PLAIN_FORMATS, dumps_turtle, export
from .formats import FORMATS, format_for
from .importing import import_
from .jsonl import dumps_jsonl, loads_json_grain, too_many_digits
from .records import ImportReport

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
    "loads_json_grain",
    "to_rdflib",
    "too_many_digits",
]
