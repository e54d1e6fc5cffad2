"""The store's public methods, each carried out by one of its parts."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class Delegated(Generic[P, R]):
    """A method of the store that one of its parts carries out.

    ``beliefs = Delegated("questions", Questions.beliefs)`` in the store's class
    makes ``store.beliefs(...)`` call ``store.questions.beliefs(...)``, with that
    method's signature (for type checkers and ``inspect``) and docstring (for
    ``help``), written once, where the work is done.
    """

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.name = method.__name__
        self.__doc__ = method.__doc__
        self.__wrapped__ = method  # inspect.signature follows it

    @overload
    def __get__(self, store: None, owner: type) -> Delegated[P, R]: ...

    @overload
    def __get__(self, store: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, store: object, owner: type | None = None) -> Any:
        if store is None:
            return self
        method: Callable[P, R] = getattr(getattr(store, self.part), self.name)
        return method

    def __repr__(self) -> str:
        return f"{self.name}{inspect.signature(self.__wrapped__)}, by .{self.part}"

    def __call__(self, store: object, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Called on the class, as ``GrainStore.beliefs(store, ...)``."""
        method: Callable[P, R] = self.__get__(store)
        return method(*args, **kwargs)
