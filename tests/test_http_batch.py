"""POST /v1/transactions over a real served store: a publication as one
transaction, all or nothing, checked against the token like every write route."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_http_abuse import A_WRITER, ADMIN, B_WRITER, Served, bearer, start, stop

from oms_rdf import GrainStore

T0 = 1_767_225_600_000
DAY = 86_400_000
EX = "http://example.org/"


def fact(subject: str, obj: str, namespace: str = "a", **more: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": EX + subject, "relation": EX + "worksAt",
            "object": EX + obj, "confidence": 0.9, "namespace": namespace,
            "created_at": T0, **more}  # fmt: skip


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Served, dict[str, str]]]:
    """One server for the module: the refusals write nothing, the publication
    (the last test) writes."""
    path = tmp_path_factory.mktemp("batch") / "db"
    store = GrainStore(path)
    ids = {
        "ann": store.put(fact("ann", "acme", valid_from=T0, valid_to=T0 + 10 * DAY)),
        "bo": store.put(fact("bo", "initech")),
        "cy": store.put(fact("cy", "hooli", namespace="b")),
    }
    store.close()
    running = start(path)
    try:
        yield running, ids
    finally:
        stop(running)


def post(served: Served, token: str, operations: Any) -> httpx.Response:
    return httpx.post(served.base + "/v1/transactions", json={"operations": operations},
                      headers=bearer(token), timeout=30)  # fmt: skip


def snapshot(served: Served) -> list[str]:
    """Every quad of the served store, read beside the server."""
    with GrainStore(served.path, read_only=True) as store:
        return sorted(str(q) for q in store.core.backend.quads())


def objects_at(served: Served, subject: str, day: int) -> list[str]:
    q = f"SELECT ?o WHERE {{ <{EX}{subject}> <{EX}worksAt> ?o }}"
    answer = httpx.get(served.base + "/sparql",
                       params={"query": q, "valid_at": str(T0 + day * DAY)},
                       headers={**bearer(ADMIN), "accept": "application/sparql-results+json"},
                       timeout=30).json()  # fmt: skip
    return sorted(b["o"]["value"] for b in answer["results"]["bindings"])


@pytest.mark.parametrize(
    ("token", "make", "status", "code"),
    [
        # a fact of namespace b, through a token of namespace a: not found
        (A_WRITER, lambda ids: {"op": "retract", "id": ids["cy"], "reason": "x"}, 404,
         "ERR_NOT_FOUND"),
        # a new fact outside the token: refused
        (A_WRITER, lambda ids: {"op": "put", "fact": fact("ed", "acme", namespace="b")}, 403,
         "ERR_INVALIDATION_DENIED"),
        # a portion that misses the fact's valid time
        (A_WRITER, lambda ids: {"op": "retract", "id": ids["ann"], "reason": "x",
                                "valid_from": T0 + 20 * DAY}, 409, "ERR_RANGE"),
        # an operation on what an earlier one of the transaction changed
        (A_WRITER, lambda ids: {"op": "contradict", "id": ids["bo"]}, 409, "ERR_CONFLICT"),
        # not an operation
        (B_WRITER, lambda ids: {"op": "drop", "id": ids["cy"]}, 422, "ERR_SCHEMA"),
        # a portion of valid time where the operation has none
        (A_WRITER, lambda ids: {"op": "put", "fact": fact("ed", "acme"),
                                "valid_from": T0}, 422, "ERR_SCHEMA"),
        (B_WRITER, lambda ids: {"op": "contradict", "id": ids["cy"], "reason": "x",
                                "valid_from": T0, "valid_to": T0 + DAY}, 422, "ERR_SCHEMA"),
    ],
)  # fmt: skip
def test_a_refused_operation_writes_nothing(
    served: tuple[Served, dict[str, str]], token: str, make: Any, status: int, code: str
) -> None:
    running, ids = served
    before = snapshot(running)
    first = (
        {"op": "retract", "id": ids["bo"], "reason": "left"}
        if token == A_WRITER
        else {"op": "retract", "id": ids["cy"], "reason": "left"}
    )
    response = post(running, token, [first, make(ids)])
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    # which operation, whatever refused it (a namespace outside the token too:
    # $.operations[1].fact.namespace)
    assert body["path"].startswith("$.operations[1]")
    assert snapshot(running) == before


def test_a_refusal_names_the_operation_and_its_field_once(
    served: tuple[Served, dict[str, str]],
) -> None:
    running, ids = served
    before = snapshot(running)
    made = fact("fay", "acme")
    address = GrainStore().accept(made)[0].address
    cases = [
        ({"op": "retract", "id": ids["bo"]}, 422, "ERR_SCHEMA", "$.operations[1].reason"),
        ({"op": "retract", "id": 7, "reason": "x"}, 422, "ERR_SCHEMA", "$.operations[1].id"),
        ({"op": "supersede", "id": ids["bo"], "fact": "x"}, 422, "ERR_SCHEMA",
         "$.operations[1].fact"),
        # what an earlier operation of the batch makes is not stored yet
        ({"op": "retract", "id": address, "reason": "x"}, 409, "ERR_CONFLICT",
         "$.operations[1]"),
        ({"op": "retract", "id": address[:12], "reason": "x"}, 409, "ERR_CONFLICT",
         "$.operations[1]"),
    ]  # fmt: skip
    for second, status, code, path in cases:
        response = post(running, A_WRITER, [{"op": "put", "fact": made}, second])
        assert response.status_code == status, response.text
        assert (response.json()["code"], response.json()["path"]) == (code, path)
    # a supersede makes its fact derived from the old one, valid over its portion
    given = fact("ann", "initech", created_at=T0 + 1)
    portion = {"valid_from": T0 + 2 * DAY, "valid_to": T0 + 4 * DAY}
    really = GrainStore().accept({**given, **portion, "derived_from": [ids["ann"]]})[0]
    first = {"op": "supersede", "id": ids["ann"], "fact": given, **portion}
    for named, status, code in (
        (really.address, 409, "ERR_CONFLICT"),
        (GrainStore().accept(given)[0].address, 404, "ERR_NOT_FOUND"),  # never made
    ):
        response = post(running, A_WRITER, [first, {"op": "retract", "id": named,
                                                    "reason": "x"}])  # fmt: skip
        assert (response.status_code, response.json()["code"]) == (status, code)
    too_long = b'{"operations": [{"op": "put", "fact": {"confidence": ' + b"9" * 5000
    response = httpx.post(running.base + "/v1/transactions", content=too_long + b"}}]}",
                          headers=bearer(A_WRITER), timeout=30)  # fmt: skip
    assert response.status_code == 422
    assert response.json()["code"] == "ERR_RANGE"  # as /v1/facts answers it
    assert snapshot(running) == before


def test_a_read_only_token_and_a_malformed_body_are_refused(
    served: tuple[Served, dict[str, str]],
) -> None:
    running, _ids = served
    before = snapshot(running)
    reader = "a-reader-00000000001"
    assert (
        post(running, reader, [{"op": "put", "fact": fact("x", "y")}]).status_code
        == 403
    )
    assert post(running, A_WRITER, []).status_code == 422
    assert post(running, A_WRITER, "put").status_code == 422
    assert snapshot(running) == before


def test_a_publication_is_one_transaction(
    served: tuple[Served, dict[str, str]],
) -> None:
    running, ids = served
    response = post(running, A_WRITER, [
        {"op": "supersede", "id": ids["ann"], "fact": fact("ann", "umbrella", created_at=T0 + 1),
         "valid_from": T0 + 2 * DAY, "valid_to": T0 + 4 * DAY},
        {"op": "retract", "id": ids["bo"], "reason": "left"},
        {"op": "put", "fact": fact("di", "acme", created_at=T0 + 1)},
    ])  # fmt: skip
    assert response.status_code == 201, response.text
    done = response.json()["operations"]
    assert [d["op"] for d in done] == ["supersede", "retract", "put"]
    assert len(done[0]["split_into"]) == 3 and done[0]["id"] in done[0]["split_into"]
    assert "split_into" not in done[1]
    assert done[1]["id"] == ids["bo"]
    # FOR PORTION OF: Umbrella over [day 2, day 4), Acme before and after
    assert objects_at(running, "ann", 1) == [EX + "acme"]
    assert objects_at(running, "ann", 3) == [EX + "umbrella"]
    assert objects_at(running, "ann", 5) == [EX + "acme"]
    assert objects_at(running, "bo", 1) == []
    with GrainStore(running.path, read_only=True) as store:
        assert store.verify_audit().ok
        assert store.beliefs(EX + "di")[0]["object"] == EX + "acme"
        # the successor, and the pieces before and after its portion
        parts = sorted(g.address for g in store.derived(ids["ann"]))
        assert len(parts) == 3
    # ... each in the fact's split, each with the fact before it
    got = httpx.get(running.base + f"/v1/facts/{ids['ann']}", headers=bearer(A_WRITER))
    assert sorted(got.json()["split_into"]) == parts
    for part in parts:
        before = httpx.get(running.base + f"/v1/facts/{part}/ancestors",
                           headers=bearer(A_WRITER)).json()  # fmt: skip
        assert [f["id"] for f in before["facts"]] == [ids["ann"]]
