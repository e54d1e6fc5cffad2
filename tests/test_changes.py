"""What changed between two points, on each axis, on a hand-derived story."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.cli import cli
from tests.test_versions import DAY, T0, Step, belief, build, steps, story


def objects(grains: oms.GrainList) -> list[str]:
    return sorted(g["object"].rsplit("/", 1)[1] for g in grains)


@pytest.fixture
def store() -> oms.GrainStore:
    # Day 0: Ann works at Acme (since day 0). Day 10: we learn she moved to
    # Initech on day 5 (a late correction). Day 20: we learn she left Initech.
    return story()


def test_both_axes(store: oms.GrainStore) -> None:
    delta = store.changes(T0 + DAY, T0 + 12 * DAY)
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])
    delta = store.changes(T0 + 12 * DAY, T0 + 25 * DAY)
    assert (objects(delta.entered), objects(delta.left)) == ([], ["initech"])
    assert objects(store.changes(T0 + 2 * DAY, T0 + 3 * DAY).entered) == []


def test_valid_time_as_known_later(store: oms.GrainStore) -> None:
    # As known on day 12: the world changed on day 5.
    delta = store.changes(T0 + 2 * DAY, T0 + 12 * DAY, axis="valid")
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])


def test_what_the_store_learnt(store: oms.GrainStore) -> None:
    # About day 12: believed Acme on day 2, learnt Initech by day 12.
    delta = store.changes(T0 + 2 * DAY, T0 + 12 * DAY, axis="system")
    assert (objects(delta.entered), objects(delta.left)) == (["initech"], ["acme"])
    # As known on day 3, nothing changed between days 2 and 3.
    delta = store.changes(T0 + 2 * DAY, T0 + 3 * DAY, axis="valid")
    assert (objects(delta.entered), objects(delta.left)) == ([], [])


def test_an_unknown_axis_is_refused(store: oms.GrainStore) -> None:
    with pytest.raises(oms.SchemaError):
        store.changes(T0, T0 + DAY, axis="sideways")  # type: ignore[arg-type]


def test_the_delta_is_one_sparql_query_too(store: oms.GrainStore) -> None:
    from datetime import UTC, datetime

    from oms_rdf.rdf.inforce import delta_query
    from oms_rdf.rdf.mapping import millis_literal

    if not store.backend.exact_optionals:  # README: store.changes() asks otherwise
        pytest.skip("Virtuoso misreads OPTIONAL variables beside a FILTER")

    def at(day: int) -> datetime:
        return datetime.fromtimestamp((T0 + day * DAY) / 1000, tz=UTC)

    rows = store.query(
        delta_query(()),
        grains=True,
        validSince=at(1),
        asOfSince=at(1),
        validUntil=at(12),
        asOfUntil=at(12),
    )
    expected = [("entered", "initech"), ("left", "acme")]
    assert (
        sorted((r["change"].value, r["o"].value.rsplit("/", 1)[1]) for r in rows)
        == expected
    )
    # The points written into the query (the form store.changes() asks).
    points = tuple(millis_literal(T0 + d * DAY) for d in (1, 1, 12, 12))
    written = store.query(delta_query((), points), grains=True)
    assert (
        sorted((r["change"].value, r["o"].value.rsplit("/", 1)[1]) for r in written)
        == expected
    )


def test_oms_rdf_diff(tmp_path: Path) -> None:
    db = tmp_path / "db"
    with oms.GrainStore(db, clock=lambda: T0 + 30 * DAY) as built:
        acme = built.put(belief("acme", at=T0, valid=T0))
        built.supersede(acme, belief("initech", at=T0 + 10 * DAY, valid=T0 + 5 * DAY))
    since, until = f"ms:{T0 + DAY}", f"ms:{T0 + 12 * DAY}"
    out = CliRunner().invoke(cli, ["--store", str(db), "diff", since, until, "--json"])
    assert out.exit_code == 0, out.output
    delta = json.loads(out.output)
    assert [r["object"] for r in delta["entered"]] == ["http://example.org/initech"]
    assert [r["object"] for r in delta["left"]] == ["http://example.org/acme"]
    table = CliRunner().invoke(cli, ["--store", str(db), "diff", since, until])
    lines = table.output.splitlines()
    assert lines[0].split()[:2] == ["change", "address"]
    assert [line.split()[0] for line in lines[1:]] == ["entered", "left"]
    valid = CliRunner().invoke(
        cli, ["--store", str(db), "diff", since, "ms:" + str(T0 + 3 * DAY),
              "--axis", "valid", "--json"],
    )  # fmt: skip
    # As known on day 3 (before the correction), nothing changed on days 1 to 3.
    assert json.loads(valid.output) == {"entered": [], "left": []}
    bad = CliRunner().invoke(cli, ["--store", str(db), "diff", "yesterday"])
    assert bad.exit_code != 0 and "ERR_SCHEMA" in bad.output + bad.stderr


# Over a server (the soak tier) each example is hundreds of round trips.
@settings(
    max_examples={None: 30, "virtuoso": 2}.get(
        os.environ.get("OMS_RDF_TEST_BACKEND"), 8
    ),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(history=steps, a=st.integers(-5, 30), b=st.integers(-5, 30))
def test_the_delta_is_the_difference_of_the_two_points(
    history: list[Step], a: int, b: int
) -> None:
    built = build(history)
    built.core.intervals.read_at_question = 1
    since, until = T0 + a * DAY, T0 + b * DAY
    points = {"both": (since, since), "valid": (since, until), "system": (until, since)}
    # Asked of the grain layer's delta query, and of the interval layer's
    # extents where the backend keeps them (embedded stores).
    for layer in (False, built.backend.intervals):
        built.backend.intervals = layer
        for axis, (valid, known) in points.items():
            before = {g.address for g in built.beliefs(valid_at=valid, as_of=known)}
            after = {g.address for g in built.beliefs(valid_at=until, as_of=until)}
            delta = built.changes(since, until, axis=axis)  # type: ignore[arg-type]
            assert [g.address for g in delta.entered] == [
                g.address
                for g in built.beliefs(valid_at=until, as_of=until)
                if g.address not in before
            ], (axis, layer)
            assert {g.address for g in delta.left} == before - after, (axis, layer)
