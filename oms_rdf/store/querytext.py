"""Reading SPARQL text: its tokens, and the dataset a query names.

The store reads a caller's query for two things without parsing it fully: the
graphs its ``FROM`` and ``FROM NAMED`` clauses name (:func:`dataset_clause`,
:func:`dataset_start`), and its triple patterns, to rewrite them onto the grain
layer (:mod:`.rewrite`). Both read tokens (:func:`tokenize`); what this reader
cannot read gives up (:class:`UnreadableError`) and the caller answers another way.

>>> [t.text for t in tokenize("SELECT ?s FROM <http://ex.org/g> { ?s ?p ?o }")][:3]
['SELECT', '?s', 'FROM']
>>> dataset_clause("SELECT * FROM NAMED <http://ex.org/g> { }", {})
([], ['http://ex.org/g'])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

__all__ = [
    "Token",
    "TokenReader",
    "UnreadableError",
    "check_unambiguous",
    "dataset_clause",
    "dataset_start",
    "tokenize",
    "unambiguous_tokens",
]

# Tokens, in the order they are tried. An IRI cannot hold a space, so `?a < ?b`
# reads as a comparison; what none of them matches makes the reader give up.
_TOKEN = re.compile(
    r"""(?P<space>[\x20\t\r\n]+|\#[^\n\r]*)
    |(?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
    |(?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
        |"(?:[^"\\\n\r]|\\.)*"|'(?:[^'\\\n\r]|\\.)*')
    |(?P<var>[?$][\w\u00b7\u0300-\u036f\u203f\u2040]+)
    |(?P<bnode>_:[\w\u00b7\u0300-\u036f\u203f\u2040.\-]+)
    |(?P<number>\d+\.\d*[eE][+-]?\d+|\.\d+[eE][+-]?\d+|\d+[eE][+-]?\d+|\d*\.\d+|\d+)
    |(?P<pname>(?:[^\W\d_][\w\u00b7\u0300-\u036f\u203f\u2040.\-]*)?:
        (?:[\w\u00b7\u0300-\u036f\u203f\u2040.\-:]|%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?\#@%])*)
    |(?P<word>[A-Za-z_]\w*)
    |(?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
    |(?P<punct>\^\^|&&|\|\||!=|<=|>=|<<|>>|[{}()\[\].,;*+?/|^!=<>\-])""",
    re.VERBOSE,
)
# Tokens that may end with a dot that is not theirs (it ends the triple).
_DOTTED = frozenset({"bnode", "pname"})


@dataclass(frozen=True, slots=True)
class Token:
    """One token of SPARQL text: its kind (a group name of the pattern above),
    its text and where it lies (character offsets)."""

    kind: str
    text: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        """Whether the token is one of these keywords (given in upper case)."""
        return self.kind == "word" and self.text.upper() in words


class UnreadableError(Exception):
    """Text this reader cannot read, or a query it cannot rewrite: the caller
    answers another way (the query's own parser says what is wrong with it)."""


class TokenReader:
    """Reads a query's tokens one at a time: what a reader of SPARQL text
    builds on. A token it does not expect raises :class:`UnreadableError`."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.at = 0

    def peek(self, ahead: int = 0) -> Token | None:
        i = self.at + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def next(self) -> Token:
        token = self.peek()
        if token is None:
            raise UnreadableError("the query ended early")
        self.at += 1
        return token

    def expect(self, text: str) -> Token:
        token = self.next()
        if token.text != text:
            raise UnreadableError(
                f"expected {text!r} at {token.start}, found {token.text!r}"
            )
        return token

    def at_punct(self, *texts: str) -> bool:
        token = self.peek()
        return token is not None and token.kind == "punct" and token.text in texts

    def at_word(self, *words: str) -> bool:
        token = self.peek()
        return token is not None and token.is_word(*words)


def tokenize(text: str) -> list[Token]:
    """The tokens of SPARQL text, spaces and comments left out.

    Raises:
        UnreadableError: where no token starts.
    """
    found: list[Token] = []
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None or match.lastgroup is None:
            raise UnreadableError(f"no token at {at}")
        kind, end = match.lastgroup, match.end()
        if kind in _DOTTED:
            while text[end - 1] == "." and end - 1 > at:
                end -= 1
        if kind == "var":  # $x is ?x (SPARQL §19.8): one name, one variable
            found.append(Token(kind, "?" + text[at + 1 : end], at, end))
        elif kind != "space":
            found.append(Token(kind, text[at:end], at, end))
        at = end
    return found


# An IRI as the engine reads one: with \u and \U escapes (SPARQL §19.2).
_ENGINE_IRI = re.compile(
    r"<(?:[^<>\"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>"
)
# What ends an operand: after one, inside an expression's parentheses, the engine
# reads "<" as "less than", not as the start of an IRI.
_OPERAND_KINDS = frozenset({"var", "string", "number", "iri", "bnode", "pname", "lang"})


def unambiguous_tokens(text: str) -> list[Token]:
    """The tokens of text the engine reads as this reader does (see
    :func:`check_unambiguous`).

    Raises:
        UnreadableError: where no token starts, or the two could read apart.
    """
    tokens = tokenize(text)
    check_unambiguous(text, tokens)
    return tokens


def check_unambiguous(text: str, tokens: Sequence[Token]) -> None:
    """Refuse text this reader and the engine could read apart, so that nothing
    the engine reads is left out of a rewrite:

    - a backslash outside a string (``\\u`` escapes in IRIs and names, which the
      engine reads and this reader does not);
    - an IRI right after an operand in an expression (``1 <#>``: the engine may
      read "less than" and a comment, or a string, where this reader reads an IRI);
    - a "<" this reader takes for an operator where the engine reads an IRI with
      escapes (a quote in it then opens a string for this reader alone).

    Raises:
        UnreadableError: for such text (the caller answers another way).
    """
    strings = [(t.start, t.end) for t in tokens if t.kind == "string"]
    at = text.find("\\")
    while at >= 0:
        if not any(start < at < end for start, end in strings):
            raise UnreadableError(f"a backslash outside a string at {at}")
        at = text.find("\\", at + 1)
    for token in tokens:  # "<" read as an operator where the engine reads an IRI
        if token.kind == "punct" and token.text in ("<", "<=", "<<"):
            if _ENGINE_IRI.match(text, token.start):
                raise UnreadableError(f"an IRI with escapes at {token.start}")
    frames: list[tuple[str, bool]] = []  # open brackets, and whether they hold data
    values = False  # VALUES read: its block holds data, not expressions
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token.is_word("VALUES"):
            values = True
        if token.kind == "iri" and frames and frames[-1] == ("(", False):
            if before is not None and _operand(before):
                raise UnreadableError(f"an IRI after an operand at {token.start}")
        if token.kind != "punct":
            continue
        if token.text in "{([":
            data = values or bool(frames and frames[-1][1])
            frames.append((token.text, data))
            values = False
        elif token.text in "})]" and frames:
            frames.pop()


def _operand(token: Token) -> bool:
    return (
        token.kind in _OPERAND_KINDS
        or token.is_word("TRUE", "FALSE")
        or (token.kind == "punct" and token.text in ")]")
    )


def dataset_clause(
    query: str, prefixes: Mapping[str, str]
) -> tuple[list[str], list[str]] | None:
    """The IRIs of a query's ``FROM`` and ``FROM NAMED`` clauses, or None when it
    has none (or cannot be read: then the query's own parser says what is wrong).

    ``prefixes``: those a query may use undeclared; its own ``PREFIX`` lines win.
    """
    if "from" not in query.lower():  # most queries: no need to read them
        return None
    try:
        tokens = tokenize(query)
    except UnreadableError:
        return None
    declared, base = dict(prefixes), ""
    default: list[str] = []
    named: list[str] = []
    depth, at = 0, 0
    while at < len(tokens):
        token = tokens[at]
        at += 1
        if token.text in ("{", "(", "["):
            depth += 1
        elif token.text in ("}", ")", "]"):
            depth -= 1
        elif depth == 0 and token.is_word("PREFIX") and at + 1 < len(tokens):
            name, target = tokens[at].text, tokens[at + 1].text
            declared[name.rstrip(":")] = urljoin(base, target[1:-1])
            at += 2
        elif depth == 0 and token.is_word("BASE") and at < len(tokens):
            base = urljoin(base, tokens[at].text[1:-1])
            at += 1
        elif depth == 0 and token.is_word("FROM") and at < len(tokens):
            into = default
            if tokens[at].is_word("NAMED"):
                into, at = named, at + 1
            if at >= len(tokens):
                return None
            iri = _iri_of(tokens[at], declared, base)
            if iri is None:
                return None
            into.append(iri)
            at += 1
    return (default, named) if default or named else None


def dataset_start(query: str) -> int | None:
    """Where a query's first ``FROM`` clause begins (a character offset), or None."""
    if "from" not in query.lower():
        return None
    try:
        tokens = tokenize(query)
    except UnreadableError:
        return None
    depth = 0
    for token in tokens:
        depth += (token.text in ("{", "(", "[")) - (token.text in ("}", ")", "]"))
        if depth == 0 and token.is_word("FROM"):
            return token.start
    return None


def _iri_of(token: Token, prefixes: Mapping[str, str], base: str) -> str | None:
    if token.kind == "iri":
        return urljoin(base, token.text[1:-1])
    if token.kind == "pname":
        prefix, local = token.text.split(":", 1)
        namespace = prefixes.get(prefix)
        return None if namespace is None else namespace + local
    return None
