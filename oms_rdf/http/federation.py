"""Federated queries are refused by both servers: a ``SERVICE`` clause would make
the server fetch whatever IRI the client names.

>>> is_federated("SELECT * { SERVICE <http://elsewhere/sparql> { ?s ?p ?o } }")
True
>>> is_federated("SELECT * { ?s <x:service> ?o }")
False
"""

from __future__ import annotations

import re

__all__ = ["is_federated"]

_SERVICE = re.compile(r"\bSERVICE\s+(?:SILENT\s+)?[<?$\w]", re.IGNORECASE)


def is_federated(query: str, /) -> bool:
    """Return whether SPARQL text has a ``SERVICE`` clause (a federated query)."""
    return _SERVICE.search(query) is not None
