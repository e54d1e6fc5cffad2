"""Range questions: every triple in force at some point of a valid-time range,
with the extent in which it held bound to ?validFrom ?validTo ?systemFrom ?systemTo.
"""

from __future__ import annotations

from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.rdf.mapping import literal_value
from tests.test_versions import ANN, DAY, T0, WORKS, belief, story

ASK = f"SELECT ?o ?validFrom ?validTo ?systemFrom ?systemTo WHERE {{ <{ANN}> <{WORKS}> ?o }}"


def day(term: Any) -> int | None:
    return None if term is None else (literal_value(term) - T0) // DAY


def rows(result: Any) -> set[tuple[Any, ...]]:
    return {
        (r["o"].value.rsplit("/", 1)[1], day(r["validFrom"]), day(r["validTo"]),
         day(r["systemFrom"]), day(r["systemTo"]))
        for r in result
    }  # fmt: skip


def test_a_valid_range_as_known_now() -> None:
    store = story()  # now: day 30. Acme [0, 5) as known from day 10; Initech retracted.
    assert rows(store.query(ASK, valid_during=(T0 + DAY, T0 + 8 * DAY))) == {
        ("acme", 0, 5, 10, None)
    }
    assert rows(store.query(ASK, valid_during=(T0 + 6 * DAY, T0 + 8 * DAY))) == set()


def test_a_valid_range_as_known_then() -> None:
    store = story()
    # As known on day 12: Acme [0, 5) and Initech [5, open), both from day 10;
    # Initech's retraction on day 20 was not known yet: its system end is open.
    got = store.query(ASK, valid_during=(T0 + DAY, T0 + 8 * DAY), as_of=T0 + 12 * DAY)
    assert rows(got) == {("acme", 0, 5, 10, None), ("initech", 5, None, 10, None)}
    # As known on day 2: Acme, open-ended, known from day 0 (the supersession
    # on day 10 not known yet).
    got = store.query(ASK, valid_during=(T0 + 6 * DAY, None), as_of=T0 + 2 * DAY)
    assert rows(got) == {("acme", 0, None, 0, None)}


def test_a_range_as_known_then_is_what_the_store_held_then() -> None:
    """What a range answers as of a past time is what a store holding only the
    writes made by then answers, whatever came after (the forward-only
    guarantee holds for ranges too)."""
    then = oms.GrainStore(clock=lambda: T0 + 12 * DAY)
    acme = then.put(belief("acme", at=T0, valid=T0))
    then.supersede(acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY))
    later = story()  # the same, and a retraction on day 20
    for as_of in (T0 + 2 * DAY, T0 + 12 * DAY):
        for valid in ((None, None), (T0 + DAY, T0 + 8 * DAY), (T0 + 6 * DAY, None)):
            want = rows(then.query(ASK, valid_during=valid, as_of=as_of))
            assert rows(later.query(ASK, valid_during=valid, as_of=as_of)) == want


@pytest.mark.parametrize(
    ("axis", "span"),
    [
        ("valid_during", (T0 + 5 * DAY, T0 + 5 * DAY)),
        ("valid_during", (T0 + 9 * DAY, T0 + DAY)),
        ("system_during", (T0 + 9 * DAY, T0 + DAY)),
    ],
)
def test_a_range_that_holds_no_time_is_refused(
    axis: str, span: tuple[int, int]
) -> None:
    store = story()
    ranges: dict[str, Any] = {"valid_during": (None, None), axis: span}
    with pytest.raises(oms.TimeRangeError) as refused:
        store.query(ASK, **ranges)
    assert refused.value.code == "ERR_RANGE"
    assert axis in str(refused.value) and "holds no time" in str(refused.value)


def test_all_of_system_time_gives_every_version() -> None:
    store = story()
    got = store.query(ASK, valid_during=(None, None), system_during=(None, None))
    want = {
        (v.grain["object"].rsplit("/", 1)[1],
         (v.valid_from - T0) // DAY, None if v.valid_to is None else (v.valid_to - T0) // DAY,
         (v.system_from - T0) // DAY, None if v.system_to is None else (v.system_to - T0) // DAY)
        for v in store.versions(ANN, WORKS)
    }  # fmt: skip
    assert (
        rows(got)
        == want
        == {
            ("acme", 0, None, 0, 10),
            ("acme", 0, 5, 10, None),
            ("initech", 5, None, 10, 20),
        }
    )


def test_a_system_range_at_one_valid_time_is_how_that_time_was_known() -> None:
    store = story()  # now: day 30
    every = (None, None)
    at = {2: {("acme", 0, None, 0, 10), ("acme", 0, 5, 10, None)},
          7: {("acme", 0, None, 0, 10), ("initech", 5, None, 10, 20)}}  # fmt: skip
    for valid_day, want in at.items():
        got = store.query(ASK, valid_at=T0 + valid_day * DAY, system_during=every)
        assert rows(got) == want
    # Without a valid time: now's, as every other question.
    assert rows(store.query(ASK, system_during=every)) == at[7]
    with pytest.raises(oms.QueryError) as refused:
        store.query(ASK, as_of=T0, system_during=every)
    assert "as_of with system_during" in str(refused.value)


def test_a_join_holds_where_both_triples_held() -> None:
    # Ann at Acme [0, 5) then Initech [5, open); Acme in Paris [3, 9); Initech in
    # Rome from day 0. Where was Ann's employer, during days [0, 20)?
    store = oms.GrainStore(clock=lambda: T0 + 30 * DAY)
    acme = store.put(belief("acme", at=T0, valid=T0))
    store.supersede(acme, belief("initech", at=T0 + DAY, valid=T0 + 5 * DAY))
    city = "http://example.org/in"
    for org, place, start, end in (
        ("acme", "paris", 3, 9),
        ("initech", "rome", 0, None),
    ):
        fields = {"type": "belief", "subject": f"http://example.org/{org}",
                  "relation": city, "object": f"http://example.org/{place}",
                  "confidence": 0.9, "created_at": T0, "valid_from": T0 + start * DAY}  # fmt: skip
        if end is not None:
            fields["valid_to"] = T0 + end * DAY
        store.put(fields)
    query = f"""SELECT ?c ?validFrom ?validTo WHERE {{
      <{ANN}> <{WORKS}> ?o . ?o <{city}> ?c }}"""
    got = store.query(query, valid_during=(T0, T0 + 20 * DAY))
    spans = {
        (r["c"].value.rsplit("/", 1)[1], day(r["validFrom"]), day(r["validTo"]))
        for r in got
    }
    assert spans == {("paris", 3, 5), ("rome", 5, None)}
    # The extent variables can be used by the query itself.
    ordered = store.query(
        query + " ORDER BY DESC(?validFrom)", valid_during=(T0, T0 + 20 * DAY)
    )
    assert [r["c"].value.rsplit("/", 1)[1] for r in ordered] == ["rome", "paris"]


def test_a_range_with_a_point_or_a_form_it_cannot_take_is_refused() -> None:
    store = story()
    with pytest.raises(oms.QueryError):
        store.query(ASK, valid_during=(T0, T0 + DAY), valid_at=T0)
    with pytest.raises(oms.QueryError) as refused:
        store.query(
            f"SELECT ?o WHERE {{ <{ANN}> <{WORKS}>+ ?o }}", valid_during=(T0, None)
        )
    assert "repeats" in str(refused.value)


@pytest.mark.parametrize(
    "kind",
    [
        "oxigraph",
        pytest.param("virtuoso", marks=pytest.mark.servers("virtuoso-opensource")),
    ],
)
def test_a_range_is_answered_on_a_server(tmp_path: Any, kind: str) -> None:
    """On a new server too: Virtuoso's cost estimate of the range's rewrite over
    a database this small overflowed its limit (the README's settings turn it off)."""
    from tests.servers import STARTERS, backend_for

    (tmp_path / kind).mkdir()
    process, base = STARTERS[kind](tmp_path / kind)
    try:
        store = oms.GrainStore(
            backend=backend_for(kind, base), clock=lambda: T0 + 30 * DAY
        )
        acme = store.put(belief("acme", at=T0, valid=T0))
        store.supersede(acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY))
        got = store.query(ASK, valid_during=(None, None), system_during=(None, None))
        assert rows(got) == {
            ("acme", 0, None, 0, 10),
            ("acme", 0, 5, 10, None),
            ("initech", 5, None, 10, None),
        }
        optional = ASK.replace(
            "?o }", "?o OPTIONAL { ?o <http://example.org/in> ?c } }"
        )
        joined = ASK.replace("?o }", "?o . ?o <http://example.org/in> ?c }")
        if kind == "virtuoso":  # it misreads OPTIONAL variables: refused, never wrong
            for query, found in ((optional, "an OPTIONAL"), (joined, "two triple")):
                with pytest.raises(oms.QueryError) as refused:
                    store.query(query, valid_during=(None, None))
                assert found in str(refused.value)
        else:
            assert rows(store.query(joined, valid_during=(None, None))) == set()
            assert rows(store.query(optional, valid_during=(None, None))) == {
                ("acme", 0, 5, 10, None),
                ("initech", 5, None, 10, None),
            }
        store.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
