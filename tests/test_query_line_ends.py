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


# --- where this reader and the engine could read a text apart (a probe's findings) ---

LEAKS = [
    # "<" after an operand: the engine reads "less than" then a comment or a string.
    "SELECT * WHERE { FILTER(1 <#>) }\n2) ?s ?p ?o }",
    "SELECT * WHERE { FILTER(1 <#>) }\n2) GRAPH ?g { ?s ?p ?o } }",
    "SELECT * WHERE { FILTER(1 <=#>) }\r2) ?s ?p ?o }",
    "SELECT * WHERE { BIND(1 <#>'''\n2 AS ?z) ?s ?p ?o . BIND(1 AS ?q # '''\n) }",
    "SELECT * WHERE { BIND(1 <'>' AS ?z) ?s ?p ?o BIND(1 AS ?q # '\n) }",
    "SELECT (1 <#>) WHERE { }\n2 AS ?z) ?s WHERE { ?s ?p ?o }",
    "CONSTRUCT { ?s ?p ?o } WHERE { FILTER(1 <#>) }\n2) ?s ?p ?o }",
    # IRIs with \u escapes, which the engine reads as IRIs.
    "SELECT * WHERE { BIND(<http://x/#\\u0041> AS ?z) ?s ?p ?o . BIND(1 AS ?q\n) }",
    "SELECT * WHERE { VALUES ?z { <http://x/#\\u0041> } ?s ?p ?o . VALUES ?w {\n1 } }",
    "SELECT * WHERE { FILTER(?s != <http://x/#\\U00000041>) ?s ?p ?o FILTER(true\n) }",
    "SELECT * WHERE { BIND(<http://x/'\\u0041> AS ?z) ?s ?p ?o . BIND(1 AS ?q # '\n) }",
]
SECRETS = ("hunter2", "alice", "nih:sha-256", "oms-rdf/ns#index", "oms-rdf/ns#audit")


@pytest.mark.parametrize("query", LEAKS)
@pytest.mark.parametrize("point", [{}, {"valid_at": "2999"}, {"held": True}])
def test_no_text_read_apart_reaches_another_namespace(
    store: oms.GrainStore, query: str, point: dict[str, object]
) -> None:
    def rows(found: object) -> object:
        return found if isinstance(found, bool) else sorted(map(repr, found))

    answer = rows(store.query(query, namespace="A", **point))
    assert not any(secret in repr(answer) for secret in SECRETS), answer
    only_a = oms.GrainStore()
    only_a.put(oms.Belief("bob", "likes", "tea", 1.0, namespace="A", created_at=1))
    assert answer == rows(only_a.query(query, namespace="A", **point))


def test_dollar_and_question_mark_name_one_variable(store: oms.GrainStore) -> None:
    query = "SELECT ?s ?o WHERE { ?s ?p $o }"
    assert [r["o"].value for r in store.query(query, namespace="A")] == ["tea"]


@pytest.mark.parametrize(
    "query",
    [
        "PREFIX : <http://127.0.0.1:9/> SELECT * { SERVICE :x { } }",
        "PREFIX : <http://127.0.0.1:9/> SELECT * { SERVICE:x { } }",
        "PREFIX \u20ac: <http://127.0.0.1:9/> SELECT * { SERVICE \u20ac:x { } }",
        "SELECT * { ?s ?p 1SERVICE <http://127.0.0.1:9/> { } }",
        "SELECT * { ?s ?p 1.SERVICE <http://127.0.0.1:9/> { } }",
        "SELECT * { ?s ?p trueSERVICE <http://127.0.0.1:9/> { } }",
        "SELECT * { OPTIONAL { sErViCe ?x { } } }",
    ],
)
def test_every_service_the_engine_would_call_is_seen(query: str) -> None:
    assert is_federated(query)


def test_service_as_a_name_or_in_a_text_is_not_taken_for_one() -> None:
    for query in ('SELECT * { ?s ?p "customer service desk" }',
                  "SELECT * { ?s ?SERVICE <http://x/o> { ?a ?b ?c } }",
                  "PREFIX e: <http://x/> SELECT * { ?s e:SERVICE <http://x/o> { ?a ?b ?c } }",
                  "SELECT ?service WHERE { ?service a ?type }"):  # fmt: skip
        assert not is_federated(query), query


NEST = "{" * 300 + "}" * 300


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * WHERE { VALUES ?x { '''x' } " + NEST + " }",
        "PREFIX e: <http://x/> SELECT * WHERE { ?s e:a\\#b ?o . " + NEST + " }",
        "PREFIX e: <http://x/> SELECT * WHERE { ?s e:a\\'b ?o . " + NEST + " }",
        "SELECT * WHERE { FILTER(1 <" + "(" * 300 + "1" + ")" * 300 + ">2) }",
        "SELECT * { BIND(<http://x/#\\u0041> AS ?z) " + NEST + " }",
    ],
)
def test_no_text_nests_past_the_limit_unseen(query: str) -> None:
    with pytest.raises(oms.QueryError, match="MAX_DEPTH"):
        check_query(query)
