"""Storage under the store: where the quads live.

- :mod:`.embedded`: a pyoxigraph store in this process, in memory or on disk;
- :mod:`.protocol`: any SPARQL 1.1 Protocol server (Oxigraph server, …), over httpx;
- :mod:`.virtuoso`: Virtuoso's dialect of the same protocol.

This layer sits below the store and above the RDF terms: it may import
:mod:`oms_rdf.errors`, :mod:`oms_rdf.codec` and :mod:`oms_rdf.rdf`, never the store.
"""

from __future__ import annotations

from .embedded import BULK_MARK, Backend, LocalBackend, bulk_writing

__all__ = ["BULK_MARK", "Backend", "LocalBackend", "bulk_writing"]
