"""SPARQL Update as belief operations: adopt, retract through the policies, refuse the rest."""

from __future__ import annotations

import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.rdf.vocab import OMS

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


@pytest.mark.parametrize("graph", ["current", "audit", "index", "blobs"])
def test_delete_data_naming_a_reserved_graph_is_refused(graph: str) -> None:
    """oms:current named is not the default graph: a request naming a reserved
    graph is refused whole, as INSERT DATA naming it is."""
    store = GrainStore(clock=lambda: T0)
    store.update(f"INSERT DATA {{ <{EX}ann> <{EX}worksAt> <{EX}acme> }}")
    before = quads(store)
    with pytest.raises(oms.SchemaError, match="reserved graph") as refused:
        store.update(
            f"DELETE DATA {{ GRAPH <https://w3id.org/oms-rdf/ns#{graph}> "
            f"{{ <{EX}ann> <{EX}worksAt> <{EX}acme> }} }}"
        )
    assert refused.value.code == oms.ErrorCode.SCHEMA
    assert quads(store) == before
    assert len(store.beliefs()) == 1


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
    # One write, one transaction: the update's event, which names the retracted
    # belief; nothing per operation.
    assert operations(store) == ["put", "update"]
    [event] = events(store, "update")
    assert [t.rsplit(";", 1)[-1] for t in event[OMS.target.value]] == [user]


def operations(store: GrainStore) -> list[str]:
    """The operations of the audit log's events, sorted."""
    return sorted(
        q.object.value
        for q in store.backend.quads(None, OMS.operation, None, OMS.audit)
    )


def events(store: GrainStore, operation: str) -> list[dict[str, list[str]]]:
    """The audit events of one operation: predicate IRI -> the objects' values."""
    out = []
    for q in store.backend.quads(None, OMS.operation, None, OMS.audit):
        if q.object.value == operation:
            event: dict[str, list[str]] = {}
            for f in store.backend.quads(q.subject, None, None, OMS.audit):
                event.setdefault(f.predicate.value, []).append(f.object.value)
            out.append(event)
    return out


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


def test_the_update_event_names_its_actor_and_the_store_stays_whole() -> None:
    store = GrainStore(clock=lambda: T0 + 10)
    user = held(store, "user")
    store.update(
        PREFIX
        + 'DELETE DATA { ex:ann ex:role "user" } ; INSERT DATA { ex:bo ex:name "Bo" }',
        by="did:example:alice",
        reason="checked",
    )
    [event] = events(store, "update")
    assert event[OMS.actor.value] == ["did:example:alice"]
    assert store.status(user).reason == "checked"
    assert [g["object"] for g in store.beliefs(EX + "bo")] == ["Bo"]
    assert store.verify_audit().ok


def test_a_with_graph_ground_delete_is_delete_data_in_that_graph() -> None:
    store = GrainStore(clock=lambda: T0)
    store.update(
        PREFIX + "INSERT DATA { GRAPH ex:g { ex:a ex:b ex:c } . ex:a ex:b ex:c }"
    )
    report = store.update(
        PREFIX + "WITH ex:g DELETE { ex:a ex:b ex:c } WHERE { ex:a ex:b ex:c }"
    )
    assert len(report.retracted) == 1
    assert store.query(f"ASK {{ GRAPH <{EX}g> {{ ?s ?p ?o }} }}") is False
    assert store.query(f"ASK {{ <{EX}a> <{EX}b> <{EX}c> }}") is True


def test_data_keeps_its_lexical_forms_and_the_request_order() -> None:
    store = GrainStore(clock=lambda: T0)
    store.update(
        PREFIX
        + 'INSERT DATA { ex:a ex:n "007"^^<http://www.w3.org/2001/XMLSchema#integer>, '
        + '"1.50"^^<http://www.w3.org/2001/XMLSchema#decimal> ; ex:m 042 }'
    )
    objects = sorted(g["object"] for g in store.beliefs(EX + "a"))
    assert objects == ["007", "042", "1.50"]


def test_an_update_does_not_bring_back_an_erased_belief() -> None:
    store = GrainStore(clock=lambda: T0)
    text = PREFIX + 'INSERT DATA { ex:ann ex:name "Ann" }'
    store.update(text)
    [grain] = store.beliefs(EX + "ann")
    store.erase(grain, reason="asked to forget")
    before = dump(store)
    with pytest.raises(oms.OmsError):
        store.update(text)
    assert dump(store) == before


# --- portions of valid time (SQL:2011 FOR PORTION OF) ------------------------------

DAY = 86_400_000


def acme(store: GrainStore, *, end: int | None = 10 * DAY) -> str:
    """ann worksAt acme, valid from T0 for ten days (or for good)."""
    fields = {"type": "belief", "subject": EX + "ann", "relation": EX + "worksAt",
              "object": EX + "acme", "confidence": 0.9, "created_at": T0,
              "valid_from": T0}  # fmt: skip
    if end is not None:
        fields["valid_to"] = T0 + end
    return store.put(fields)


def works_at(store: GrainStore, day: int) -> list[str]:
    """Where ann works on a day, as known now."""
    found = store.beliefs(EX + "ann", EX + "worksAt", valid_at=T0 + day * DAY + 1)
    return sorted(g["object"].removeprefix(EX) for g in found)


def test_delete_data_over_a_portion_retracts_that_portion_only() -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    old = acme(store)
    report = store.update(
        PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme }",
        valid_from=T0 + 2 * DAY,
        valid_to=T0 + 5 * DAY,
        reason="on leave",
    )
    assert report.retracted == [old] and report.superseded == []
    assert store.status(old).status == "retracted"
    # Days 0-1 and 5-9 are still believed; 2-4 are not; after day 10 nothing was.
    assert [works_at(store, d) for d in (0, 1, 2, 4, 5, 9, 10)] == [
        ["acme"], ["acme"], [], [], ["acme"], ["acme"], [],
    ]  # fmt: skip
    pieces = sorted((g["valid_from"], g["valid_to"]) for g in store.derived(old))
    assert pieces == [(T0, T0 + 2 * DAY), (T0 + 5 * DAY, T0 + 10 * DAY)]
    assert store.query(f"ASK {{ <{EX}ann> <{EX}worksAt> <{EX}acme> }}") is False


@pytest.mark.parametrize(
    "text",
    [
        "DELETE DATA { ex:ann ex:worksAt ex:acme } ; INSERT DATA { ex:ann ex:worksAt ex:initech }",
        "INSERT DATA { ex:ann ex:worksAt ex:initech } ; DELETE DATA { ex:ann ex:worksAt ex:acme }",
    ],
    ids=["delete-insert", "insert-delete"],
)
def test_a_replacing_insert_supersedes_over_the_portion(text: str) -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    old = acme(store)
    report = store.update(
        PREFIX + text, valid_from=T0 + 2 * DAY, valid_to=T0 + 5 * DAY, by="did:x"
    )
    assert report.superseded == [old] and report.retracted == []
    assert report.added == 1
    state = store.status(old)
    assert state.status == "superseded" and state.initiator == "did:x"
    assert [works_at(store, d) for d in (0, 1, 2, 4, 5, 9, 10)] == [
        ["acme"], ["acme"], ["initech"], ["initech"], ["acme"], ["acme"], [],
    ]  # fmt: skip
    [new] = [
        g for g in store.beliefs(valid_at=T0 + 3 * DAY) if "initech" in g["object"]
    ]
    assert (new["valid_from"], new["valid_to"]) == (T0 + 2 * DAY, T0 + 5 * DAY)
    assert new["derived_from"] == [old]
    # Before the update, the store believed acme for all ten days.
    then = store.beliefs(EX + "ann", valid_at=T0 + 3 * DAY, as_of=T0 + 1)
    assert [g["object"] for g in then] == [EX + "acme"]


def test_an_insert_on_a_functional_relation_supersedes_the_one_held() -> None:
    store = GrainStore(
        clock=lambda: T0 + 20 * DAY, functional_relations=[EX + "worksAt"]
    )
    old = acme(store, end=None)
    report = store.update(
        PREFIX + "INSERT DATA { ex:ann ex:worksAt ex:initech }",
        valid_from=T0 + 2 * DAY,
    )
    assert report.superseded == [old]
    # From day 2 on (no end): initech; before it, acme.
    assert [works_at(store, d) for d in (0, 1, 2, 30)] == [
        ["acme"], ["acme"], ["initech"], ["initech"],
    ]  # fmt: skip
    assert store.conflicts() == []


@pytest.mark.parametrize("source_type", ["user_explicit", "axiomatic"])
def test_an_insert_on_a_functional_relation_never_replaces_a_higher_tier(
    source_type: str,
) -> None:
    """Replacing a held belief on a functional relation is a revision the store
    makes by itself: the inserted belief (imported, system-inferred) may not
    replace a user-stated or axiomatic one, so both stay, disputed, as with put."""
    store = GrainStore(
        clock=lambda: T0 + 20 * DAY, functional_relations=[EX + "worksAt"]
    )
    held = store.put(oms.Belief(EX + "ann", EX + "worksAt", EX + "acme", 0.9,
                                created_at=T0, source_type=source_type))  # fmt: skip
    with pytest.warns(oms.ConflictWarning):
        report = store.update(PREFIX + "INSERT DATA { ex:ann ex:worksAt ex:initech }")
    assert report.superseded == [] and report.added == 1
    assert store.status(held).is_current
    assert sorted(works_at(store, 30)) == ["acme", "initech"]
    assert [
        store.status(g.address).verification for g in store.beliefs(EX + "ann")
    ] == [
        "disputed",
        "disputed",
    ]
    # Asked for by the request (it deletes the held triple), it is a supersession.
    report = store.update(PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme } ; "
                          "INSERT DATA { ex:ann ex:worksAt ex:hooli }")  # fmt: skip
    assert report.superseded == [held]


def test_a_replacement_without_a_portion_supersedes_the_whole_belief() -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    old = acme(store, end=None)
    report = store.update(
        PREFIX
        + "DELETE DATA { ex:ann ex:worksAt ex:acme } ; INSERT DATA { ex:ann ex:worksAt ex:initech }"
    )
    assert report.superseded == [old] and report.retracted == []
    assert store.status(old).superseded_by is not None
    assert [g["object"] for g in store.history(old)] == [EX + "acme", EX + "initech"]
    # Superseded at system time T0 + 20 days: the new belief is valid from then.
    assert [works_at(store, d) for d in (0, 19, 21)] == [
        ["acme"],
        ["acme"],
        ["initech"],
    ]


def test_a_portion_that_misses_a_belief_changes_nothing() -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    acme(store)
    before = dump(store)
    report = store.update(
        PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme }",
        valid_from=T0 + 10 * DAY,
        valid_to=T0 + 12 * DAY,
    )
    assert report.retracted == [] and report.not_believed == 1
    assert dump(store) == before


def test_a_portion_covering_a_belief_retracts_it_whole() -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    old = acme(store)
    store.update(PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme }", valid_from=T0)
    assert store.status(old).status == "retracted" and store.derived(old) == []
    assert [works_at(store, d) for d in (0, 5)] == [[], []]


def test_new_beliefs_of_a_portion_are_valid_over_it() -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    store.update(
        PREFIX + "INSERT DATA { ex:ann ex:worksAt ex:acme }",
        valid_from="2023-11-16T22:13:20Z",  # T0 + 2 days
        valid_to=T0 + 4 * DAY,
    )
    assert [works_at(store, d) for d in (1, 2, 3, 4)] == [[], ["acme"], ["acme"], []]


@pytest.mark.parametrize(
    ("times", "code"),
    [
        ({"valid_to": T0}, oms.ErrorCode.SCHEMA),
        ({"valid_from": T0 + DAY, "valid_to": T0 + DAY}, oms.ErrorCode.RANGE),
        ({"valid_from": "not a time"}, oms.ErrorCode.SCHEMA),
    ],
    ids=["end-without-start", "empty", "not-a-time"],
)
def test_a_bad_portion_is_refused_and_writes_nothing(
    times: dict[str, object], code: oms.ErrorCode
) -> None:
    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    acme(store)
    before = dump(store)
    with pytest.raises(oms.OmsError) as info:
        store.update(PREFIX + "DELETE DATA { ex:ann ex:worksAt ex:acme }", **times)  # type: ignore[arg-type]
    assert info.value.code == code
    assert dump(store) == before


def test_post_sparql_takes_the_portion_from_the_query_string() -> None:
    import httpx

    from oms_rdf.http.app import Token, create_app
    from tests.test_server import running

    store = GrainStore(clock=lambda: T0 + 20 * DAY)
    old = acme(store)
    secret = "update-writer-00000002"
    app = create_app(store, tokens={secret: Token(namespaces=None, write=True)})
    text = (
        PREFIX
        + "DELETE DATA { ex:ann ex:worksAt ex:acme } ; INSERT DATA { ex:ann ex:worksAt ex:initech }"
    )
    with running(app) as base, httpx.Client(base_url=base) as client:
        done = client.post(
            "/sparql",
            params={
                "valid_from": "2023-11-16T22:13:20Z",
                "valid_to": str(T0 + 5 * DAY),
            },
            data={"update": text},
            headers={"authorization": f"Bearer {secret}"},
        )
        refused = client.post(
            "/sparql",
            params={"valid_to": str(T0 + 5 * DAY)},
            data={"update": text},
            headers={"authorization": f"Bearer {secret}"},
        )
    assert done.status_code == 200, done.text
    assert refused.status_code == 400 and "ERR_SCHEMA" in refused.text
    # T0 is 2023-11-14T22:13:20Z: the portion is days 2 to 4.
    assert store.status(old).status == "superseded"
    assert [works_at(store, d) for d in (1, 2, 4, 5)] == [
        ["acme"], ["initech"], ["initech"], ["acme"],
    ]  # fmt: skip


def test_an_update_may_use_the_prefixes_a_query_may_use_undeclared() -> None:
    store = GrainStore(clock=lambda: T0)
    store.update(
        PREFIX + 'INSERT DATA { ex:ann rdfs:label "Ann" ; rdf:type owl:Thing }'
    )
    assert store.query(f'ASK {{ <{EX}ann> rdfs:label "Ann" ; a owl:Thing }}') is True
    # The request's own declaration wins over the store's.
    store.update('PREFIX rdfs: <http://example.org/> INSERT DATA { rdfs:a rdfs:b "c" }')
    assert [g["object"] for g in store.beliefs(EX + "a")] == ["c"]
