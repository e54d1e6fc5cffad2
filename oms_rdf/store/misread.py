"""The range questions a server that misreads OPTIONAL variables is not asked.

Virtuoso 7.2 evaluates expressions over an OPTIONAL's variables beside a FILTER
wrongly (a backend's ``exact_optionals`` is false). A range question rests on
such expressions: each triple's extent is bound from its grain's optional ends,
and a join's extent is the intersection of its triples'. There, a question with
its own OPTIONAL gave extents that end before they begin, and one of two triple
patterns lost solutions. Those are refused rather than answered wrong; a range
of one triple pattern answered as Oxigraph does in every story tried.
"""

from __future__ import annotations

from ..errors import QueryError
from .querytext import tokenize

__all__ = ["refuse_misread_range"]

# The grain node the rewrite matches a second triple pattern with (rdf/clause.py
# names atom n's variables "?_oms<name>_<n>", counting from 1).
_SECOND_PATTERN = "?_omsg_2"


def refuse_misread_range(exact_optionals: bool, sparql: str, rewritten: str) -> None:
    """Refuse a range question (``sparql``, rewritten onto the grain layer as
    ``rewritten``) that a server without exact optionals would answer wrong.

    Raises:
        QueryError: ERR_QUERY for one with an OPTIONAL or two triple patterns.
    """
    if exact_optionals:
        return
    if any(token.is_word("OPTIONAL") for token in tokenize(sparql)):
        found = "an OPTIONAL"
    elif _SECOND_PATTERN in rewritten:
        found = "two triple patterns"
    else:
        return
    raise QueryError(
        "expected a range question of one triple pattern, without OPTIONAL, on "
        f"this server, which misreads an OPTIONAL's variables; found {found}: "
        "ask each point (valid_at=) instead"
    )
