"""Limits on what one query may cost before any parser sees it: its size and nesting.

The text check runs on the raw text before any parser: pyoxigraph's parser and our
rewrite recurse once per bracket level, so 1,000 nested ``{`` exhaust Python's
recursion limit and 3,000 overflow the native stack (a crash of the whole process,
not an exception). Brackets inside strings, IRIs and comments do not count.

>>> check_query("SELECT * WHERE { ?s ?p ?o }")
>>> check_query("ASK " + "{" * 65 + "}" * 65)
Traceback (most recent call last):
...
oms_rdf.errors.QueryError: ERR_QUERY: the query nests 65 levels of brackets; the limit is 64 (MAX_DEPTH)
"""

from __future__ import annotations

import re

from ..errors import QueryError

__all__ = [
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "MAX_UPDATE_CHARS",
    "check_query",
    "nesting_depth",
]

MAX_DEPTH = 64  # levels of (, [ and { together
MAX_QUERY_CHARS = 512 * 1024  # a query is text a person or a program writes
MAX_UPDATE_CHARS = 16 * 1024 * 1024  # INSERT DATA carries data: as big as a body
# Query texts up to this size are kept, with what is worked out from them (their
# rewrite, their check): 256 of them, at most a few MB, whatever a client sends.
CACHED_TEXT_CHARS = 16 * 1024

_EOL = re.compile(r"[\n\r]")
_OPENS, _CLOSES = frozenset("([{"), frozenset(")]}")
# SPARQL's IRIREF: anything else after a < is the less-than operator.
_IRI = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")
_LONG = {
    "'''": re.compile(r"'''(?:[^'\\]|\\.|'(?!''))*'''", re.DOTALL),
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL),
}
_SHORT = {
    "'": re.compile(r"'(?:[^'\\\n\r]|\\.)*'"),
    '"': re.compile(r'"(?:[^"\\\n\r]|\\.)*"'),
}


def nesting_depth(text: str, /) -> int:
    """Return the deepest nesting of brackets in SPARQL text, outside strings, IRIs
    and comments (an unclosed string or IRI ends the count: the parser reports it).

    >>> nesting_depth('SELECT * WHERE { FILTER(?o = "{{{" || ?o = <x:((>) } # {{{')
    2
    """
    depth = deepest = i = 0
    end = len(text)
    while i < end:
        c = text[i]
        if c in _OPENS:
            depth += 1
            deepest = max(deepest, depth)
        elif c in _CLOSES:
            depth = max(0, depth - 1)
        elif c == "#":  # to the end of its line, which a CR ends too (SPARQL's EOL)
            newline = _EOL.search(text, i)
            i = end if newline is None else newline.start()
        elif c == "<":
            iri = _IRI.match(text, i)
            if iri is not None:
                i = iri.end() - 1
        elif c in "'\"":
            pattern = _LONG.get(text[i : i + 3]) or _SHORT[c]
            literal = pattern.match(text, i)
            if literal is None:
                return deepest
            i = literal.end() - 1
        i += 1
    return deepest


def check_query(text: str, /, *, update: bool = False) -> None:
    """Refuse query (or update) text over the size or nesting limits.

    Raises:
        QueryError: ERR_QUERY naming the limit (MAX_QUERY_CHARS, MAX_UPDATE_CHARS
            or MAX_DEPTH) and what the text has.
    """
    if update:
        limit, name = MAX_UPDATE_CHARS, "MAX_UPDATE_CHARS"
    else:
        limit, name = MAX_QUERY_CHARS, "MAX_QUERY_CHARS"
    what = "update" if update else "query"
    if len(text) > limit:
        raise QueryError(
            f"the {what} has {len(text):,} characters; the limit is "
            f"{limit // 1024:,} KiB of text ({name})"
        )
    # No deeper than its brackets are many: most texts need no reading.
    opens = text.count("(") + text.count("[") + text.count("{")
    depth = nesting_depth(text) if opens > MAX_DEPTH else 0
    if depth > MAX_DEPTH:
        raise QueryError(
            f"the {what} nests {depth} levels of brackets; the limit is "
            f"{MAX_DEPTH} (MAX_DEPTH)"
        )
