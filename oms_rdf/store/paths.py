"""Reading a SPARQL property path into a tree, for the rewrite to spell out
(:mod:`.rewrite`): ``("iri", text)``, ``("var", text)``, ``("inv", path)``,
``("seq", [paths])``, ``("alt", [paths])`` and ``("neg", [(inverse, text)])``.
A path that repeats (``*``, ``+``, ``?``) is not read: each of its steps would
have to be in force, which no single pattern says.
"""

from __future__ import annotations

from typing import Any

from .querytext import TokenReader, UnreadableError

__all__ = ["Path", "PathReader"]

_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"

Path = tuple[Any, ...]


class PathReader(TokenReader):
    """A token reader that reads property paths."""

    def path(self) -> Path:
        branches = [self.sequence()]
        while self.at_punct("|"):
            self.next()
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Path:
        steps = [self.step()]
        while self.at_punct("/"):
            self.next()
            steps.append(self.step())
        return steps[0] if len(steps) == 1 else ("seq", steps)

    def step(self) -> Path:
        inverse = self.at_punct("^")
        if inverse:
            self.next()
        token = self.next()
        if token.kind in ("iri", "pname"):
            primary: Path = ("iri", token.text)
        elif token.kind == "word" and token.text == "a":
            primary = ("iri", _TYPE)
        elif token.text == "(":
            primary = self.path()
            self.expect(")")
        elif token.text == "!":
            primary = ("neg", self.negated())
        else:
            raise UnreadableError(f"{token.text!r} in a path")
        if self.at_punct("*", "+", "?"):
            raise UnreadableError("a path that repeats")
        return ("inv", primary) if inverse else primary

    def negated(self) -> list[tuple[bool, str]]:
        def one() -> tuple[bool, str]:
            inverse = self.at_punct("^")
            if inverse:
                self.next()
            token = self.next()
            if token.kind == "word" and token.text == "a":
                return inverse, _TYPE
            if token.kind not in ("iri", "pname"):
                raise UnreadableError(f"{token.text!r} in a negated property set")
            return inverse, token.text

        if not self.at_punct("("):
            return [one()]
        self.next()
        items = [one()]
        while self.at_punct("|"):
            self.next()
            items.append(one())
        self.expect(")")
        return items
