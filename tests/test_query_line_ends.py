"""A SPARQL comment ends at a CR as at a LF (SPARQL 1.1 §19.4: a comment runs to
the end of the line, and a line ends at either): every reader of query text this
store has must agree with the engine, or a pattern hidden after a CR would run
unread by the namespace narrowing, the SERVICE screen or the nesting limit.
"""

from __future__ import annotations

import pytest

import oms_rdf as oms
from oms_rdf.http.federation import is_federated
from oms_rdf.rdf.limits import check_query

ENDS = ["\n", "\r", "\r\n"]


@pytest.fixture(scope="module")
def store() -> oms.GrainStore:
    store = oms.GrainStore()
    store.put(
        oms.Belief("alice", "password", "hunter2", 1.0, namespace="B", created_at=1)
    )
    store.put(oms.Belief("bob", "likes", "tea", 1.0, namespace="A", created_at=1))
    return store


@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("time", [{}, {"valid_at": "2999"}])
def test_a_pattern_after_a_comment_is_narrowed_like_any(
    store: oms.GrainStore, end: str, time: dict[str, str]
) -> None:
    # A LF closes the group: read as one comment, the pattern would be unseen.
    raw = f"SELECT ?o WHERE {{ # x{end} ?g rdf:object ?o \n}}"  # the grain layer
    plain = f"SELECT ?o WHERE {{ # x{end} ?s ?p ?o \n}}"
    assert list(store.query(raw, namespace="A", **time)) == []
    assert [r["o"].value for r in store.query(plain, namespace="A", **time)] == ["tea"]


@pytest.mark.parametrize("end", ENDS)
def test_service_after_a_comment_or_with_no_space_is_seen(end: str) -> None:
    for query in (
        f"SELECT * {{ SERVICE # x{end}<http://127.0.0.1:9/> {{ ?s ?p ?o }} }}",
        f"SELECT * {{ SERVICE#x{end}SILENT#y{end}<http://127.0.0.1:9/> {{ }} }}",
        "SELECT * { SERVICE<http://127.0.0.1:9/> { ?s ?p ?o } }",
        "SELECT * { SERVICE SILENT<http://127.0.0.1:9/> { } }",
    ):
        assert is_federated(query), query
    assert not is_federated(
        "SELECT * { ?s <http://ex.org/SERVICE> ?o . ?s ex:SERVICES ?o }"
    )


@pytest.mark.parametrize("end", ENDS)
def test_brackets_after_a_comment_count_toward_the_nesting_limit(end: str) -> None:
    deep = "ASK # x" + end + "{" * 200 + "}" * 200
    with pytest.raises(oms.QueryError, match="MAX_DEPTH"):
        check_query(deep)
