"""SPARQL Update means what it means on a plain store: after any request the
knowledge in force now is what plain pyoxigraph holds after the same request,
whatever the clock does (several requests in one millisecond included), and
an insertion over a portion of valid time holds over all of it."""

from __future__ import annotations

import httpx
import pyoxigraph as ox
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import Token, create_app
from tests.helpers import running

T0 = 1_700_000_000_000
DAY = 86_400_000
YEAR = 365 * DAY
EX = "http://example.org/"
ANN = f"<{EX}ann> <{EX}worksAt>"
ASK_ACME = f"ASK {{ {ANN} <{EX}acme> }}"
KNOWLEDGE = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"


def held(result: object) -> set[str]:
    return {" ".join(str(t) for t in row) for row in result}  # type: ignore[attr-defined]


class Coarse:
    """A clock that moves on a millisecond every ``reads`` readings (a coarse
    clock, read often): several requests fall in one millisecond."""

    def __init__(self, start: int = T0, reads: int = 1_000) -> None:
        self.start, self.reads, self.count = start, reads, 0

    def __call__(self) -> int:
        self.count += 1
        return self.start + self.count // self.reads


def test_delete_then_insert_in_one_millisecond_keeps_the_triple() -> None:
    """The re-inserted triple's grain has the retracted grain's bytes (same
    fields, same created_at): it must still be in the knowledge."""
    store = GrainStore(clock=lambda: T0)
    store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}")
    report = store.update(
        f"DELETE DATA {{ {ANN} <{EX}acme> }} ; INSERT DATA {{ {ANN} <{EX}acme> }}"
    )
    assert store.query(ASK_ACME) is True
    assert report.retracted == [] and report.believed == 1
    # In three requests of one millisecond, the retraction is written, and a
    # grain cannot be made current again: on a clock that does not move, the
    # insertion is refused and writes nothing.
    store.update(f"DELETE DATA {{ {ANN} <{EX}acme> }}")
    before = sorted(map(str, store.backend.quads()))
    with pytest.raises(oms.StoreError) as refused:
        store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}")
    assert refused.value.code == "ERR_CONFLICT" and "same millisecond" in str(
        refused.value
    )
    assert sorted(map(str, store.backend.quads())) == before


def test_a_triple_closed_in_the_same_millisecond_comes_back_at_the_next() -> None:
    """On a clock that moves, the request waits for the next millisecond and
    is made there whole: later requests, a forward-only store's too, go on."""
    clock = Coarse(reads=10**9)  # it stands still until told
    store = GrainStore(clock=clock, forward_only=True)
    store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}")
    store.update(f"DELETE DATA {{ {ANN} <{EX}acme> }}")
    clock.reads = 50  # now it moves, a millisecond every 50 readings
    again = store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}")
    assert again.added == 1 and store.query(ASK_ACME) is True
    [grain] = store.beliefs(EX + "ann")
    assert grain["created_at"] > T0  # made at a later millisecond
    assert store.query(ASK_ACME, valid_at=T0, as_of=T0) is False  # as then
    assert store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}").believed == 1
    assert len(store.update(f"DELETE DATA {{ {ANN} <{EX}acme> }}").retracted) == 1
    assert store.update(f"INSERT DATA {{ {ANN} <{EX}x> }}").added == 1
    assert store.verify_audit().ok


def test_an_insert_is_believed_only_where_a_held_belief_covers_it() -> None:
    """A triple held over another valid time is no reason to drop an insertion."""
    clock = [T0 + 10 * YEAR]
    store = GrainStore(clock=lambda: clock[0])
    first = store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}",
                         valid_from=T0, valid_to=T0 + YEAR)  # fmt: skip
    assert first.added == 1
    clock[0] += 1
    now = store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}")
    assert now.added == 1 and now.believed == 0
    assert store.query(ASK_ACME) is True
    clock[0] += 1
    later = store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}",
                         valid_from=T0 + 2 * YEAR, valid_to=T0 + 3 * YEAR)  # fmt: skip
    assert later.added == 1
    assert store.query(ASK_ACME, valid_at=T0 + 2 * YEAR + DAY) is True
    # Inside the first belief's year, an insertion is believed already.
    clock[0] += 1
    inside = store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}",
                          valid_from=T0 + DAY, valid_to=T0 + 2 * DAY)  # fmt: skip
    assert (inside.added, inside.believed) == (0, 1)
    # From now on, the belief of the second request covers it.
    clock[0] += 1
    assert store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}").believed == 1


def test_a_ground_delete_where_deletes_only_when_its_where_has_a_solution() -> None:
    store = GrainStore(clock=Coarse(T0 + 10 * YEAR, reads=100))
    one, two = f"{ANN} <{EX}acme>", f"{ANN} <{EX}initech>"
    store.update(f"INSERT DATA {{ {one} }}")
    report = store.update(f"DELETE {{ {one} . {two} }} WHERE {{ {one} . {two} }}")
    assert report.retracted == [] and report.not_believed == 2
    assert store.query(ASK_ACME) is True
    # A triple held over a past valid time only is not in the knowledge now:
    # the WHERE finds nothing, and the past stays.
    store.update(f"INSERT DATA {{ {two} }}", valid_from=T0, valid_to=T0 + YEAR)
    store.update(f"DELETE {{ {two} }} WHERE {{ {two} }}")
    assert store.query(f"ASK {{ {two} }}", valid_at=T0 + DAY) is True
    # Asked over a portion, the WHERE is asked there: both triples together.
    gone = store.update(f"DELETE {{ {one} . {two} }} WHERE {{ {one} . {two} }}",
                        valid_from=T0, valid_to=T0 + 20 * YEAR)  # fmt: skip
    assert gone.not_believed == 2  # acme holds from now on, initech in year 0
    store.update(f"INSERT DATA {{ {two} }}")
    both = store.update(f"DELETE {{ {one} . {two} }} WHERE {{ {one} . {two} }}")
    # Matched now, it is DELETE DATA: every held belief of both triples goes,
    # the one of year 0 too.
    assert len(both.retracted) == 3 and store.query(KNOWLEDGE).rows() == []
    # An earlier operation of the request counts, as SPARQL runs them in order.
    store.update(f"INSERT DATA {{ {one} }} ; DELETE {{ {one} }} WHERE {{ {one} }}")
    assert store.query(ASK_ACME) is False


@pytest.mark.parametrize(
    ("inserted", "deleted"),
    [
        ('"true"^^xsd:boolean', '"1"^^xsd:boolean'),
        ('"01"^^xsd:integer', '"1"^^xsd:integer'),
        (
            '"2024-01-01T00:00:00Z"^^xsd:dateTime',
            '"2024-01-01T00:00:00+00:00"^^xsd:dateTime',
        ),
    ],
)
def test_a_delete_meets_a_value_equal_insert_of_the_same_request(
    inserted: str, deleted: str
) -> None:
    text = (f"INSERT DATA {{ <{EX}a> <{EX}p> {inserted} }} ; "
            f"DELETE DATA {{ <{EX}a> <{EX}p> {deleted} }}")  # fmt: skip
    plain = ox.Store()
    plain.update("PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n" + text)
    store = GrainStore(clock=lambda: T0)
    store.update(text)
    assert held(store.query(KNOWLEDGE)) == held(plain.query(KNOWLEDGE)) == set()


def test_a_replacement_over_an_open_portion_before_the_belief_is_valid_over_it() -> (
    None
):
    """The portion starts before the held belief and has no end: the new
    belief holds over the portion, as it does with an end."""
    store = GrainStore(clock=lambda: T0 + 10 * YEAR)
    store.update(f"INSERT DATA {{ {ANN} <{EX}acme> }}",
                 valid_from=T0 + YEAR, valid_to=T0 + 2 * YEAR)  # fmt: skip
    report = store.update(
        f"DELETE DATA {{ {ANN} <{EX}acme> }} ; INSERT DATA {{ {ANN} <{EX}initech> }}",
        valid_from=T0,
    )
    assert len(report.superseded) == 1
    [new] = store.beliefs(EX + "ann", valid_at=T0 + 5 * YEAR)
    assert new["object"] == EX + "initech"
    assert (new["valid_from"], new.get("valid_to")) == (T0, None)


def test_post_sparql_refuses_a_portion_or_namespace_given_twice() -> None:
    store = GrainStore(clock=lambda: T0)
    tokens = {"w" * 24: Token(namespaces=None, write=True)}
    auth = {"authorization": f"Bearer {'w' * 24}"}
    with running(create_app(store, tokens=tokens)) as base:
        for query in ("valid_from=2020-01-01&valid_from=2030-01-01",
                      "namespace=a&namespace=b"):  # fmt: skip
            answer = httpx.post(f"{base}/sparql?{query}", headers=auth,
                                data={"update": f"INSERT DATA {{ {ANN} <{EX}x> }}"})  # fmt: skip
            assert answer.status_code == 400, answer.text
            assert answer.json()["code"] == "ERR_SCHEMA"
            assert answer.json()["path"] in ("valid_from", "namespace")
        # One in the URL and one in the form is given twice too.
        answer = httpx.post(f"{base}/sparql?valid_from=2020-01-01", headers=auth,
                            data={"update": f"INSERT DATA {{ {ANN} <{EX}x> }}",
                                  "valid_from": "2030-01-01"})  # fmt: skip
        assert answer.status_code == 400
    assert store.is_empty()


# --- against plain pyoxigraph ----------------------------------------------------

TRIPLES = [
    f"{ANN} <{EX}acme>",
    f"{ANN} <{EX}initech>",
    f'<{EX}ann> <{EX}name> "Ann"@en',
    f'<{EX}ann> <{EX}active> "true"^^<http://www.w3.org/2001/XMLSchema#boolean>',
    f'<{EX}ann> <{EX}active> "1"^^<http://www.w3.org/2001/XMLSchema#boolean>',
    f"GRAPH <{EX}g> {{ {ANN} <{EX}acme> }}",
]


def operation(kind: str, picked: list[int]) -> str:
    body = " . ".join(TRIPLES[i] for i in picked)
    if kind == "where":  # the ground DELETE/WHERE form, default graph only
        body = " . ".join(
            TRIPLES[i] for i in picked if not TRIPLES[i].startswith("GRAPH")
        )
        return f"DELETE {{ {body} }} WHERE {{ {body} }}" if body else "INSERT DATA { }"
    return f"{'INSERT' if kind == 'insert' else 'DELETE'} DATA {{ {body} }}"


requests = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(["insert", "delete", "where"]),
            st.lists(st.integers(0, len(TRIPLES) - 1), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=3,
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(requests, st.lists(st.integers(0, 2), min_size=6, max_size=6))
def test_the_knowledge_is_what_a_plain_store_holds(
    asked: list[list[tuple[str, list[int]]]], ticks: list[int]
) -> None:
    """Random requests on a coarse clock, several of them in one millisecond
    or a few milliseconds apart."""
    clock = Coarse(reads=200)
    store, plain = GrainStore(clock=clock), ox.Store()
    for request, tick in zip(asked, ticks, strict=False):
        clock.start += tick
        text = " ;\n".join(operation(kind, picked) for kind, picked in request)
        store.update(text)
        plain.update(text)
        default = held(store.query(KNOWLEDGE))
        assert default == held(plain.query(KNOWLEDGE)), text
        named = "SELECT ?g ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
        assert held(store.query(named)) == held(plain.query(named)), text


def test_post_sparql_refuses_a_question_s_times_on_an_update_and_names_a_bad_portion() -> (
    None
):
    store = GrainStore(clock=lambda: T0)
    tokens = {"w" * 24: Token(namespaces=None, write=True)}
    auth = {"authorization": f"Bearer {'w' * 24}"}
    insert = {"update": f"INSERT DATA {{ {ANN} <{EX}x> }}"}
    with running(create_app(store, tokens=tokens)) as base:
        for name in ("valid_at", "as_of", "valid_during", "system_during"):
            answer = httpx.post(f"{base}/sparql?{name}=2024", headers=auth, data=insert)
            assert answer.status_code == 400, answer.text
            assert (answer.json()["code"], answer.json()["path"]) == ("ERR_QUERY", name)
        answer = httpx.post(f"{base}/sparql?valid_from=zz", headers=auth, data=insert)
        assert (answer.json()["code"], answer.json()["path"]) == (
            "ERR_SCHEMA",
            "valid_from",
        )
        inverted = httpx.get(f"{base}/sparql", params={"query": "ASK {}",
                             "valid_during": "2025/2024"}, headers=auth)  # fmt: skip
        assert (inverted.json()["code"], inverted.json()["path"]) == (
            "ERR_RANGE", "valid_during")  # fmt: skip
        described = httpx.get(
            f"{base}/sparql", params={"valid_during": "zz"}, headers=auth
        )
        assert (
            described.status_code == 400 and described.json()["path"] == "valid_during"
        )
    assert store.is_empty()
    grain = store.put(oms.Belief("a", "b", "c", 0.5, created_at=T0))
    assert f"nih:sha-256;{grain}" in store and grain in store


def test_a_replacement_keeps_the_past_of_every_belief_of_the_old_triple() -> None:
    """Two held beliefs assert the old triple: the one in force where the new
    one begins is superseded, the other retracted from there on, or left as it
    is when its valid time ended before: the old triple stays true for the
    past, as with one belief."""
    clock = [T0 + 10 * YEAR]
    store = GrainStore(clock=lambda: clock[0])
    o1 = f"INSERT DATA {{ {ANN} <{EX}acme> }}"
    store.update(o1, valid_from=T0, valid_to=T0 + YEAR)  # ended long ago
    clock[0] += 1
    store.update(o1, valid_from=T0 + 2 * YEAR)  # from year 2 on
    clock[0] += 1
    report = store.update(
        f"DELETE DATA {{ {ANN} <{EX}acme> }} ; INSERT DATA {{ {ANN} <{EX}initech> }}"
    )
    assert len(report.superseded) == 1 and report.retracted == []

    def works(year: float) -> list[str]:
        at = T0 + int(year * YEAR)
        found = store.query(f"SELECT ?o WHERE {{ {ANN} ?o }}", valid_at=at)
        return [r["o"].value.rsplit("/", 1)[1] for r in found]

    assert [works(y) for y in (0.5, 1.5, 3, 9.9)] == [["acme"], [], ["acme"], ["acme"]]
    assert works(10.5) == ["initech"]
    # Both in force where the new one begins: the earlier is superseded (its
    # past stays), the later retracted from there on (its past stays too).
    clock[0] = T0 + 10 * YEAR
    store = GrainStore(clock=lambda: clock[0])
    store.update(o1, valid_from=T0, valid_to=T0 + 20 * YEAR)
    clock[0] += 1
    store.update(o1, valid_from=T0 + 5 * YEAR)  # beyond year 20: a second belief
    clock[0] += 1
    report = store.update(
        f"DELETE DATA {{ {ANN} <{EX}acme> }} ; INSERT DATA {{ {ANN} <{EX}initech> }}"
    )
    assert len(report.superseded) == 1 and len(report.retracted) == 1
    [older] = store.beliefs_by_status("superseded", EX + "ann")
    assert older["valid_from"] == T0
    assert [works(y) for y in (1, 6, 10.5, 25)] == [
        ["acme"], ["acme"], ["initech"], ["initech"]]  # fmt: skip
    [piece] = store.derived(report.retracted[0])  # the later one's past, kept
    assert (piece["valid_from"], piece["valid_to"]) == (T0 + 5 * YEAR, clock[0])
