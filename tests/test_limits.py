"""The nesting limit of query text: the count of brackets that spares most texts a
reading must never change which texts are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oms_rdf import QueryError
from oms_rdf.rdf.limits import CACHED_TEXT_CHARS, MAX_DEPTH, check_query, nesting_depth

pieces = st.sampled_from(
    ["{", "}", "(", ")", "[", "]", " ?s ", '"{("', "<x:[>", "# {\n"]
)


@given(st.integers(0, 2 * MAX_DEPTH), st.lists(pieces, max_size=200))
def test_refused_exactly_when_the_brackets_nest_too_deep(
    around: int, parts: list[str]
) -> None:
    text = "{" * around + "".join(parts) + "}" * around
    if nesting_depth(text) > MAX_DEPTH:
        with pytest.raises(QueryError, match="MAX_DEPTH"):
            check_query(text)
    else:
        check_query(text)


def test_the_limit_itself_and_one_past_it() -> None:
    check_query("ASK " + "{" * MAX_DEPTH + "}" * MAX_DEPTH)
    with pytest.raises(QueryError, match="nests 65 levels"):
        check_query("ASK " + "{" * (MAX_DEPTH + 1) + "}" * (MAX_DEPTH + 1))
    check_query("ASK { " + "{} " * (MAX_DEPTH * 3) + "}")  # many brackets, shallow


def test_long_query_texts_are_answered_without_being_kept() -> None:
    """What the store works out from a query text (its rewrite, its check, its
    prefixes) is kept for texts up to CACHED_TEXT_CHARS only, so that a client
    cannot fill the process with the texts it sends."""
    from oms_rdf import Belief, GrainStore
    from oms_rdf.backends.embedded import LocalBackend
    from oms_rdf.rdf.tables import _declared
    from oms_rdf.store.knowledge import _checked
    from oms_rdf.store.rewrite import _rewritten

    class GrainLayerOnly(LocalBackend):
        intervals = False  # the rewrite onto the grain layer, and its cache

    store = GrainStore(backend=GrainLayerOnly())
    ex = "http://example.org/"
    store.put(Belief(ex + "ann", ex + "worksAt", ex + "acme", 0.9, created_at=1000))
    query = f"PREFIX ex: <{ex}> SELECT ?o WHERE {{ ex:ann ex:worksAt ?o }}"
    long = query + " #" + "x" * CACHED_TEXT_CHARS
    caches = (_rewritten, _checked, _declared)

    def asked() -> list[int]:  # how often each cache was looked in
        return [cache.cache_info().hits + cache.cache_info().misses for cache in caches]

    before = asked()
    for text in (long, long):
        rows = store.query(text, valid_at=2000, as_of=2000)
        assert [r["o"].value for r in rows] == [ex + "acme"]
    assert asked() == before
    with pytest.raises(QueryError, match="not valid SPARQL"):
        store.query(long.replace("WHERE {", "WHERE {{"), valid_at=2000, as_of=2000)
    rows = store.query(query, valid_at=2000, as_of=2000)
    assert [r["o"].value for r in rows] == [ex + "acme"]
    assert all(now > then for now, then in zip(asked(), before, strict=True))


def test_a_query_text_is_worked_on_once_unless_it_is_long() -> None:
    from oms_rdf.rdf.limits import text_cache

    seen: list[int] = []

    @text_cache
    def size(text: str) -> int:
        seen.append(len(text))
        return len(text)

    short, long = "ASK {}", "#" * (CACHED_TEXT_CHARS + 1)
    answers = [size(short), size(short), size(long), size(long)]
    assert answers == [6, 6, len(long), len(long)]
    assert seen == [6, len(long), len(long)]  # the long one is not kept
