"""What a new user of the facts API hit: times, namespace refusals, docs, paging."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest

import oms_rdf as oms
from oms_rdf import GrainStore
from oms_rdf.http.app import Token, create_app
from oms_rdf.http.listing import Listing, Listings
from oms_rdf.times import to_millis
from tests.test_server import running

T0 = 1_700_000_000_000
WRITER = "crm-writer-00000000001"
ADMIN = "every-admin-0000000001"


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture
def served() -> Iterator[tuple[httpx.Client, GrainStore]]:
    store = GrainStore(clock=lambda: T0)
    tokens = {
        WRITER: Token(namespaces=("crm",), write=True),
        ADMIN: Token(namespaces=None, write=True),
    }
    with running(create_app(store, tokens=tokens)) as base:
        with httpx.Client(base_url=base) as client:
            yield client, store


def test_created_at_defaults_to_now_and_times_take_iso(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    client, _store = served
    belief = {"type": "belief", "subject": "ann", "relation": "works_at",
              "object": "acme", "confidence": 0.9, "namespace": "crm"}  # fmt: skip
    made = client.post("/v1/facts", json=belief, headers=bearer(WRITER))
    assert made.status_code == 201, made.text
    assert made.json()["fields"]["created_at"] == T0  # the store's clock
    dated = {**belief, "object": "initech", "created_at": "2024-01-01T00:00:00Z",
             "valid_from": "2024-06-01", "valid_to": "2025"}  # fmt: skip
    made = client.post("/v1/facts", json=dated, headers=bearer(WRITER))
    assert made.status_code == 201, made.text
    fields = made.json()["fields"]
    assert fields["created_at"] == to_millis("2024-01-01")
    assert fields["valid_from"] == to_millis("2024-06-01")
    assert made.json()["valid_to"] == "2025-01-01T00:00:00.000Z"
    bad = client.post("/v1/facts", json={**belief, "valid_to": "soon"},
                      headers=bearer(WRITER))  # fmt: skip
    assert bad.status_code == 422
    assert bad.json()["code"] == "ERR_SCHEMA" and bad.json()["path"] == "valid_to"


def test_a_write_outside_the_token_is_always_a_403(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    client, store = served
    before = len(store)
    for body in (
        {"type": "belief", "subject": "a", "relation": "r", "object": "o",
         "confidence": 0.5, "namespace": "hr"},  # fine but for its namespace
        {"type": "belief", "subject": "a", "namespace": "hr"},  # missing fields too
        {"type": "belief", "subject": "a", "relation": "r", "object": "o",
         "confidence": 7, "namespace": "hr", "created_at": "nonsense"},
        {"type": "belief", "subject": "a", "relation": "r", "object": "o",
         "confidence": 0.5},  # no namespace: shared, not the token's
    ):  # fmt: skip
        got = client.post("/v1/facts", json=body, headers=bearer(WRITER))
        assert got.status_code == 403, (body, got.text)
        assert got.json()["code"] == "ERR_INVALIDATION_DENIED"
        assert got.json()["path"] == "$.namespace"
    assert len(store) == before


def test_docs_show_fields_and_an_example_body(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    client, _store = served
    spec = client.get("/openapi.json", headers=bearer(ADMIN)).json()
    post = spec["paths"]["/v1/facts"]["post"]["requestBody"]["content"]
    schema = post["application/json"]["schema"]
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    for name in ("type", "subject", "relation", "object", "confidence", "created_at",
                 "namespace", "valid_from", "valid_to"):  # fmt: skip
        assert name in schema["properties"], name
    example = post["application/json"]["example"]
    made = client.post("/v1/facts", json=example, headers=bearer(ADMIN))
    assert made.status_code == 201, made.text  # the example is a body that works
    page = client.get("/docs", headers=bearer(ADMIN)).text
    assert "confidence" in page and "created_at" in page and "valid_from" in page
    assert "&quot;subject&quot;" in page or '"subject"' in page  # the example, shown
    assert "effective_confidence" in page  # the response's fields


def test_listing_pages_by_an_opaque_cursor(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    client, store = served
    store.put_many(
        [
            oms.Belief(
                f"s{i:03}",
                "r",
                f"o{i}",
                0.5,
                created_at=T0 - 1000 + i,
                namespace="crm" if i % 2 else "hr",
            )
            for i in range(250)
        ]
    )
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"limit": "40", **({"cursor": cursor} if cursor else {})}
        got = client.get("/v1/facts", params=params, headers=bearer(WRITER)).json()
        seen += [f["id"] for f in got["facts"]]
        pages += 1
        cursor = got["next_cursor"]
        if cursor is None:
            break
        assert not cursor.isdigit()  # opaque, not an offset
        if pages == 1:  # a write between pages changes no page: the point is pinned
            store.put(oms.Belief("late", "r", "o", 1.0, created_at=T0, namespace="crm"))
    assert pages == 4  # 125 of crm, 40 a page
    assert len(seen) == len(set(seen)) == 125
    assert {store.get(a).get("namespace") for a in seen} == {"crm"}
    every = [g.address for g in store.beliefs(namespace="crm", as_of=T0 - 1)]
    assert sorted(seen) == sorted(every)
    bad = client.get(
        "/v1/facts", params={"cursor": "not-a-cursor"}, headers=bearer(WRITER)
    )
    assert bad.status_code == 422 and bad.json()["path"] == "cursor"


def test_a_cursor_answers_only_the_listing_it_pages(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    """Parameters sent with a cursor were ignored: a cursor of every fact, sent
    with subject=ann, listed other subjects' facts."""
    client, store = served
    store.put_many([oms.Belief(f"s{i}", "r", "o", 0.5, created_at=T0 - 10 + i)
                    for i in range(3)])  # fmt: skip
    asked = {"limit": "1", "relation": "r", "valid_at": "2023-11-14T22:13:20Z"}
    first = client.get("/v1/facts", params=asked, headers=bearer(ADMIN)).json()
    cursor = first["next_cursor"]
    same = client.get("/v1/facts", params={**asked, "cursor": cursor},
                      headers=bearer(ADMIN))  # fmt: skip
    assert same.status_code == 200 and len(same.json()["facts"]) == 1
    alone = client.get(
        "/v1/facts", params={"limit": "1", "cursor": cursor}, headers=bearer(ADMIN)
    )
    assert alone.json() == same.json()
    for name, value in (("subject", "s0"), ("relation", "other"),
                        ("valid_at", "2024"), ("status", "active")):  # fmt: skip
        got = client.get(
            "/v1/facts", params={**asked, name: value, "cursor": cursor},
            headers=bearer(ADMIN),
        )  # fmt: skip
        assert got.status_code == 422 and got.json()["path"] == name, got.text


def test_a_listing_asked_again_after_a_write_is_read_again(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    client, store = served
    first = store.put(oms.Belief("ann", "works_at", "acme", 0.9, created_at=T0 - 10,
                                 namespace="crm"))  # fmt: skip

    def listed(**params: str) -> list[str]:
        got = client.get("/v1/facts", params=params, headers=bearer(ADMIN))
        return [f["id"] for f in got.json()["facts"]]

    # A status listing has no time, and these times are given: neither moves.
    asked = [{"status": "active"}, {"subject": "ann", "as_of": "2100-01-01"}]
    assert [listed(**q) for q in asked] == [[first], [first]]
    later = store.supersede(first, oms.Belief("ann", "works_at", "initech", 0.9,
                                              created_at=T0 - 5, namespace="crm"))  # fmt: skip
    assert [listed(**q) for q in asked] == [[later], [later]]
    store.retract(later, reason="wrong")
    assert [listed(**q) for q in asked] == [[], []]


@pytest.mark.soak
def test_a_later_page_costs_its_rows_at_20k_beliefs() -> None:
    store = GrainStore(clock=lambda: T0)
    store.put_many(
        [
            oms.Belief(f"s{i}", "r", f"o{i}", 0.5, created_at=T0 - 10**6 + i)
            for i in range(20_000)
        ]
    )
    with running(create_app(store)) as base, httpx.Client(base_url=base) as client:
        cursor = client.get("/v1/facts", params={"limit": "10"}).json()["next_cursor"]
        took = []
        for _ in range(20):
            start = time.perf_counter()
            page = client.get("/v1/facts", params={"limit": "10", "cursor": cursor})
            took.append(time.perf_counter() - start)
            cursor = page.json()["next_cursor"]
    assert sorted(took)[len(took) // 2] < 0.05, took  # the median page


@pytest.mark.parametrize(
    ("question", "scope"),
    [
        pytest.param({}, None, id="every-fact"),
        pytest.param({"namespace": "crm"}, None, id="a-namespace"),
        pytest.param({"relation": "r1"}, None, id="a-relation"),
        pytest.param({}, ("hr",), id="a-token's-namespaces"),
    ],
)
def test_paging_by_cursor_visits_every_fact_exactly_once(
    question: dict[str, str], scope: tuple[str, ...] | None
) -> None:
    """Streamed pages, then pages of the kept order (past 25 candidates here), with
    writes and an erasure between pages: each fact in force at the point the first
    page pinned is given once, and no other."""
    now = [T0]
    store = GrainStore(clock=lambda: now[0])
    made = store.put_many([
        oms.Belief(f"s{i % 40}", f"r{i % 3}", f"o{i}", 0.5, created_at=T0 - 5000 + i,
                   namespace="crm" if i % 2 else "hr",
                   **({"valid_to": T0 - 10} if i % 11 == 0 else {}))
        for i in range(300)
    ])  # fmt: skip
    for old in made[:30:3]:  # superseded before the point: the successor answers
        new = dict(store.get(old).fields, object="new", created_at=T0 - 1)
        store.supersede(old, new)
    store.retract(made[1], reason="wrong")
    token = Token(namespaces=scope)
    listings = Listings(store, streamed=25)
    asked: Listing | None = Listing.of(question, now=store.clock())
    expected = {
        g.address
        for g in store.beliefs(
            question.get("subject"), question.get("relation"),
            namespace=question.get("namespace"), valid_at=T0, as_of=T0,
        )
        if token.covers(g.namespace)
    }  # fmt: skip
    seen: list[str] = []
    pages = 0
    while asked is not None:
        addresses, asked = listings.page(token, asked, 7)
        seen += addresses
        pages += 1
        now[0] += 1000  # later writes, after the point: in no page
        store.put(oms.Belief(f"late{pages}", "r1", "o", 0.9, created_at=now[0],
                             namespace="hr"))  # fmt: skip
        if pages == 3:  # the last fact given is erased: the next page still follows
            erased = seen[-1]
            store.erase(erased, reason="asked to forget")
            expected.discard(erased)
            seen.remove(erased)
    assert len(seen) == len(set(seen))
    assert set(seen) == expected
    assert pages >= len(expected) // 7


def test_put_and_delete_take_a_portion_of_valid_time(
    served: tuple[httpx.Client, GrainStore],
) -> None:
    """A portion given to PUT or DELETE was ignored: the whole fact went."""
    client, store = served
    day = 86_400_000
    ann = store.put(oms.Belief("ann", "works_at", "acme", 0.9, created_at=T0 - 10,
                               namespace="crm", valid_from=T0 - 10 * day))  # fmt: skip
    bob = store.put(oms.Belief("bob", "works_at", "acme", 0.9, created_at=T0 - 10,
                               namespace="crm", valid_from=T0 - 10 * day))  # fmt: skip
    new = {"type": "belief", "subject": "ann", "relation": "works_at",
           "object": "initech", "confidence": 0.9, "namespace": "crm"}  # fmt: skip
    portion = {
        "valid_from": "ms:" + str(T0 - 6 * day),
        "valid_to": "ms:" + str(T0 - 4 * day),
    }
    got = client.put(
        f"/v1/facts/{ann}", json=new, params=portion, headers=bearer(WRITER)
    )
    assert got.status_code == 200, got.text
    gone = client.delete(f"/v1/facts/{bob}", params={"reason": "wrong", **portion},
                         headers=bearer(WRITER))  # fmt: skip
    assert gone.status_code == 200, gone.text
    assert len(gone.json()["split_into"]) == 2  # the pieces before and after

    def said(subject: str, days: int) -> list[str]:
        return [g["object"] for g in store.beliefs(subject, valid_at=T0 - days * day)]

    assert [said("ann", d) for d in (7, 5, 3)] == [["acme"], ["initech"], ["acme"]]
    assert [said("bob", d) for d in (7, 5, 3)] == [["acme"], [], ["acme"]]


def test_facts_without_created_at_take_the_clock_in_commit_order() -> None:
    """The server stamped a fact before taking the store: on a forward_only store
    a later-stamped write could commit first, and the earlier one was refused
    (ERR_RANGE) though its client left the time to the store. A batch's facts
    take the transaction's one time."""
    store = GrainStore(forward_only=True)
    tokens = {ADMIN: Token(namespaces=None, write=True)}
    codes: list[int] = []
    with running(create_app(store, tokens=tokens)) as base:

        def post(worker: int) -> None:
            with httpx.Client(base_url=base) as client:
                for i in range(15):
                    fact = {"type": "belief", "subject": f"w{worker}", "relation": "r",
                            "object": f"o{i}", "confidence": 0.8}  # fmt: skip
                    codes.append(client.post("/v1/facts", json=fact,
                                             headers=bearer(ADMIN)).status_code)  # fmt: skip

        workers = [threading.Thread(target=post, args=(w,)) for w in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        batch = [{"op": "put", "fact": {"type": "belief", "subject": f"b{i}",
                                         "relation": "r", "object": "o",
                                         "confidence": 0.8}} for i in range(50)]  # fmt: skip
        done = httpx.post(base + "/v1/transactions", json={"operations": batch},
                          headers=bearer(ADMIN)).json()["operations"]  # fmt: skip
    assert codes == [201] * 120
    assert len({store.get(d["id"])["created_at"] for d in done}) == 1
