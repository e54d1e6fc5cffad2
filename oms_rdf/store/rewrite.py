"""Time travel where the data is: a query of the knowledge of a point, rewritten
onto the grain layer so that the store (a SPARQL server too) answers it.

The knowledge of a point is a set of triples, those of the beliefs in force there
(:mod:`oms_rdf.rdf.inforce`). Each triple pattern of the query becomes a subquery over the
grain nodes whose reified triple it matches and that are in force at the point
(:func:`grain_clause`): ``SELECT DISTINCT``, so a triple that two grains hold is
matched once, as in the knowledge. A property path is spelled out: a sequence
as a join through a new variable, an alternative as a UNION, an inverse by
swapping its ends, a negated property set as a filter on the predicate. The rest
of the query (expressions, modifiers, aggregates, the CONSTRUCT template) is
kept as written, and its blank nodes become variables that ``SELECT *`` leaves
out, as SPARQL does.

What SPARQL cannot say over reified triples gives None (:func:`why_not` says
which form), and the caller builds the point's knowledge and asks it there in
process, or refuses the query on a server: paths with ``*``, ``+`` or ``?`` (they
repeat an edge that must be in force at every step), DESCRIBE (the server would
describe the grain layer), FROM, SERVICE, RDF-star terms, a GRAPH pattern that
matches no triple of its own (it would list the graphs), and a VALUES block after
the pattern (Virtuoso 7 binds it without joining it to subqueries). The query is
valid SPARQL when it comes here (the caller has parsed it): a form this reader
does not know also gives None, never a different query.

>>> from oms_rdf.rdf.clause import grain_clause
>>> clause = grain_clause(None, None, ("work",))
>>> text = rewrite("SELECT ?o WHERE { <http://ex.org/a> <http://ex.org/p> ?o }", clause)
>>> text.count("SELECT DISTINCT ?o WHERE")
1
>>> rewrite("SELECT ?o WHERE { <http://ex.org/a> <http://ex.org/p>+ ?o }", clause) is None
True
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..rdf.clause import GrainClause
from ..rdf.inforce import EXTENT_VARIABLES
from ..rdf.limits import CACHED_TEXT_CHARS
from .paths import Path, PathReader
from .querytext import Token, UnreadableError, unambiguous_tokens

__all__ = ["rewrite", "why_not"]

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_FIRST, _REST, _NIL = (f"<{_RDF}{n}>" for n in ("first", "rest", "nil"))


def rewrite(query: str, clause: GrainClause, *, lateral: bool = False) -> str | None:
    """``query`` over the grain layer, each of its triples matched where ``clause``
    holds (:func:`grain_clause`); None where SPARQL cannot say it.

    With ``lateral`` (an engine that takes Oxigraph's ``LATERAL``), the triples
    of a block are matched the most bound first, each later one evaluated for
    each solution of those before it: a join then costs what the plain join
    costs, where two subqueries would each be evaluated whole."""
    if len(query) > CACHED_TEXT_CHARS:
        return _rewritten.__wrapped__(query, clause, lateral)
    return _rewritten(query, clause, lateral)


@lru_cache(maxsize=256)  # a query asked again at the same point, as a dashboard does
def _rewritten(query: str, clause: GrainClause, lateral: bool) -> str | None:
    if "_oms" in query:  # the names this rewrite gives its own variables
        return None
    try:
        return _Rewriter(query, clause, lateral=lateral).run()
    except UnreadableError:
        return None


def why_not(query: str, clause: GrainClause) -> str:
    """The form that keeps :func:`rewrite` from taking ``query``, in words
    (empty when it takes it)."""
    if "_oms" in query:
        return "a name with _oms in it (the rewrite names its own variables so)"
    try:
        _Rewriter(query, clause, lateral=False).run()
    except UnreadableError as exc:
        return str(exc)
    return ""


# A path: ("iri", text) | ("var", text) | ("inv", path) | ("seq", [path]) |
# ("alt", [path]) | ("neg", [(inverse, text)])


class _Rewriter(PathReader):
    def __init__(self, query: str, clause: GrainClause, *, lateral: bool) -> None:
        super().__init__(unambiguous_tokens(query))  # as the engine reads it
        self.text = query
        self.clause = clause
        self.lateral = lateral
        self.bound: dict[str, int] = {}  # an atom's text -> how bound its ends are
        self.edits: list[tuple[int, int, str]] = []
        self.fresh = 0
        self.labels: dict[str, str] = {}  # blank node label -> its variable
        self.inline = False  # inside EXISTS: see matched
        self.known: set[str] = set()  # inside EXISTS: variables bound by then
        self.atoms = 0  # triple patterns matched, to name their own variables
        self.spanned: list[int] = []  # in a range question, atoms whose extent shows

    def new_variable(self) -> str:
        self.fresh += 1
        return f"?_omsv{self.fresh}"

    # --- the query ------------------------------------------------------------------

    def run(self) -> str:
        while self.at_word("BASE", "PREFIX"):
            if self.next().is_word("PREFIX"):
                self.next()
            self.next()
        form = self.next()
        star: Token | None = None
        short: Token | None = None
        if form.is_word("SELECT"):
            star, _ = self.projection()
        elif form.is_word("CONSTRUCT"):
            if self.at_punct("{"):
                self.skip_braces()
            else:
                short = self.peek()
        elif not form.is_word("ASK"):
            raise UnreadableError(f"a {form.text} query")
        if self.at_word("FROM"):
            raise UnreadableError("a dataset of the query's own")
        if self.at_word("WHERE"):
            self.next()
        if not self.at_punct("{"):
            raise UnreadableError("no pattern where one was expected")
        open_brace = self.tokens[self.at]
        if not self.tokens[self.at - 1].is_word("WHERE"):
            # The store binds variables at the first WHERE: it must be this one.
            self.edits.append((open_brace.start, open_brace.start, "WHERE "))
        before = self.fresh
        scope = self.group(None)
        if self.clause.during is not None:  # the solution's extent, in its group
            close = self.tokens[self.at - 1]
            joined = self.clause.joined(self.spanned)
            self.edits.append((close.start, close.start, f" {joined} "))
            scope = [*scope, *(f"?{name}" for name in EXTENT_VARIABLES)]
            before = -1  # SELECT * names its variables: not the atoms' own
        if short is not None:  # CONSTRUCT WHERE { … }: the template is the pattern
            inner = self.text[open_brace.end : self.tokens[self.at - 1].start]
            if re.search(r"_:|\[", inner):
                raise UnreadableError("a blank node in a CONSTRUCT WHERE")
            self.edits.append((short.start, short.start, f"{{ {inner} }} "))
        self.modifiers(None, to_end=True)
        if star is not None and self.fresh > before:
            self.edits.append((star.start, star.end, self.listed(scope)))
        self.edits += _same_term_edits(self.tokens)
        return self.edited()

    def listed(self, scope: list[str]) -> str:
        """What ``SELECT *`` stands for once blank nodes are variables: its
        variables, by name (as Oxigraph lists them)."""
        if not scope:
            raise UnreadableError("SELECT * of blank nodes only")
        return " ".join(sorted(scope, key=lambda v: v[1:]))

    def edited(self) -> str:
        text = self.text
        for start, end, new in sorted(
            self.edits, key=lambda e: (e[0], e[1]), reverse=True
        ):
            text = text[:start] + new + text[end:]
        return text

    def projection(self) -> tuple[Token | None, list[str]]:
        """After SELECT: the ``*`` token, or the variables projected."""
        if self.at_word("DISTINCT", "REDUCED"):
            self.next()
        if self.at_punct("*"):
            return self.next(), []
        projected: list[str] = []
        while True:
            token = self.peek()
            if token is None or token.is_word("WHERE", "FROM") or token.text == "{":
                return None, projected
            if token.kind == "var":
                projected.append(self.next().text)
            elif token.text == "(":
                projected.append(self.parenthesised(None, bind=True) or "")
            else:
                raise UnreadableError(f"{token.text!r} in a projection")

    def modifiers(self, graph: str | None, *, to_end: bool) -> None:
        """Solution modifiers: kept, but for an EXISTS in them. Up to the end of
        the query, or of the group they close."""
        while (token := self.peek()) is not None:
            if not to_end and token.text == "}":
                return
            if token.is_word("EXISTS"):
                self.next()
                self.exists(graph)
            elif token.is_word("VALUES"):  # Virtuoso 7 binds it without joining
                raise UnreadableError("VALUES after the pattern")  # the subqueries
            else:
                self.next()

    def skip_braces(self) -> None:
        """A braced block kept as written: a CONSTRUCT template or VALUES data."""
        depth = 0
        while True:
            token = self.next()
            depth += (token.text == "{") - (token.text == "}")
            if token.kind == "punct" and depth == 0:
                return

    # --- group graph patterns -----------------------------------------------------------

    def group(self, graph: str | None) -> list[str]:
        """A group, its triples rewritten; the variables it binds, first seen first."""
        self.expect("{")
        if self.at_word("SELECT"):
            projected = self.subselect(graph)
            self.expect("}")
            return projected
        scope: list[str] = []
        while not self.at_punct("}"):
            token = self.peek()
            if token is None:
                raise UnreadableError("an unclosed group")
            if token.text == "{":
                scope += self.group(graph)
                while self.at_word("UNION"):
                    self.next()
                    scope += self.group(graph)
            elif token.is_word("OPTIONAL"):
                self.next()
                scope += self.group(graph)
            elif token.is_word("MINUS"):
                self.next()
                self.group(graph)
            elif token.is_word("GRAPH"):
                self.next()
                name = self.next()
                # The grain layer is no named graph: the group stays, its triples
                # matched in that graph (matched).
                self.edits.append((token.start, name.end, ""))
                if name.kind not in ("var", "iri", "pname"):
                    raise UnreadableError(f"GRAPH {name.text}")
                if name.kind == "var":
                    scope.append(name.text)
                if not self.holds_triples():
                    raise UnreadableError("a GRAPH pattern with no triple of its own")
                scope += self.group(name.text)
            elif token.is_word("FILTER"):
                self.next()
                self.constraint(graph)
            elif token.is_word("BIND"):
                self.next()
                scope.append(self.parenthesised(graph, bind=True) or "")
            elif token.is_word("VALUES"):
                self.next()
                scope += self.values()
            elif token.is_word("SERVICE"):
                raise UnreadableError("SERVICE")
            elif token.text == ".":
                self.next()
            else:
                scope += self.triples_block(graph)
        self.expect("}")
        return list(dict.fromkeys(scope))

    def holds_triples(self) -> bool:
        """Whether the group ahead starts with a triple pattern, which binds a
        GRAPH variable the way the graph's own triples do."""
        token = self.peek(1)
        return token is not None and self._starts_term(token)

    def subselect(self, graph: str | None) -> list[str]:
        if self.inline:
            raise UnreadableError("a subquery inside EXISTS")
        self.next()  # SELECT
        star, projected = self.projection()
        if self.at_word("WHERE"):
            self.next()
        before = self.fresh
        scope = self.group(graph)
        self.modifiers(graph, to_end=False)
        if star is None:
            return projected
        if self.fresh > before:
            self.edits.append((star.start, star.end, self.listed(scope)))
        return scope

    def values(self) -> list[str]:
        names = []
        if self.at_punct("("):
            self.next()
            while not self.at_punct(")"):
                names.append(self.next().text)
            self.next()
        else:
            names.append(self.next().text)
        self.skip_braces()
        return [n for n in names if n[0] in "?$"]

    def constraint(self, graph: str | None) -> None:
        if self.at_punct("("):
            self.parenthesised(graph)
        elif self.at_word("EXISTS"):
            self.next()
            self.exists(graph)
        elif self.at_word("NOT"):
            self.next()
            if not self.next().is_word("EXISTS"):
                raise UnreadableError("NOT without EXISTS")
            self.exists(graph)
        else:  # a function call: a name, then its arguments
            self.next()
            self.parenthesised(graph)

    def parenthesised(self, graph: str | None, *, bind: bool = False) -> str | None:
        """A parenthesised expression, kept but for the groups of its EXISTS; with
        ``bind``, the variable it is bound to (``(… AS ?v)``)."""
        self.expect("(")
        depth, last = 1, None
        while depth:
            token = self.next()
            if token.is_word("EXISTS"):
                self.exists(graph)
            elif token.text in ("{", "}"):
                raise UnreadableError(f"a brace in an expression at {token.start}")
            elif token.kind == "punct":
                depth += (token.text == "(") - (token.text == ")")
            if depth == 1 and token.kind == "var":
                last = token.text
        return last if bind else None

    # --- triples ------------------------------------------------------------------------

    def triples_block(self, graph: str | None) -> list[str]:
        start = self.peek().start  # type: ignore[union-attr]
        out: list[str] = []
        scope: list[str] = []
        while True:
            self.same_subject(graph, out, scope)
            if not self.at_punct("."):
                break
            self.next()
            token = self.peek()
            if token is None or not self._starts_term(token):
                break
        end = self.tokens[self.at - 1].end
        self.edits.append((start, end, self.joined(out)))
        return scope

    def joined(self, out: list[str]) -> str:
        """A block's atoms as one pattern: side by side, or (``lateral``) the
        most bound first, each later subquery evaluated with the bindings of
        those before it. The order of a join's operands does not change its
        solutions; a FILTER EXISTS applies to the whole group wherever it is."""
        if not self.lateral:
            return " ".join(out)
        if self.inline:  # in the written order, each atom led by a bound end
            groups = [t for t in out if t.startswith("{")]
            rest = [t for t in out if not t.startswith("{")]
            return " LATERAL ".join(groups) + " " + " ".join(rest)
        ordered = sorted(out, key=lambda text: -self.bound.get(text, 0))
        subqueries = [t for t in ordered if t.startswith("{")]
        filters = [t for t in ordered if not t.startswith("{")]
        return " LATERAL ".join(subqueries) + " " + " ".join(filters)

    @staticmethod
    def _starts_term(token: Token) -> bool:
        if token.kind in ("var", "iri", "pname", "string", "number", "bnode"):
            return True
        if token.kind == "punct":
            return token.text in ("[", "(", "+", "-", "<<")
        return token.is_word("TRUE", "FALSE")

    def same_subject(self, graph: str | None, out: list[str], scope: list[str]) -> None:
        nested = self.at_punct("[", "(")
        subject = self.node(graph, out, scope)
        if nested and not self._starts_verb():
            return  # a blank node or a list alone: its own triples are the pattern
        self.property_list(subject, graph, out, scope)

    def _starts_verb(self) -> bool:
        token = self.peek()
        if token is None:
            return False
        if token.kind in ("var", "iri", "pname"):
            return True
        if token.kind == "punct":
            return token.text in ("^", "(", "!")
        return token.kind == "word" and token.text == "a"

    def property_list(
        self, subject: str, graph: str | None, out: list[str], scope: list[str]
    ) -> None:
        while True:
            if self.peek() is not None and self.peek().kind == "var":  # type: ignore[union-attr]
                verb: Path = ("var", self.next().text)
                scope.append(verb[1])
            else:
                verb = self.path()
            while True:
                obj = self.node(graph, out, scope)
                self.emit(subject, verb, obj, graph, out)
                if not self.at_punct(","):
                    break
                self.next()
            if not self.at_punct(";"):
                return
            while self.at_punct(";"):
                self.next()
            if not self._starts_verb():
                return

    def node(self, graph: str | None, out: list[str], scope: list[str]) -> str:
        """A term of a triple, as text; a blank node or a list becomes a variable."""
        token = self.next()
        kind = token.kind
        if kind == "var":
            scope.append(token.text)
            return token.text
        if kind in ("iri", "pname", "number") or token.is_word("TRUE", "FALSE"):
            return token.text
        if kind == "string":
            if self.peek() is not None and self.peek().kind == "lang":  # type: ignore[union-attr]
                return token.text + self.next().text
            if self.at_punct("^^"):
                self.next()
                return f"{token.text}^^{self.next().text}"
            return token.text
        if kind == "punct" and token.text in ("+", "-"):
            number = self.next()
            if number.kind != "number":
                raise UnreadableError(f"{token.text} before {number.text}")
            return token.text + number.text
        if kind == "bnode":
            return self.labels.setdefault(token.text, self.new_variable())
        if token.text == "[":
            variable = self.new_variable()
            if not self.at_punct("]"):
                self.property_list(variable, graph, out, scope)
            self.expect("]")
            return variable
        if token.text == "(":
            items = []
            while not self.at_punct(")"):
                items.append(self.node(graph, out, scope))
            self.next()
            if not items:
                return _NIL
            cells = [self.new_variable() for _ in items]
            for i, (cell, item) in enumerate(zip(cells, items, strict=True)):
                rest = cells[i + 1] if i + 1 < len(cells) else _NIL
                self.emit(cell, ("iri", _FIRST), item, graph, out)
                self.emit(cell, ("iri", _REST), rest, graph, out)
            return cells[0]
        raise UnreadableError(f"{token.text!r} as a term")

    # --- what a triple becomes ----------------------------------------------------------

    def emit(
        self, s: str, path: Path, o: str, graph: str | None, out: list[str]
    ) -> None:
        kind = path[0]
        if kind in ("iri", "var"):
            out.append(self.matched(s, path[1], o, graph))
        elif kind == "inv":
            self.emit(o, path[1], s, graph, out)
        elif kind == "seq":
            ends = [s, *(self.new_variable() for _ in path[1][1:]), o]
            for i, step in enumerate(path[1]):
                self.emit(ends[i], step, ends[i + 1], graph, out)
        elif kind == "alt":
            branches = []
            for branch in path[1]:
                part: list[str] = []
                self.emit(s, branch, o, graph, part)
                branches.append("{ " + " ".join(part) + " }")
            out.append(self.once(branches, s, o, graph))
        else:  # a negated property set: the forward and the inverse ones
            sides = [
                (a, b, names)
                for inverse, (a, b) in ((False, (s, o)), (True, (o, s)))
                if (names := [text for inv, text in path[1] if inv == inverse])
            ]
            branches = []
            for a, b, names in sides:
                self.fresh += 1
                # One solution per triple, as Oxigraph gives for a set one way;
                # the predicate is kept apart by its name and not shown.
                p = f"?_omsnp{self.fresh}" if len(sides) > 1 else f"?_omsnq{self.fresh}"
                unnamed = f"FILTER ({p} NOT IN ({', '.join(names)}))"
                branches.append(self.matched(a, p, b, graph, unnamed))
            if len(branches) == 1:
                out.append(branches[0])
            else:  # both ways: an alternative, once per pair of ends
                out.append(self.once([f"{{ {b} }}" for b in branches], s, o, graph))

    def once(self, branches: list[str], s: str, o: str, graph: str | None) -> str:
        """An alternative's branches (each a group) as one UNION, one solution
        per binding of its ends (and graph), as Oxigraph answers a path
        alternative (pairs, not paths)."""
        if self.inline:
            return "{ " + " UNION ".join(branches) + " }"
        shown = [t for t in dict.fromkeys((s, o, graph or "")) if t[:1] in ("?", "$")]
        if not shown:
            # Nothing to bind: a variable of its own, one value, so that no branch
            # is a group of filters only (Virtuoso 7.2 finds EXISTS in such a group
            # true whatever it holds; see store/sparql.py GUARDED).
            self.fresh += 1
            shown = [f"?_omso{self.fresh}"]
            branches = [f"{{ VALUES {shown[0]} {{ true }} {b[1:]}" for b in branches]
        union = " UNION ".join(branches)
        return f"{{ SELECT DISTINCT {' '.join(shown)} WHERE {{ {union} }} }}"

    def matched(
        self, s: str, p: str, o: str, graph: str | None, extra: str = ""
    ) -> str:
        """One triple pattern over the grains that hold it: a subquery, DISTINCT
        so that a triple two grains hold is matched once. Inside EXISTS, where
        how often does not count and a subquery would not see the outer
        bindings, a group; with variables of its own, so that two never meet."""
        self.atoms += 1
        lead = None
        if self.inline and self.lateral:
            lead = self.lead(s, o, p)
            self.known.update(t for t in (s, p, o, graph or "") if t[:1] == "?")
        inner = self.clause.pattern(s, p, o, graph, self.atoms, lead=lead)
        if extra:
            inner += " " + extra
        ends = dict.fromkeys((s, p, o, graph or ""))
        shown = [t for t in ends if t[:1] in ("?", "$") and not t.startswith("?_omsnp")]
        if not self.inline and self.clause.during is not None:
            shown += self.clause.extent_of(self.atoms)
            self.spanned.append(self.atoms)
        if self.inline:
            return f"{{ {inner} }}"
        if not shown:
            return f"FILTER EXISTS {{ {inner} }}"
        text = f"{{ SELECT DISTINCT {' '.join(shown)} WHERE {{ {inner} }} }}"
        # A bound subject narrows most, then a bound object, then the relation.
        weights = zip((s, o, p), (4, 2, 1), strict=True)
        self.bound[text] = sum(w for end, w in weights if end[:1] not in ("?", "$"))
        return text

    def exists(self, graph: str | None) -> None:
        """The group of an EXISTS, its triples matched in place (see matched)."""
        outer, self.inline = self.inline, True
        known, self.known = self.known, self.known | self.outer_variables()
        self.group(graph)
        self.inline, self.known = outer, known

    def outer_variables(self) -> set[str]:
        """The variables of the group ahead that the query names outside it too:
        those an outer solution may bind when an EXISTS is asked of it."""
        depth, end = 0, self.at
        for end in range(self.at, len(self.tokens)):
            token = self.tokens[end]
            if token.kind == "punct" and token.text in "{}":
                depth += 1 if token.text == "{" else -1
                if depth == 0:
                    break
        inside = self.tokens[self.at : end + 1]
        outside = [*self.tokens[: self.at], *self.tokens[end + 1 :]]
        named = {t.text for t in outside if t.kind == "var"}
        return {t.text for t in inside if t.kind == "var"} & named

    def lead(self, s: str, o: str, p: str) -> int | None:
        """Inside EXISTS, where an engine with ``LATERAL`` finds an atom's grain
        nodes first (see GrainClause.pattern): its subject, else its object, when
        one is a constant or already bound, else its relation when that is a
        constant; None lets the engine choose."""
        for index, end in enumerate((s, o, p)):
            if end[:1] not in ("?", "$") or (index < 2 and end in self.known):
                return index
        return None


def _same_term_edits(tokens: list[Token]) -> list[tuple[int, int, str]]:
    """``sameTerm(?v, <iri>)`` written ``(?v = <iri>)``: the same test (an IRI
    equals no term but itself), which Virtuoso 7 keeps beside the subqueries;
    it took the sameTerm for a binding of ``?v`` there."""
    edits = []
    for i, token in enumerate(tokens[: len(tokens) - 5]):
        if not token.is_word("SAMETERM"):
            continue
        opened, a, comma, b, closed = tokens[i + 1 : i + 6]
        if (opened.text, comma.text, closed.text) != ("(", ",", ")"):
            continue
        kinds = sorted((a.kind, b.kind))
        if kinds in (["iri", "var"], ["pname", "var"]):
            edits.append((token.start, closed.end, f"({a.text} = {b.text})"))
    return edits
