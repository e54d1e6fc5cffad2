"""The nesting limit of query text: the count of brackets that spares most texts a
reading must never change which texts are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oms_rdf import QueryError
from oms_rdf.rdf.limits import MAX_DEPTH, check_query, nesting_depth

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
