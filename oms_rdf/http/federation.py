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

# SERVICE, then spaces or comments (which end at a CR or a LF), an optional
# SILENT, and the service: an IRI or a variable may follow with no space at all.
_GAP = r"(?:\s|#[^\n\r]*)"
_SERVICE = re.compile(
    rf"\bSERVICE(?:{_GAP}+(?:SILENT\b{_GAP}*)?[<?$\w]|(?:SILENT\b{_GAP}*)?[<?$])",
    re.IGNORECASE,
)


def is_federated(query: str, /) -> bool:
    """Return whether SPARQL text has a ``SERVICE`` clause (a federated query)."""
    return _SERVICE.search(query) is not None
