"""Blank nodes as a query sees them: blank nodes, though the store keeps skolem IRIs.

The store keeps a blank node as an IRI under :data:`~oms_rdf.rdf.terms.GENID`
(see :mod:`oms_rdf.rdf.terms`), and answers give it back as a blank node. Inside
a query the few expressions that tell a blank node from an IRI are rewritten so
that they tell it too, whatever runs the query (pyoxigraph, a SPARQL server):

- ``isBlank(e)`` is true, ``isIRI(e)`` and ``isURI(e)`` false, for a skolem IRI;
- each ``ORDER BY`` condition is preceded by one that puts unbound (and errors)
  first, then blank nodes, then everything else (SPARQL 1.1 §15.1: unbound,
  blank nodes, IRIs, literals), in the condition's direction.

The other expressions see the skolem IRI (``STR`` gives its text where SPARQL
would raise an error; ``MIN``/``MAX`` order blank nodes among the IRIs). A query
with none of these words is kept as written; one this reader cannot read as the
engine does is refused (an answer that took stored blank nodes for IRIs would be
wrong without a word).

>>> text = as_blank_nodes("SELECT ?s WHERE { ?s ?p ?o FILTER(isIRI(?s)) }")
>>> "STRSTARTS(STR(?s)" in text
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import QueryError
from ..rdf.terms import GENID
from .knowledge import check_valid
from .querytext import Token, UnreadableError, unambiguous_tokens

__all__ = ["as_blank_nodes", "seen_as_blank"]

_WORTH = re.compile(r"(?i)\b(isBlank|isIRI|isURI|ORDER)\b")
_TESTS = frozenset({"ISBLANK", "ISIRI", "ISURI"})
_PREFIX = f'"{GENID}"'


def skolem_test(e: str) -> str:
    """True for a skolem IRI, false for another term, an error for none."""
    return f"(isIRI({e}) && STRSTARTS(STR({e}), {_PREFIX}))"


def blank_test(e: str) -> str:
    """``isBlank`` as the user means it: a blank node, or a stored one."""
    return f"(isBlank({e}) || {skolem_test(e)})"


def iri_test(e: str) -> str:
    """``isIRI`` as the user means it: an IRI that is no stored blank node."""
    return f"(isIRI({e}) && !STRSTARTS(STR({e}), {_PREFIX}))"


def order_key(e: str) -> str:
    """-1 for unbound (or an error), 0 for a blank node, 1 for any other term."""
    return f"COALESCE(IF({blank_test(e)}, 0, 1), -1)"


def as_blank_nodes(query: str) -> str:
    """``query`` with its blank-node tests and orderings seeing skolem IRIs as
    blank nodes (see the module); as written when there is nothing to change.

    Raises:
        UnreadableError: for a text with such a test or ordering that this
            reader cannot read as the engine does.
    """
    if not _WORTH.search(query):
        return query
    tokens = unambiguous_tokens(query)  # else a string might be rewritten
    try:
        return _Writer(query, tokens).span(0, len(tokens))
    except IndexError:  # an unclosed parenthesis: the engine says where
        return query


def seen_as_blank(query: str, substitutions: Mapping[Any, Any]) -> str:
    """:func:`as_blank_nodes`, once the query is known to be valid SPARQL: a
    malformed one raises here, its line and column those of the text written.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL, or for a valid one whose
            blank-node tests or orderings cannot be read (never answered as if
            stored blank nodes were IRIs).
    """
    try:
        written = as_blank_nodes(query)
    except UnreadableError as exc:
        check_valid(query, substitutions)  # malformed: the engine's own words
        raise QueryError(
            "this query tests or orders blank nodes (isBlank, isIRI, isURI, ORDER "
            f"BY), and its text cannot be read to do so here ({exc}); write it "
            "without \\u escapes, or with SPARQL's own spaces and names"
        ) from None
    if written != query:
        check_valid(query, substitutions)
    return written


class _Writer:
    """Writes a span of tokens again, the text between them kept."""

    def __init__(self, text: str, tokens: list[Token]) -> None:
        self.text = text
        self.tokens = tokens

    def closing(self, at: int) -> int:
        """The index of the token closing the parenthesis at ``at``."""
        depth = 0
        for i in range(at, len(self.tokens)):
            text = self.tokens[i].text
            if self.tokens[i].kind == "punct":
                depth += (text == "(") - (text == ")")
                if depth == 0:
                    return i
        raise UnreadableError(f"an unclosed parenthesis at {self.tokens[at].start}")

    def gap(self, i: int) -> str:
        """The text between token ``i - 1`` and token ``i`` (spaces, comments)."""
        start = self.tokens[i - 1].end if i else 0
        return self.text[start : self.tokens[i].start]

    def span(self, start: int, end: int) -> str:
        """Tokens ``start`` to ``end`` (excluded), rewritten; the text before the
        first is not included, the text after the last (to the end) when ``end``
        is the last token."""
        out: list[str] = []
        i = start
        while i < end:
            if i > start:
                out.append(self.gap(i))
            token = self.tokens[i]
            if self.is_call(i) and token.text.upper() in _TESTS:
                close = self.closing(i + 1)
                e = self.span(i + 2, close)
                test = blank_test if token.text.upper() == "ISBLANK" else iri_test
                out.append(test(e))
                i = close + 1
            elif (
                token.is_word("ORDER")
                and i + 1 < end
                and self.tokens[i + 1].is_word("BY")
            ):
                written, i = self.order_by(i + 2, end)
                out.append(f"{token.text} BY {written}")
            else:
                out.append(token.text)
                i += 1
        if end == len(self.tokens) and end:
            out.append(self.text[self.tokens[end - 1].end :])
        return "".join(out)

    def is_call(self, i: int) -> bool:
        after = self.tokens[i + 1] if i + 1 < len(self.tokens) else None
        return self.tokens[i].kind == "word" and after is not None and after.text == "("

    def order_by(self, i: int, end: int) -> tuple[str, int]:
        """The conditions of an ORDER BY from token ``i``, each after its key;
        and the index of the first token after them."""
        conditions: list[str] = []
        while i < end:
            token = self.tokens[i]
            direction = ""
            if token.is_word("ASC", "DESC") and self.is_call(i):
                direction = token.text.upper()
                close = self.closing(i + 1)
                e = self.span(i + 2, close)
            elif token.text == "(" and token.kind == "punct":
                close = self.closing(i)
                e = self.span(i + 1, close)
            elif token.kind == "var":
                close, e = i, token.text
            elif (
                token.kind in ("word", "pname", "iri")
                and i + 1 < end
                and (self.tokens[i + 1].text == "(")
            ):
                if token.is_word("LIMIT", "OFFSET", "VALUES"):
                    break
                close = self.closing(i + 1)
                e = token.text + "(" + self.span(i + 2, close) + ")"
            else:
                break
            conditions.append(f"{direction}({order_key(e)}) {direction}({e})")
            i = close + 1
        if not conditions:
            raise UnreadableError("ORDER BY without a condition")
        return " ".join(conditions), i
