"""SPARQL Update as belief operations: adopt, retract through the policies, refuse the rest."""

from __future__ import annotations

import pytest

import oms_rdf as oms
from oms_rdf import GrainStore

T0 = 1_700_000_000_000
EX = "http://example.org/"
PREFIX = "PREFIX ex: <http://example.org/>\n"


def quads(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def test_insert_data_adopts_and_is_idempotent() -> None:
    store = GrainStore(clock=lambda: T0)
    text = (
        PREFIX
        + 'INSERT DATA { ex:ann ex:name "Ann"@EN ; ex:age "042"^^<http://www.w3.org/2001/XMLSchema#integer> . GRAPH ex:g { ex:ann ex:knows ex:bo } }'
    )
    report = store.update(text, namespace="crm", confidence=0.7)
    assert (report.added, report.believed) == (3, 0)
    grains = store.beliefs(EX + "ann", namespace="crm")
    assert {g["confidence"] for g in grains} == {0.7}
    assert {g["source_type"] for g in grains} == {"imported"}
    # The exact lexical form lives in the grain; the knowledge shows it as Oxigraph does.
    age = next(g for g in grains if g["relation"] == EX + "age")
    assert age["object"] == "042"
    named = store.query(f"ASK {{ GRAPH <{EX}g> {{ <{EX}ann> <{EX}knows> <{EX}bo> }} }}")
    assert named is True
    before = quads(store)
    again = store.update(text, namespace="crm", confidence=0.7)
    assert (again.added, again.believed) == (0, 3)
    assert {q for q in quads(store) if "ns#audit" not in q} == {
        q for q in before if "ns#audit" not in q
    }


def test_delete_data_retracts_the_believers_in_one_write() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    a = store.put(
        oms.Belief(EX + "ann", EX + "worksAt", EX + "acme", 0.9, created_at=T0)
    )
    b = store.put(oms.Belief(EX + "ann", EX + "worksAt", EX + "acme", 0.6, created_at=T0 + 1,
                             namespace="other"))  # fmt: skip
    keep = store.put(oms.Belief(EX + "ann", EX + "name", "Ann", 0.9, created_at=T0))
    report = store.update(PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme . ex:ann ex:likes ex:tea }",
                          by="did:example:alice", reason="left the company")  # fmt: skip
    assert sorted(report.retracted) == sorted([a, b]) and report.not_believed == 1
    for address in (a, b):
        state = store.status(address)
        assert state.status == "retracted" and state.reason == "left the company"
        assert state.initiator == "did:example:alice"
    assert store.status(keep).is_current
    assert store.query(f"ASK {{ <{EX}ann> <{EX}worksAt> ?o }}") is False
    # Before the retraction the belief still answers (bi-temporal: it was believed).
    then = store.query(
        f"ASK {{ <{EX}ann> <{EX}worksAt> <{EX}acme> }}", as_of=T0 + 5, valid_at=T0 + 5
    )
    assert then is True


def test_delete_data_in_one_namespace_leaves_the_others() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    a = store.put(
        oms.Belief(EX + "x", EX + "p", "v", 0.9, created_at=T0, namespace="one")
    )
    b = store.put(
        oms.Belief(EX + "x", EX + "p", "v", 0.9, created_at=T0, namespace="two")
    )
    report = store.update(PREFIX + 'DELETE DATA { ex:x ex:p "v" }', namespace="one")
    assert report.retracted == [a]
    assert store.status(b).is_current
    assert (
        store.query(f'ASK {{ <{EX}x> <{EX}p> "v" }}') is True
    )  # "two" still believes it


def test_a_protected_belief_refuses_and_nothing_changes() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    store.put(oms.Belief(EX + "ann", EX + "role", "user", 0.9, created_at=T0))
    store.put(oms.Belief(EX + "ann", EX + "role", "admin", 1.0, created_at=T0,
                         invalidation_policy={"mode": "locked"}))  # fmt: skip
    before = quads(store)
    with pytest.raises(oms.PolicyError) as info:
        store.update(
            PREFIX + 'DELETE DATA { ex:ann ex:role "user" . ex:ann ex:role "admin" }'
        )
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert quads(store) == before  # the unprotected one was not retracted either


@pytest.mark.parametrize(
    "text",
    [
        "DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "INSERT { <http://e/a> <http://e/b> ?o } WHERE { ?s ?p ?o }",
        "DELETE WHERE { ?s ?p ?o }",
        "CLEAR ALL",
        "DROP GRAPH <https://w3id.org/oms-rdf/ns#index>",
        "LOAD <http://example.org/data.ttl>",
        "INSERT DATA { <http://e/a> <http://e/b> <http://e/c> } ; CLEAR DEFAULT",
    ],
)
def test_other_update_forms_are_refused_whole(text: str) -> None:
    store = GrainStore(clock=lambda: T0)
    store.put(oms.Belief(EX + "ann", EX + "name", "Ann", 0.9, created_at=T0))
    before = quads(store)
    with pytest.raises(oms.QueryError) as info:
        store.update(text)
    assert info.value.code == oms.ErrorCode.QUERY and "refused" in str(info.value)
    assert quads(store) == before


def test_reserved_graphs_and_syntax_errors_are_refused() -> None:
    store = GrainStore(clock=lambda: T0)
    before = quads(store)
    with pytest.raises(oms.OmsError, match="reserved graph"):
        store.update(
            "INSERT DATA { GRAPH <https://w3id.org/oms-rdf/ns#index> { <http://e/a> <http://e/b> <http://e/c> } }"
        )
    with pytest.raises(oms.QueryError, match="line"):
        store.update("INSERT DATA { <http://e/a> <http://e/b> ")
    assert quads(store) == before


# --- one request, one transaction ------------------------------------------------------

LOCKED = {"mode": "locked"}
SOFT = {"mode": "soft_locked"}


def dump(store: GrainStore) -> list[str]:
    """Every quad of every graph, the audit chain included, sorted."""
    return sorted(str(q) for q in store.backend.quads())


def held(store: GrainStore, obj: str, *, policy: dict[str, str] | None = None) -> str:
    return store.put(oms.Belief(EX + "ann", EX + "role", obj, 0.9, created_at=T0,
                                invalidation_policy=policy))  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        # The refused operation comes after a change that would have been written.
        'INSERT DATA { ex:ann ex:name "Ann" } ; DELETE DATA { ex:ann ex:role "admin" }',
        'DELETE DATA { ex:ann ex:role "user" } ; DELETE DATA { ex:ann ex:role "admin" }',
        'INSERT DATA { ex:bo ex:name "Bo" } ; DELETE DATA { ex:ann ex:role "user" } ; '
        'DELETE DATA { ex:ann ex:role "admin" }',
        # A refused insertion (a reserved graph) after a retraction.
        'DELETE DATA { ex:ann ex:role "user" } ; '
        "INSERT DATA { GRAPH <https://w3id.org/oms-rdf/ns#index> { ex:a ex:b ex:c } }",
    ],
)
def test_a_refused_request_leaves_the_store_byte_identical(text: str) -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    user = held(store, "user")
    held(store, "admin", policy=LOCKED)
    before = dump(store)
    with pytest.raises(oms.OmsError) as info:
        store.update(PREFIX + text)
    assert info.value.code in (oms.ErrorCode.INVALIDATION_DENIED, oms.ErrorCode.SCHEMA)
    assert dump(store) == before
    assert store.status(user).is_current
    assert store.beliefs(EX + "bo") == []


def test_a_request_is_one_write_with_its_operations_in_order() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    user = held(store, "user")
    report = store.update(
        PREFIX
        + 'DELETE DATA { ex:ann ex:role "user" } ; INSERT DATA { ex:ann ex:role "user" } ;'
        + ' INSERT DATA { ex:ann ex:name "Ann" } ; DELETE DATA { ex:ann ex:name "Ann" }'
    )
    # The deletion came first, so the insertion is a new belief, not "already
    # believed"; the name was inserted and deleted by the same request: not kept.
    assert report.retracted == [user] and (report.added, report.believed) == (1, 0)
    assert store.status(user).status == "retracted"
    [again] = store.beliefs(EX + "ann")
    assert again["object"] == "user" and again.address != user
    assert store.query(f'ASK {{ <{EX}ann> <{EX}role> "user" }}') is True
    assert store.query(f"ASK {{ <{EX}ann> <{EX}name> ?n }}") is False
    assert store.verify_audit().ok
    # One write: the retraction's event and the update's, nothing per operation.
    audit = oms.rdf.vocab.OMS.audit
    operations = sorted(
        q.object.value
        for q in store.backend.quads(None, oms.rdf.vocab.OMS.operation, None, audit)
    )
    assert operations == ["put", "retract", "update"]


# --- soft_locked needs the caller's justification --------------------------------------


def test_delete_data_of_a_soft_locked_belief_needs_the_callers_reason() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    soft = held(store, "user", policy=SOFT)
    before = dump(store)
    with pytest.raises(oms.PolicyError) as info:
        store.update(PREFIX + 'DELETE DATA { ex:ann ex:role "user" }')
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert "soft_locked" in str(info.value)
    assert dump(store) == before
    report = store.update(
        PREFIX + 'DELETE DATA { ex:ann ex:role "user" }', reason="Ann asked us to"
    )
    assert report.retracted == [soft]
    state = store.status(soft)
    assert state.status == "retracted" and state.reason == "Ann asked us to"
    notes = list(store.query(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?n WHERE { GRAPH oms:audit { ?e oms:needsReview ?n } }",
        grains=True,
    ))  # fmt: skip
    assert len(notes) == 1 and "Ann asked us to" in notes[0]["n"].value


def test_post_sparql_cannot_retract_a_soft_locked_belief() -> None:
    import httpx

    from oms_rdf.http.app import Token, create_app
    from tests.test_server import running

    store = GrainStore(clock=lambda: T0 + 10)
    soft = held(store, "user", policy=SOFT)
    before = dump(store)
    secret = "update-writer-00000001"
    app = create_app(store, tokens={secret: Token(namespaces=None, write=True)})
    with running(app) as base, httpx.Client(base_url=base) as client:
        refused = client.post(
            "/sparql",
            data={"update": PREFIX + 'DELETE DATA { ex:ann ex:role "user" }'},
            headers={"authorization": f"Bearer {secret}"},
        )
    assert refused.status_code == 403 and "ERR_INVALIDATION_DENIED" in refused.text
    assert store.status(soft).is_current and dump(store) == before


def test_a_request_that_changes_nothing_writes_nothing() -> None:
    store = GrainStore(clock=lambda: T0)
    text = PREFIX + 'INSERT DATA { _:n ex:name "Ann" . ex:ann ex:knows _:n }'
    first = store.update(text)
    assert (first.added, first.believed) == (2, 0)
    before = dump(store)
    again = store.update(text)  # the same blank node labels: already believed
    assert (again.added, again.believed) == (0, 2)
    nothing = store.update(PREFIX + 'DELETE DATA { ex:ann ex:name "Bo" }')
    assert nothing.not_believed == 1
    assert dump(store) == before


def test_a_refused_request_on_disk_leaves_the_store_byte_identical(
    tmp_path: object,
) -> None:
    path = f"{tmp_path}/store"
    with GrainStore(path, clock=lambda: T0 + 10) as store:
        held(store, "user")
        held(store, "admin", policy=SOFT)
        before = dump(store)
        text = (
            'INSERT DATA { ex:bo ex:name "Bo" } ; DELETE DATA { ex:ann ex:role "user" }'
        )
        text += ' ; DELETE DATA { ex:ann ex:role "admin" }'
        with pytest.raises(oms.PolicyError):
            store.update(PREFIX + text)
    with GrainStore(path) as reopened:
        assert dump(reopened) == before
