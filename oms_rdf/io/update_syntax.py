"""The data of a SPARQL Update request, read by pyoxigraph's parsers.

A request is split into its operations (``;`` outside any block, string, IRI or
comment), each known by its keywords. Only ``INSERT DATA``, ``DELETE DATA`` and
``[WITH <g>] DELETE { t } WHERE { t }`` over the same ground triples (what
rdflib's ``SPARQLUpdateStore`` writes for ``DELETE DATA``) are read; any other
form is refused before anything runs it. The whole request is then checked by
pyoxigraph's SPARQL parser, on an empty store of its own, so a malformed request
is refused with that parser's line and column. The quads of a DATA block are
read by pyoxigraph's TriG parser (its default-graph triples in ``{ }``, its
``GRAPH g { }`` blocks as they are, the request's ``PREFIX`` and ``BASE`` before
them), which keeps every lexical form as written (a store would canonicalise
``"042"^^xsd:integer``) and the order of the request.

Blank nodes get labels derived from the block's text and their order of first
appearance, so the same operation again asserts the same terms.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyoxigraph as ox

from ..errors import ErrorCode, QueryError, SchemaError
from ..rdf.terms import is_absolute_iri

__all__ = ["DataOperation", "data_operations"]

_STRING = "|".join(
    (
        r'"""(?:[^"\\]|\\.|"(?!""))*"""',
        r"'''(?:[^'\\]|\\.|'(?!''))*'''",
        r'"(?:[^"\\\r\n]|\\.)*"',
        r"'(?:[^'\\\r\n]|\\.)*'",
    )
)
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<comment>#[^\r\n]*)"
    f"|(?P<string>{_STRING})"
    r"|(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)"
    r"|(?P<open>\{)|(?P<close>\})|(?P<semi>;)"
    r"|(?P<word>[^\s{};<>\"'#]+)|(?P<other>.)",
    re.S,
)
_REFUSED_FORMS = {"LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY"}
_MODIFY = {"INSERT", "DELETE", "WITH"}
_MARK = "<urn:oms:create>"  # the one triple of the TriG that names a created graph
_WHY = (
    "is refused: only INSERT DATA (adopt triples as beliefs) and DELETE DATA "
    "(retract the beliefs that assert them) change this store, so that every "
    "change goes through the belief operations and policies"
)


@dataclass(frozen=True)
class DataOperation:
    """One INSERT DATA or DELETE DATA of a request: its quads, in its order; or
    a CREATE [SILENT] GRAPH: its graph."""

    kind: str  # "insert", "delete", "delete_where" (its WHERE: its own triples) or "create"
    quads: list[ox.Quad]
    graph: ox.NamedNode | None = None


class _Token(NamedTuple):  # a tuple: a request of N triples makes some 4N of them
    kind: str
    text: str
    start: int
    end: int


@dataclass
class _Op:
    """An operation's parts: words and IRIs outside blocks, and its blocks."""

    prologue: list[str]
    parts: list[_Token | list[_Token]] = field(default_factory=list)
    start: int = 0

    def keywords(self) -> list[str]:
        """Its words (upper case), with ``{}`` for a block and ``<>`` for an IRI."""
        return [
            "{}" if isinstance(p, list) else "<>" if p.kind == "iri" else p.text.upper()
            for p in self.parts
        ]


def data_operations(
    text: str,
    prefixes: Mapping[str, str] | None = None,
    base: str | None = None,
    default_alias: ox.NamedNode | None = None,
) -> list[DataOperation]:
    """Read an update request into its INSERT DATA and DELETE DATA quads, in order.

    ``prefixes``: prefixes the request may use without declaring them; ``base``:
    the IRI its relative IRIs resolve against (its own declarations win);
    ``default_alias``: a graph name that means the default graph.

    Raises:
        QueryError: ERR_QUERY for malformed SPARQL (with the parser's line and
            column) or any other update form.
        SchemaError: ERR_SCHEMA for a ``base`` that is no absolute IRI.
    """
    if base is not None and not is_absolute_iri(base):
        raise SchemaError(
            f"base_iri: expected an absolute IRI; found {base[:80]!r}", path="base_iri"
        )
    given = dict(prefixes or {})
    known = "".join(f"PREFIX {name}: <{iri}>\n" for name, iri in given.items())
    known = (f"BASE <{base}>\n" if base else "") + known
    ops = _split(text)
    try:  # other forms refused before any run: a LOAD would fetch
        plans = [_plan(text, op, known) for op in ops]
    except QueryError:
        if not _fetches(text):  # a malformed request: the parser says more
            _check_syntax(text, given, base, stop_at=ops[0].start if ops else 0)
        raise
    _check_syntax(text, given, base)
    return [_operation(kind, trig, default_alias) for kind, trig in plans]


def _operation(
    kind: str, trig: str, default_alias: ox.NamedNode | None
) -> DataOperation:
    quads = _read(trig)
    graph = quads[0].graph_name if quads else None
    if kind == "create" and isinstance(graph, ox.NamedNode):
        return DataOperation(kind, [], graph=graph)  # its one quad names it
    if default_alias is not None:
        quads = [
            ox.Quad(q.subject, q.predicate, q.object, _DEFAULT)
            if q.graph_name == default_alias
            else q
            for q in quads
        ]
    return DataOperation(kind, quads)


_DEFAULT = ox.DefaultGraph()


def _fetches(text: str) -> bool:
    """Whether running the request could reach another server (LOAD, SERVICE)."""
    words = (t.text.upper() for t in _tokens(text) if t.kind == "word")
    return any(word in ("LOAD", "SERVICE") for word in words)


def _tokens(text: str) -> list[_Token]:
    # tuple.__new__ spares the named tuple's own constructor, a Python call per
    # token; a request of N triples makes some 4N of them.
    make, token = tuple.__new__, _Token
    return [
        make(token, (kind, match.group(), match.start(), match.end()))
        for match in _TOKEN.finditer(text)
        if (kind := match.lastgroup or "other") != "space" and kind != "comment"
    ]


def _split(text: str) -> list[_Op]:
    """The request's operations, each with the prologue declared before it."""
    tokens = _tokens(text)
    prologue: list[str] = []
    ops: list[_Op] = []
    op = _Op(list(prologue))
    i = 0
    while i < len(tokens):
        token = tokens[i]
        keyword = token.text.upper() if token.kind == "word" else ""
        if token.kind == "semi":
            ops.append(op)
            op = _Op(list(prologue))
            i += 1
        elif keyword in ("PREFIX", "BASE") and not op.parts:
            size = 3 if keyword == "PREFIX" else 2
            declared = tokens[i : i + size]
            prologue.append(text[declared[0].start : declared[-1].end])
            op.prologue = list(prologue)
            i += size
        elif token.kind == "open":
            end = _matching(tokens, i)
            op.parts.append(tokens[i + 1 : end])
            i = end + 1
        else:
            if not op.parts:
                op.start = token.start
            op.parts.append(token)
            i += 1
    ops.append(op)
    return [op for op in ops if op.parts]


def _matching(tokens: list[_Token], i: int) -> int:
    """The index of the brace that closes the one at ``i`` (the end if none)."""
    depth = 0
    for j in range(i, len(tokens)):
        kind = tokens[j].kind
        depth += kind == "open"
        depth -= kind == "close"
        if depth == 0:
            return j
    return len(tokens)


def _plan(text: str, op: _Op, known: str = "") -> tuple[str, str]:
    """What an operation does, and the TriG document of its data.

    Raises:
        QueryError: ERR_QUERY for a form other than the DATA ones.
    """
    words = op.keywords()
    blocks = [p for p in op.parts if isinstance(p, list)]
    head = known + "\n".join(op.prologue) + "\n"
    if words in (["INSERT", "DATA", "{}"], ["DELETE", "DATA", "{}"]):
        return words[0].lower(), head + _trig(text, blocks[0])
    with_graph = words[:1] == ["WITH"] and len(words) > 1
    if (words[2:] if with_graph else words) == ["DELETE", "{}", "WHERE", "{}"]:
        graph = op.parts[1] if with_graph else None
        if not isinstance(graph, list):
            trig = _ground_delete(text, head, graph, blocks[0], blocks[1])
            if trig is not None:
                return "delete_where", trig
    if _creates(words) and not isinstance(graph_name := op.parts[-1], list):
        # No graph is kept empty here: creating one writes nothing (update.py).
        return "create", head + f"GRAPH {graph_name.text} {{ {_MARK} {_MARK} {_MARK} }}"
    first = words[0] if words else ""
    if first in _REFUSED_FORMS:
        name = first
    elif words[:2] == ["DELETE", "WHERE"]:
        name = "DELETE WHERE"
    elif first in _MODIFY:
        name = "DELETE/INSERT ... WHERE"
    else:
        line, column = _position(text, op.start)
        raise QueryError(
            f"not valid SPARQL Update: expected an update operation, found "
            f"{first or op.parts[0]!r} (line {line}, column {column})"
        )
    raise QueryError(f"{name} {_WHY}", code=ErrorCode.QUERY)


def _creates(words: list[str]) -> bool:
    """Whether an operation's words are ``CREATE [SILENT] GRAPH g``."""
    silent = words[1:2] == ["SILENT"]
    return len(words) == 3 + silent and words[0] == "CREATE" and words[-2] == "GRAPH"


def _trig(text: str, block: list[_Token]) -> str:
    """A DATA block as TriG: default-graph triples in ``{ }``, graphs as written."""
    pieces: list[str] = []
    segment: list[_Token] = []
    i = 0

    def close_segment() -> None:
        if segment:
            pieces.append("{ " + text[segment[0].start : segment[-1].end] + " }")
            segment.clear()

    while i < len(block):
        token = block[i]
        graph = token.kind == "word" and token.text.upper() == "GRAPH"
        if graph and i + 2 < len(block) and block[i + 2].kind == "open":
            close_segment()
            end = _matching(block, i + 2)
            last = block[min(end, len(block) - 1)]
            pieces.append(
                f"GRAPH {block[i + 1].text} " + text[block[i + 2].start : last.end]
            )
            i = end + 1
            if i < len(block) and block[i].text == ".":
                i += 1  # the optional "." after a graph block
            continue
        segment.append(token)
        i += 1
    close_segment()
    return "\n".join(pieces)


def _ground_delete(
    text: str,
    head: str,
    graph: _Token | None,
    template: list[_Token],
    where: list[_Token],
) -> str | None:
    """The TriG of ``DELETE { t } WHERE { t }`` over the same ground triples, else None."""

    def ground(block: list[_Token]) -> set[ox.Quad] | None:
        if not block or any(t.kind in ("open", "close") for t in block):
            return None
        body = text[block[0].start : block[-1].end]
        try:
            quads = list(ox.parse(head + "{ " + body + " }", format=ox.RdfFormat.TRIG))
        except SyntaxError:
            return None
        terms = [t for q in quads for t in (q.subject, q.predicate, q.object)]
        if any(not isinstance(t, ox.NamedNode | ox.Literal) for t in terms):
            return None
        return set(quads)

    deleted, matched = ground(template), ground(where)
    if not deleted or deleted != matched:
        return None
    body = text[template[0].start : template[-1].end]
    if graph is None:
        return head + "{ " + body + " }"
    return head + f"GRAPH {graph.text} {{ {body} }}"


def _check_syntax(
    text: str,
    prefixes: dict[str, str],
    base: str | None,
    *,
    stop_at: int | None = None,
    scratch: ox.Store | None = None,
) -> None:
    """Run the request (only DATA and CREATE operations by now) on an empty store of its own:
    pyoxigraph's SPARQL parser refuses what is not SPARQL Update. With
    ``stop_at`` (the first operation's offset, in a request of refused forms),
    parse it and run none of it: two operations put there stop the run (a graph
    created twice), so a ``... WHERE`` never costs what its evaluation would.

    ``scratch``: the empty store it runs on (a new one).

    Raises:
        QueryError: ERR_QUERY with the parser's line and column.
    """
    run = text if stop_at is None else text[:stop_at] + _STOP + text[stop_at:]
    try:
        (scratch or ox.Store()).update(run, base_iri=base, prefixes=prefixes)
    except SyntaxError as exc:
        message = str(exc)
        found = re.match(r"error at (\d+):(\d+): (.*)", message, re.S)
        if found is None:
            raise QueryError(f"not valid SPARQL Update: {message}") from None
        line, column = int(found.group(1)), int(found.group(2))
        if stop_at is not None and (line, column) > _position(text, stop_at):
            column -= len(_STOP) if line == _position(text, stop_at)[0] else 0
        why = found.group(3)
        if base is None and _relative_iri(text):
            why += " (the request writes a relative IRI: give it a BASE, or base_iri=)"
        raise QueryError(
            f"not valid SPARQL Update: {why} (line {line}, column {column})"
        ) from None
    except RuntimeError:
        pass  # it parsed; a graph created twice (taken as SILENT), or the stop
    except (OSError, ValueError) as exc:  # it parsed, and failed
        if stop_at is None:
            raise QueryError(f"SPARQL Update refused: {exc}") from None


# Two operations that stop a run once it has parsed: the second creates again
# the graph the first made, which fails.
_STOP = "CREATE GRAPH <urn:oms:stop> ; CREATE GRAPH <urn:oms:stop> ; "


def _relative_iri(text: str) -> bool:
    """Whether the request writes an IRI without a scheme."""
    iris = (t.text[1:-1] for t in _tokens(text) if t.kind == "iri")
    return any(_SCHEME.match(iri) is None for iri in iris)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _read(trig: str) -> list[ox.Quad]:
    """The quads of a DATA block's TriG, blank nodes labelled from its text."""
    digest = hashlib.sha256(trig.encode()).hexdigest()
    seen: dict[str, ox.BlankNode] = {}

    def label(term: Any) -> Any:
        if not isinstance(term, ox.BlankNode):
            return term
        if term.value not in seen:
            n = len(seen)
            text = "b" + hashlib.sha256(f"{digest}:{n}".encode()).hexdigest()[:32]
            seen[term.value] = ox.BlankNode(text)
        return seen[term.value]

    try:
        quads = list(ox.parse(trig, format=ox.RdfFormat.TRIG))
    except SyntaxError as exc:
        raise QueryError(f"cannot read the update's data: {exc}") from None
    if not any(
        isinstance(t, ox.BlankNode)
        for q in quads
        for t in (q.subject, q.object, q.graph_name)
    ):
        return quads
    return [
        ox.Quad(*(label(t) for t in (q.subject, q.predicate, q.object, q.graph_name)))
        for q in quads
    ]


def _position(text: str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of an offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1
