"""Changes over a portion of valid time (SQL:2011 FOR PORTION OF), against a
reference interval model."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.codec.grain import system_from

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01
ANN, WORKS = "http://example.org/ann", "http://example.org/worksAt"


def fields(
    obj: str, *, start: int, end: int | None, at: int, **more: Any
) -> dict[str, Any]:
    out = {"type": "belief", "subject": ANN, "relation": WORKS, "object": obj,
           "confidence": 0.8, "created_at": at, "valid_from": start, **more}  # fmt: skip
    if end is not None:
        out["valid_to"] = end
    return out


def objects(store: oms.GrainStore, day: int, known: int) -> list[str]:
    return sorted(
        g["object"]
        for g in store.beliefs(ANN, WORKS, valid_at=T0 + day * DAY, as_of=known)
    )


def model(day: int, old: tuple[int, int | None], cut: tuple[int, int | None],
          new: str | None) -> list[str]:  # fmt: skip
    """What holds on a day after the change: the new value inside the portion
    and the old interval (SQL:2011: the updated row's period is their
    intersection; none for a retraction), the old one in the rest of its interval."""
    inside = cut[0] <= day and (cut[1] is None or day < cut[1])
    in_old = old[0] <= day and (old[1] is None or day < old[1])
    if inside:
        return [new] if new is not None and in_old else []
    return ["http://example.org/acme"] if in_old else []


intervals = st.tuples(st.integers(0, 20), st.one_of(st.none(), st.integers(1, 20)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=intervals, cut=intervals, retract=st.booleans())
def test_a_change_over_a_portion_matches_the_interval_model(
    old: tuple[int, int | None], cut: tuple[int, int | None], retract: bool
) -> None:
    old = (old[0], None if old[1] is None else old[0] + old[1])
    cut = (cut[0], None if cut[1] is None else cut[0] + cut[1])
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    first = store.put(fields("http://example.org/acme", start=T0 + old[0] * DAY,
                             end=None if old[1] is None else T0 + old[1] * DAY, at=T0))  # fmt: skip
    overlaps = (old[1] is None or cut[0] < old[1]) and (
        cut[1] is None or old[0] < cut[1]
    )
    portion = {"valid_from": T0 + cut[0] * DAY,
               "valid_to": None if cut[1] is None else T0 + cut[1] * DAY}  # fmt: skip
    change = T0 + 50 * DAY
    new_value = None if retract else "http://example.org/initech"
    if not overlaps:
        with pytest.raises(oms.PolicyError) as caught:
            if retract:
                store.retract(first, reason="wrong", at=change, **portion)
            else:
                store.supersede(first, fields(new_value or "", start=0, end=None, at=change)
                                | {"valid_from": portion["valid_from"]}
                                | ({"valid_to": portion["valid_to"]} if portion["valid_to"] else {}),
                                **portion)  # fmt: skip
        assert caught.value.code == "ERR_RANGE"
        return
    made: list[str] = []
    if retract:
        store.retract(first, reason="wrong", at=change, **portion)
    else:
        new = {k: v for k, v in fields(new_value or "", start=0, end=None, at=change).items()
               if k not in ("valid_from", "valid_to")}  # fmt: skip
        made.append(store.supersede(first, new, justification="corrected", **portion))
    # The spec's superseded_by names the new grain, whatever the pieces.
    assert store.status(first).superseded_by == (made[0] if made else None)
    after = T0 + 60 * DAY
    for day in range(-1, 45):
        assert objects(store, day, after) == model(day, old, cut, new_value), day
        # SPARQL at the point answers as the lookups do.
        rows = store.query(f"SELECT ?o WHERE {{ <{ANN}> <{WORKS}> ?o }}",
                           valid_at=T0 + day * DAY, as_of=after)  # fmt: skip
        assert sorted(str(r[0].value) for r in rows) == objects(store, day, after)
        # What was believed before the change is as it was.
        assert objects(store, day, T0 + DAY) == model(day, old, (10**9, None), None)
    # Every piece is a grain of its own, derived from the old one.
    kept = [g.address for g in store.derived(first) if g.address not in made]
    for grain in store.derived(first):
        assert grain["derived_from"] == [first]
    # The old grain's history holds every grain written in its place, and each
    # of them has the old grain before it.
    parts = sorted([*made, *kept]) if kept else []
    assert list(store.status(first).split_into) == parts
    chain = {g.address for g in store.history(first)}
    assert chain == {first, *made, *kept}
    starts = [g["valid_from"] for g in store.history(first)[1:]]  # one system time
    assert starts == sorted(starts)  # so the one valid first comes first
    for part in [*made, *kept]:
        assert {g.address for g in store.history(part)} == chain
        assert [g.address for g in store.ancestors(part)] == [first]


def test_the_pieces_carry_the_old_policy_and_a_soft_lock_needs_a_justification() -> (
    None
):
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    locked = store.put(fields("http://example.org/acme", start=T0, end=T0 + 30 * DAY, at=T0,
                              invalidation_policy={"mode": "soft_locked"}))  # fmt: skip
    new = fields("http://example.org/initech", start=T0 + 10 * DAY,
                 end=T0 + 20 * DAY, at=T0 + 50 * DAY)  # fmt: skip
    before = sorted(str(q) for q in store.core.backend.quads())
    with pytest.raises(oms.PolicyError) as caught:
        store.supersede(locked, new, valid_from=T0 + 10 * DAY, valid_to=T0 + 20 * DAY)
    assert caught.value.code == "ERR_INVALIDATION_DENIED"
    assert sorted(str(q) for q in store.core.backend.quads()) == before
    store.supersede(locked, new, valid_from=T0 + 10 * DAY, valid_to=T0 + 20 * DAY,
                    justification="payroll shows the move")  # fmt: skip
    pieces = [g for g in store.derived(locked) if g["object"].endswith("acme")]
    assert sorted((g["valid_from"], g["valid_to"]) for g in pieces) == [
        (T0, T0 + 10 * DAY),
        (T0 + 20 * DAY, T0 + 30 * DAY),
    ]
    assert all(g["invalidation_policy"] == {"mode": "soft_locked"} for g in pieces)
    with pytest.raises(oms.PolicyError):
        store.supersede(pieces[0].address, fields("http://example.org/x", start=T0,
                                                  end=T0 + DAY, at=T0 + 60 * DAY))  # fmt: skip


def test_a_new_grain_valid_outside_the_portion_is_refused() -> None:
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    old = store.put(fields("http://example.org/acme", start=T0, end=None, at=T0))
    new = fields("http://example.org/initech", start=T0, end=None, at=T0 + DAY)
    with pytest.raises(oms.SchemaError):
        store.supersede(old, new, valid_from=T0 + 10 * DAY, valid_to=T0 + 20 * DAY)
    assert store.status(old).status == "active"


@pytest.mark.parametrize(
    ("given", "portion", "valid"),
    [
        ({"valid_to": 20}, (10, 20), (10, 20)),  # the start from the portion
        ({"valid_from": 10}, (10, 20), (10, 20)),  # the end from the portion
        ({"valid_from": 10}, (10, None), (10, 30)),  # the end: the old grain's
        ({}, (5, None), (5, 30)),  # the intersection
    ],
)
def test_a_mapping_giving_one_end_takes_the_other_from_the_intersection(
    given: dict[str, int], portion: tuple[int, int | None], valid: tuple[int, int]
) -> None:
    """SQL:2011's updated row holds over the portion within the old one."""
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    old = store.put(
        fields("http://example.org/acme", start=T0, end=T0 + 30 * DAY, at=T0)
    )
    new = fields("http://example.org/initech", start=0, end=None, at=T0 + DAY)
    del new["valid_from"]
    new.update({k: T0 + v * DAY for k, v in given.items()})
    start, end = portion
    made = store.supersede(old, new, valid_from=T0 + start * DAY,
                           valid_to=None if end is None else T0 + end * DAY)  # fmt: skip
    grain = store.get(made)
    assert (grain["valid_from"], grain["valid_to"]) == tuple(
        T0 + v * DAY for v in valid
    )


def test_a_retraction_over_a_portion_ends_the_grain_when_its_pieces_begin() -> None:
    readings = iter(range(T0 + 10 * DAY, T0 + 11 * DAY))  # moves at every reading
    store = oms.GrainStore(clock=lambda: next(readings))
    first = store.put(oms.Grain.from_dict(fields("Acme", start=T0, end=None, at=T0)))
    store.retract(first, reason="wrong", valid_from=T0 + 2 * DAY, valid_to=T0 + 4 * DAY)
    state = store.status(first)
    pieces = store.derived(first)
    assert len(pieces) == 2  # before the portion, and after it
    # No moment at which neither the grain nor its pieces are in force.
    assert {system_from(p) for p in pieces} == {state.voided_at}
    assert state.system_to == state.voided_at
    assert objects(store, 1, state.voided_at) == ["Acme"]
    assert objects(store, 1, state.voided_at - 1) == ["Acme"]
    assert objects(store, 3, state.voided_at) == []


def supersede_days_10_to_20(store: oms.GrainStore, old: str, obj: str) -> None:
    """Supersede ``old`` by ``obj`` over days [10, 20) of valid time, on day 1."""
    new = fields(obj, start=0, end=None, at=T0 + DAY)
    store.supersede(
        old,
        {k: v for k, v in new.items() if not k.startswith("valid")},
        valid_from=T0 + 10 * DAY,
        valid_to=T0 + 20 * DAY,
    )


@pytest.mark.parametrize("fmt", ["mg", "jsonl", "trig", "nquads", "jsonld"])
def test_the_split_travels_with_every_export(fmt: str) -> None:
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    first = store.put(fields("http://example.org/acme", start=T0, end=None, at=T0))
    supersede_days_10_to_20(store, first, "http://example.org/initech")
    parts = [store.get(a) for a in store.status(first).split_into]
    later = next(g for g in parts if g["valid_from"] == T0 + 20 * DAY).address
    store.retract(later, reason="wrong", at=T0 + 2 * DAY, valid_from=T0 + 30 * DAY,
                  valid_to=T0 + 40 * DAY)  # fmt: skip
    out = io.BytesIO()
    store.export(out, format=fmt)
    copy = oms.GrainStore(clock=store.clock)
    copy.import_(io.BytesIO(out.getvalue()), format=fmt)
    for grain in store.history(first):
        assert copy.status(grain.address) == store.status(grain.address)
        assert copy.history(grain.address) == store.history(grain.address)
    assert len(store.history(first)) == 6  # the first, its 3 parts, 2 more of one


def test_an_import_refuses_a_split_into_no_grain_here() -> None:
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    first = store.put(fields("http://example.org/acme", start=T0, end=None, at=T0))
    store.retract(first, reason="wrong", at=T0 + DAY, valid_from=T0 + 3 * DAY)
    out = io.BytesIO()
    store.export(out, format="nquads")
    piece = store.status(first).split_into[0]
    for wrong in ('"text"', f"<nih:sha-256;{'0' * 64}>", f"<nih:sha-256;{first}>"):
        text = (
            out.getvalue()
            .decode()
            .replace(
                f"<nih:sha-256;{piece}> <https://w3id.org/oms-rdf/ns#index>",
                f"{wrong} <https://w3id.org/oms-rdf/ns#index>",
            )
        )
        assert text != out.getvalue().decode()
        with pytest.raises(oms.OmsError) as caught:
            oms.GrainStore().import_(io.BytesIO(text.encode()), format="nquads")
        assert "split into" in str(caught.value)


def test_cutting_a_piece_again_and_again_keeps_a_subtree_protection() -> None:
    """Each piece derives from the grain it was cut from: counted as derivation
    hops, seventeen cuts (each needing only a reason) took the grain past the
    16 hops a subtree policy reaches, and then nothing protected it."""
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    boss = store.put(fields("http://example.org/boss", start=T0, end=None, at=T0,
                            relation="http://example.org/reportsTo",
                            invalidation_policy={"mode": "soft_locked",
                                                 "scope": "subtree"}))  # fmt: skip
    current = store.put(fields("http://example.org/acme", start=T0, end=T0 + 40 * DAY,
                               at=T0, derived_from=[boss]))  # fmt: skip
    for cut in range(17):
        end = T0 + (39 - cut) * DAY
        store.retract(current, reason=f"trim {cut}", at=T0 + DAY + cut, valid_from=end)
        [current] = [g.address for g in store.derived(current)]
    evil = fields(
        "http://example.org/evil", start=T0, end=T0 + 5 * DAY, at=T0 + DAY * 2
    )
    with pytest.raises(oms.PolicyError) as caught:
        store.supersede(current, evil)
    assert caught.value.code == "ERR_INVALIDATION_DENIED"


def test_an_import_refuses_successions_and_splits_in_a_circle() -> None:
    """Two grains, each said to be split into the other: the import took it,
    and each then dropped out of its own history."""
    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    a = store.put(fields("http://example.org/acme", start=T0, end=None, at=T0))
    b = store.put(fields("http://example.org/initech", start=T0, end=None, at=T0,
                         relation="http://example.org/knows"))  # fmt: skip
    store.retract(a, reason="x", at=T0)
    store.retract(b, reason="x", at=T0)
    out = io.BytesIO()
    store.export(out, format="nquads")
    index = " <https://w3id.org/oms-rdf/ns#index> .\n"
    split = "<https://w3id.org/oms-rdf/ns#splitInto>"
    text = out.getvalue().decode() + "".join(
        f"<nih:sha-256;{x}> {split} <nih:sha-256;{y}>{index}"
        for x, y in ((a, b), (b, a))
    )
    with pytest.raises(oms.OmsError) as caught:
        oms.GrainStore().import_(io.BytesIO(text.encode()), format="nquads")
    assert "circle" in str(caught.value)


def test_a_split_grain_is_kept_for_no_past_in_the_explorer_and_plots() -> None:
    """What the explorer and the plots draw of a superseded grain: up to its
    successor's start when replaced whole; nothing once split (its parts show it)."""
    from oms_rdf.store.lookup import kept_past_until

    store = oms.GrainStore(clock=lambda: T0 + 100 * DAY)
    whole = store.put(fields("http://example.org/acme", start=T0, end=None, at=T0))
    store.supersede(whole, fields("http://example.org/initech", start=T0 + 5 * DAY,
                                  end=None, at=T0 + DAY))  # fmt: skip
    assert kept_past_until(store.backend, whole) == T0 + 5 * DAY
    split = store.put(fields("http://example.org/hooli", start=T0, end=None, at=T0))
    supersede_days_10_to_20(store, split, "http://example.org/globex")
    assert kept_past_until(store.backend, split) is None
