"""Storage under the store: where the quads live.

- :mod:`.base`: the :class:`Backend` protocol, every capability the store uses;
- :mod:`.embedded`: a pyoxigraph store in this process, in memory or on disk;
- :mod:`.protocol`: any SPARQL 1.1 Protocol server (Oxigraph server, …), over httpx;
- :mod:`.virtuoso`: Virtuoso's dialect of the same protocol.

This layer sits below the store and above the RDF terms: it may import
:mod:`oms_rdf.errors`, :mod:`oms_rdf.codec` and :mod:`oms_rdf.rdf`, never the store.
The server backends need httpx (the ``[remote]`` extra), so they are not imported here.
"""

from __future__ import annotations

from .base import Backend
from .embedded import BULK_MARK, LocalBackend

__all__ = ["BULK_MARK", "Backend", "LocalBackend"]
