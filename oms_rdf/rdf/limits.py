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
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

from ..errors import QueryError

__all__ = [
    "MAX_DEPTH",
    "MAX_QUERY_CHARS",
    "MAX_UPDATE_CHARS",
    "check_query",
    "nesting_depth",
    "text_cache",
]

T = TypeVar("T")

MAX_DEPTH = 64  # levels of (, [ and { together
MAX_QUERY_CHARS = 512 * 1024  # a query is text a person or a program writes
MAX_UPDATE_CHARS = 16 * 1024 * 1024  # INSERT DATA carries data: as big as a body
# Query texts up to this size are kept, with what is worked out from them (their
# rewrite, their check): 256 of them, at most a few MB, whatever a client sends.
CACHED_TEXT_CHARS = 16 * 1024


def text_cache(work: Callable[[str], T]) -> Callable[[str], T]:
    """``work`` of a query text, kept for the last 256 texts of up to
    :data:`CACHED_TEXT_CHARS` (a query asked again, at another point, as a
    dashboard asks it); a longer text is worked on each time. What ``work``
    returns is shared by every caller: it must not be changed."""
    kept = lru_cache(maxsize=256)(work)

    @wraps(work)
    def cached(text: str) -> T:
        return work(text) if len(text) > CACHED_TEXT_CHARS else kept(text)

    return cached


_EOL = re.compile(r"[\n\r]")
_OPENS, _CLOSES = frozenset("([{"), frozenset(")]}")
# SPARQL's IRIREF, with the \u and \U escapes the engine reads in it: anything
# else after a < is the less-than operator.
_IRI = re.compile(r"<(?:[^<>\"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>")
_LONG = {
    "'''": re.compile(r"'''(?:[^'\\]|\\.|'(?!''))*'''", re.DOTALL),
    '"""': re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL),
}
_SHORT = {
    "'": re.compile(r"'(?:[^'\\\n\r]|\\.)*'"),
    '"': re.compile(r'"(?:[^"\\\n\r]|\\.)*"'),
}


def nesting_depth(text: str, /) -> int:
    """Return the deepest nesting of brackets in SPARQL text, outside strings and
    comments; never less than the engine's own reading can nest (the one limit
    between a crafted text and a stack overflow).

    Where the engine may read otherwise, it counts more, never less: brackets
    inside an IRI count (after an operand the engine may read ``<`` as "less
    than", and what follows as brackets); a quote whose string does not close
    opens nothing (three quotes and one may be an empty string and a short
    one); a backslash escapes the next character (a name's ``\\#`` is no
    comment).

    >>> nesting_depth('SELECT * WHERE { FILTER(?o = "{{{" || ?o = <x:y>) } # {{{')
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
        elif c == "\\":
            i += 1  # an escaped character: none of the above
        elif c == "<" and (iri := _IRI.match(text, i)) is not None:
            for inner in iri.group():
                if inner in _OPENS:
                    depth += 1
                    deepest = max(deepest, depth)
                elif inner in _CLOSES:
                    depth = max(0, depth - 1)
            i = iri.end() - 1
        elif c in "'\"":
            closed = _string_end(text, i)
            if closed is not None:
                i = closed - 1
        i += 1
    return deepest


def _string_end(text: str, at: int) -> int | None:
    """Where the string starting at ``at`` ends: a long one, else a short one, as
    the engine tries them; None when neither closes."""
    for pattern in (_LONG.get(text[at : at + 3]), _SHORT[text[at]]):
        if pattern is not None and (found := pattern.match(text, at)) is not None:
            return found.end()
    return None


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
