"""System time moves forward only (XTDB, SQL:2011 system versioning): a write that
would record a system time before the store's last commit is refused, so that an
answer as of a past time stays the answer; loading history is the one way to write
past system times, into a store that holds no grain yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.rdf.vocab import OMS

T0 = 1_767_225_600_000  # 2026-01-01
DAY = 86_400_000


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def belief(subject: str, obj: str, at: int, **more: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": subject, "relation": "works_at", "object": obj,
            "confidence": 0.8, "created_at": at, **more}  # fmt: skip


def dump(store: oms.GrainStore) -> list[str]:
    return sorted(str(q) for q in store.core.backend.quads())


def operations(store: oms.GrainStore) -> list[str]:
    return [
        str(q.object.value)
        for q in store.core.backend.quads(None, OMS.operation, None, OMS.audit)
    ]


@pytest.fixture
def clock() -> Clock:
    return Clock(T0 + 100)


@pytest.fixture
def store(clock: Clock) -> oms.GrainStore:
    store = oms.GrainStore(clock=clock, forward_only=True)
    store.put(belief("ann", "Acme", T0))
    return store


def test_a_retraction_dated_before_the_last_commit_is_refused(
    store: oms.GrainStore, clock: Clock
) -> None:
    ann = store.beliefs("ann")[0].address  # entered at T0
    store.put(belief("bo", "Initech", T0 + 50))  # last commit: T0 + 50
    before = dump(store)
    with pytest.raises(oms.TimeRangeError) as caught:
        store.retract(ann, reason="wrong", at=T0 + 49)
    assert caught.value.code == "ERR_RANGE"
    assert "last commit at" in str(caught.value) and str(T0 + 50) in str(caught.value)
    assert dump(store) == before
    store.retract(ann, reason="wrong", at=T0 + 50)  # the last commit's millisecond
    assert store.status(ann).voided_at == T0 + 50


def test_an_ordinary_write_takes_the_clock(store: oms.GrainStore, clock: Clock) -> None:
    ann = store.beliefs("ann")[0].address
    clock.now = T0 + 500
    store.retract(ann, reason="left")
    assert store.status(ann).voided_at == T0 + 500
    # the store's last commit is now T0 + 500: a grain made before it is refused
    with pytest.raises(oms.TimeRangeError):
        store.put(belief("cy", "Hooli", T0 + 499))
    # ... unless it says when it enters the store's knowledge
    cy = store.put(belief("cy", "Hooli", T0 + 499, system_valid_from=T0 + 500))
    assert store.beliefs("cy", as_of=T0 + 500)[0].address == cy
    assert store.beliefs("cy", as_of=T0 + 499) == []


def test_a_supersession_before_the_last_commit_is_refused(
    store: oms.GrainStore,
) -> None:
    ann = store.beliefs("ann")[0].address
    store.put(belief("bo", "Initech", T0 + 50))
    before = dump(store)
    # after ann's own system time (T0), but before the last commit (T0 + 50)
    with pytest.raises(oms.TimeRangeError):
        store.supersede(ann, belief("ann", "Umbrella", T0 + 20))
    assert dump(store) == before


def test_a_transaction_with_an_earlier_time_writes_nothing(
    store: oms.GrainStore,
) -> None:
    store.put(belief("bo", "Initech", T0 + 50))
    before = dump(store)
    with pytest.raises(oms.TimeRangeError), store.transaction() as tx:
        tx.put(belief("cy", "Hooli", T0 + 60))
        tx.put(belief("di", "Acme", T0 + 10))
    assert dump(store) == before


def test_a_put_many_with_one_earlier_grain_writes_nothing(
    store: oms.GrainStore,
) -> None:
    before = dump(store)
    with pytest.raises(oms.TimeRangeError):
        store.put_many([belief("cy", "Hooli", T0 + 5), belief("di", "Acme", T0 - 1)])
    assert dump(store) == before


def test_the_last_commit_is_read_back_on_reopening(tmp_path: Path) -> None:
    with oms.GrainStore(tmp_path / "s", forward_only=True) as store:
        store.put(belief("ann", "Acme", T0 + 70))
    with oms.GrainStore(tmp_path / "s", forward_only=True) as store:
        with pytest.raises(oms.TimeRangeError):
            store.put(belief("bo", "Initech", T0 + 69))
        assert len(store) == 1


def test_history_is_loaded_only_into_a_store_without_grains(clock: Clock) -> None:
    store = oms.GrainStore(clock=clock, forward_only=True)
    with store.load_history(reason="replay of the 2025 log"):
        late = store.put(belief("ann", "Acme", T0 + 90))
        early = store.put(belief("bo", "Initech", T0 + 10))  # an earlier system time
        store.retract(early, reason="corrected", at=T0 + 20)
    assert operations(store).count("load_history") == 1
    assert store.beliefs("bo", as_of=T0 + 15)[0].address == early
    assert store.beliefs("bo", as_of=T0 + 20) == []
    assert late in store
    # after the history, the store's last commit is the latest time it loaded
    with pytest.raises(oms.TimeRangeError):
        store.put(belief("cy", "Hooli", T0 + 89))
    with pytest.raises(oms.StoreError) as caught, store.load_history():
        pass
    assert caught.value.code == "ERR_CONFLICT"


def test_a_history_block_that_raises_leaves_the_store_as_it_was(clock: Clock) -> None:
    store = oms.GrainStore(clock=clock, forward_only=True)
    before = dump(store)
    with pytest.raises(RuntimeError), store.load_history(reason="a broken log"):
        store.put(belief("ann", "Acme", T0 + 90))
        bo = store.put(belief("bo", "Initech", T0 + 10))
        store.retract(bo, reason="corrected", at=T0 + 20)
        raise RuntimeError("the log ends mid-record")
    assert dump(store) == before  # one undo: the grains and the audit event are gone
    assert store.verify_audit().ok
    store.put(belief("cy", "Hooli", T0 + 5))  # nothing was committed: any time is taken
    with pytest.raises(oms.StoreError, match="holds 1"), store.load_history():
        pass  # the store holds a grain now


def test_history_is_loaded_into_a_namespace_without_grains(clock: Clock) -> None:
    store = oms.GrainStore(clock=clock, forward_only=True)
    store.put(belief("ann", "Acme", T0 + 90))  # last commit: T0 + 90
    with store.load_history(reason="the team's log", namespace="team"):
        early = store.put(belief("bo", "Initech", T0 + 10, namespace="team"))
        store.retract(early, reason="corrected", at=T0 + 20)
        with pytest.raises(oms.TimeRangeError, match="outside namespace 'team'"):
            store.put(belief("cy", "Hooli", T0 + 10))  # the default namespace
    assert store.beliefs("bo", as_of=T0 + 15)[0].address == early
    assert store.beliefs("bo", as_of=T0 + 20) == []
    assert store.beliefs("cy") == []
    assert operations(store).count("load_history") == 1
    reasons = [
        str(q.object.value)
        for q in store.core.backend.quads(None, OMS.reason, None, OMS.audit)
    ]
    assert "into namespace 'team': the team's log" in reasons
    with pytest.raises(oms.StoreError, match="namespace 'team' holds grains") as caught:
        with store.load_history(namespace="team"):
            pass
    assert caught.value.code == "ERR_CONFLICT"
    with pytest.raises(oms.StoreError, match="give namespace="):
        with store.load_history():
            pass


def test_a_namespace_history_block_that_raises_is_undone(clock: Clock) -> None:
    store = oms.GrainStore(clock=clock, forward_only=True)
    store.put(belief("ann", "Acme", T0 + 90))
    before = dump(store)
    with pytest.raises(RuntimeError), store.load_history(namespace="team"):
        store.put(belief("bo", "Initech", T0 + 10, namespace="team"))
        raise RuntimeError("stop")
    assert dump(store) == before
    with pytest.raises(oms.TimeRangeError):  # the last commit is still T0 + 90
        store.put(belief("cy", "Hooli", T0 + 50))


def test_a_store_not_forward_only_keeps_taking_past_times(clock: Clock) -> None:
    store = oms.GrainStore(clock=clock)
    store.put(belief("ann", "Acme", T0 + 50))
    bo = store.put(belief("bo", "Initech", T0 + 10))
    store.retract(bo, reason="wrong", at=T0 + 20)
    assert store.status(bo).voided_at == T0 + 20


def test_a_backup_restores_into_a_forward_only_store(
    store: oms.GrainStore, clock: Clock, tmp_path: Path
) -> None:
    bo = store.put(belief("bo", "Initech", T0 + 50))
    store.retract(bo, reason="wrong", at=T0 + 60)
    path = tmp_path / "backup.trig"
    store.export(path)
    restored = oms.GrainStore(clock=clock, forward_only=True)
    restored.import_(path)
    assert restored.beliefs("bo", as_of=T0 + 55)[0].address == bo
    assert restored.beliefs("bo", as_of=T0 + 60) == []
    with pytest.raises(oms.TimeRangeError):  # and it moves forward from there on
        restored.put(belief("cy", "Hooli", T0 + 59))


# --- the guarantee: an answer as of T, then anything, then the same answer --------

SUBJECTS = ("ann", "bo", "cy")
OBJECTS = ("Acme", "Initech", "Hooli", "Umbrella")
QUERY = (
    "SELECT ?s ?o WHERE { ?s ?p ?o FILTER(?p = <https://w3id.org/oms-rdf/ns#works_at> "
    "|| STRENDS(STR(?p), 'works_at')) } ORDER BY ?s ?o"
)

step = st.tuples(
    st.sampled_from(
        [
            "put",
            "supersede",
            "portion",
            "retract",
            "retract_portion",
            "contradict",
            "transaction",
            "earlier_put",
            "earlier_retract",
        ]
    ),
    st.integers(0, 2),
    st.integers(0, 3),
    st.integers(0, 9),
)


RANGE = (
    "SELECT ?s ?o ?validFrom ?validTo ?systemFrom ?systemTo "
    "WHERE { ?s ?p ?o FILTER(STRENDS(STR(?p), 'works_at')) }"
)


def answers(store: oms.GrainStore, t: int) -> list[Any]:
    """What the store says as of ``t``: its beliefs, at three valid times, a
    query, and a range question with the extents it binds."""
    out: list[Any] = [
        sorted(g.address for g in store.beliefs(valid_at=v, as_of=t))
        for v in (t, T0, T0 + 5 * DAY)
    ]
    out.append(sorted(g.address for g in store.beliefs(as_of=t)))
    rows = store.query(QUERY, valid_at=t, as_of=t)
    out.append(sorted(tuple(str(v) for v in row) for row in rows))
    rows = store.query(RANGE, valid_during=(None, None), as_of=t)
    out.append(sorted(tuple(str(v) for v in row) for row in rows))
    return out


def apply(store: oms.GrainStore, clock: Clock, op: tuple[str, int, int, int]) -> None:
    kind, who, what, k = op
    clock.now += 1_000
    now = clock.now
    subject, obj = SUBJECTS[who], OBJECTS[what]
    held = store.beliefs(subject)
    last = store.core.system.last(store.core.backend)
    earlier = None if last is None else last - 1 - k
    fresh = belief(
        subject, obj, now, valid_from=T0 + k * DAY, valid_to=T0 + (k + 3) * DAY
    )
    try:
        if kind == "put":
            store.put(fresh)
        elif kind == "earlier_put":
            if earlier is not None:
                with pytest.raises(oms.TimeRangeError, match="last commit"):
                    store.put(belief(subject, obj, earlier))
        elif not held:
            return
        elif kind == "supersede":
            store.supersede(held[0], fresh)
        elif kind == "portion":
            start = held[0].get("valid_from", T0)
            store.supersede(held[0], belief(subject, obj, now),
                            valid_from=start + DAY, valid_to=start + 2 * DAY)  # fmt: skip
        elif kind == "retract":
            store.retract(held[0], reason="wrong")
        elif kind == "retract_portion":
            start = held[0].get("valid_from", T0)
            store.retract(held[0], reason="part", valid_from=start + DAY)
        elif kind == "contradict":
            store.contradict(held[0], reason="disputed")
        elif kind == "earlier_retract":
            assert earlier is not None  # a grain is held: something was committed
            with pytest.raises(oms.TimeRangeError, match=r"last commit|entered"):
                store.retract(held[0], reason="late", at=earlier)
        else:
            with store.transaction() as tx:
                tx.retract(held[0], reason="replaced")
                tx.put(belief(subject, OBJECTS[(what + 1) % 4], now))
    except oms.OmsError as exc:  # refused for its own reason (a portion that misses)
        assert "last commit" not in str(exc)  # an ordinary write takes the clock


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=st.lists(step, min_size=1, max_size=6), after=st.lists(step, max_size=8))
def test_an_answer_as_of_a_past_time_never_changes(
    before: list[tuple[str, int, int, int]], after: list[tuple[str, int, int, int]]
) -> None:
    clock = Clock(T0 + 10 * DAY)
    store = oms.GrainStore(clock=clock, forward_only=True)
    store.put(belief("ann", "Acme", clock.now))
    for op in before:
        apply(store, clock, op)
    # Final: every point before the last commit (writes may still join its own
    # millisecond, and a later one is not past yet).
    last = store.core.system.last(store.core.backend)
    assert last is not None
    points = [last - 1, last - 700, T0 + 10 * DAY]
    recorded = {t: answers(store, t) for t in points}
    for op in after:
        apply(store, clock, op)
    assert {t: answers(store, t) for t in points} == recorded


def test_an_import_of_past_times_into_a_store_with_grains_is_refused(
    store: oms.GrainStore, clock: Clock, tmp_path: Path
) -> None:
    store.put(belief("bo", "Initech", T0 + 50))  # last commit: T0 + 50
    other = oms.GrainStore(clock=clock)
    other.put(belief("cy", "Hooli", T0 + 10))  # before the last commit
    other.export(tmp_path / "past.trig")
    later = oms.GrainStore(clock=clock)
    later.put(belief("di", "Acme", T0 + 60))
    later.export(tmp_path / "later.trig")
    before = dump(store)
    with pytest.raises(oms.TimeRangeError) as caught:
        store.import_(tmp_path / "past.trig")
    assert "this import" in str(caught.value) and caught.value.code == "ERR_RANGE"
    assert dump(store) == before
    store.import_(tmp_path / "later.trig")  # after the last commit: taken
    assert [g["subject"] for g in store.beliefs("di")] == ["di"]


# --- the guarantee is the store's: recorded, kept by every opening --------------


def test_every_later_opening_keeps_the_guarantee(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with oms.GrainStore(path, forward_only=True) as store:
        store.put(belief("ann", "Acme", T0 + 70))
    with oms.GrainStore(path) as store:  # no flag: the store's settings say it
        before = dump(store)
        with pytest.raises(oms.TimeRangeError):
            store.put(belief("bo", "Initech", T0 + 69))
        assert dump(store) == before
        store.put(belief("bo", "Initech", T0 + 71))
    with pytest.raises(oms.StoreError) as refused:
        oms.GrainStore(path, forward_only=False)
    assert refused.value.code == "ERR_CONFLICT"
    assert "moves forward only" in str(refused.value)
    with oms.GrainStore(path, read_only=True, forward_only=False) as store:
        assert store.beliefs("ann")  # a reader takes no time: nothing to refuse
        assert operations(store).count("forward_only") == 1  # recorded, audited
        assert store.verify_audit().ok


def test_the_setting_is_recorded_by_the_first_write_and_never_by_a_refused_one(
    tmp_path: Path,
) -> None:
    """The opening recorded the setting at once: a refused first command (an
    unknown grain to retract, a file that does not parse) left a forward-only
    store behind, for good."""
    from click.testing import CliRunner

    from oms_rdf.cli import cli

    path = tmp_path / "s"
    with oms.GrainStore(path) as store:
        store.put(belief("ann", "Acme", T0 + 70))
        before = dump(store)
    with oms.GrainStore(path, forward_only=True) as store:
        with pytest.raises(oms.NotFoundError):
            store.retract("0" * 64, reason="x")
        assert dump(store) == before  # nothing recorded
    with oms.GrainStore(path, forward_only=False) as store:  # still not forward only
        store.put(belief("bo", "Initech", T0 + 10))
    with oms.GrainStore(path, forward_only=True) as store, store.transaction() as tx:
        tx.put(belief("cy", "Globex", T0 + 80))
        tx.put(belief("di", "Hooli", T0 + 81))  # one record for the transaction
    with oms.GrainStore(path, read_only=True) as store:
        setting = (OMS.settings, OMS.forwardOnly, None, OMS.index)
        assert len(list(store.core.backend.quads(*setting))) == 1
        assert store.verify_audit().ok
    bad = tmp_path / "bad.ttl"
    bad.write_text("<a> <b> .\n")
    fresh = tmp_path / "fresh"
    refused = CliRunner().invoke(
        cli, ["--store", str(fresh), "--forward-only", "import", str(bad)]
    )
    assert refused.exit_code == 1 and "ERR_" in refused.output, refused.output
    assert not fresh.exists()  # a refused first write takes away the store it made


def test_a_read_only_opening_cannot_make_a_store_forward_only(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with oms.GrainStore(path) as store:
        store.put(belief("ann", "Acme", T0 + 70))
    with pytest.raises(oms.StoreError) as refused:
        oms.GrainStore(path, read_only=True, forward_only=True)
    assert refused.value.code == "ERR_CONFLICT"
    with oms.GrainStore(path) as store:  # nothing was recorded
        store.put(belief("bo", "Initech", T0 + 10))


def test_the_command_line_makes_a_store_forward_only(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from oms_rdf.cli import cli

    db = str(tmp_path / "db")
    late, early = tmp_path / "late.json", tmp_path / "early.json"
    late.write_text(json.dumps(belief("ann", "Acme", T0 + 70)))
    early.write_text(json.dumps(belief("bo", "Initech", T0 + 10)))
    made = CliRunner().invoke(cli, ["--store", db, "--forward-only", "put", str(late)])
    assert made.exit_code == 0, made.output
    refused = CliRunner().invoke(cli, ["--store", db, "put", str(early)])
    assert refused.exit_code == 1 and "ERR_RANGE" in refused.output, refused.output
    with oms.GrainStore(db, read_only=True) as store:
        assert [g["subject"] for g in store.beliefs()] == ["ann"]
        setting = (OMS.settings, OMS.forwardOnly, None, OMS.index)
        assert len(list(store.core.backend.quads(*setting))) == 1
    other = str(tmp_path / "other")
    CliRunner().invoke(cli, ["--store", other, "put", str(late)])
    read = CliRunner().invoke(cli, ["--store", other, "--forward-only", "beliefs"])
    assert read.exit_code == 0, read.output  # a read takes the store's setting
    with oms.GrainStore(other, read_only=True) as store:
        assert not list(store.core.backend.quads(*setting))  # and writes none


def test_the_http_server_keeps_a_forward_only_store_so(tmp_path: Path) -> None:
    """Served as it is (no flag), a store that records the guarantee refuses a
    transaction that would write before its last commit, and writes nothing."""
    import httpx
    from test_http_abuse import ADMIN, bearer, start, stop

    path = tmp_path / "db"
    with oms.GrainStore(path, forward_only=True) as store:
        store.put(belief("ann", "Acme", T0 + 70))
    served = start(path)
    try:
        answer = httpx.post(
            served.base + "/v1/transactions",
            json={"operations": [{"op": "put", "fact": belief("bo", "X", T0 + 10)}]},
            headers=bearer(ADMIN),
            timeout=30,
        )
        assert answer.status_code == 409 and "ERR_RANGE" in answer.text, answer.text
    finally:
        stop(served)
    with oms.GrainStore(path, read_only=True) as store:
        assert [g["subject"] for g in store.beliefs()] == ["ann"]


@pytest.mark.parametrize(
    "mark",
    [
        lambda s, a, at: s.evidence(a, "supporting", 0.9, at=at),
        lambda s, a, at: s.set_verification(a, "verified", at=at),
        lambda s, a, at: s.retract(a, reason="x", at=at),
    ],
)
def test_a_mark_dated_before_its_grain_entered_is_refused(mark: Any) -> None:
    """As a retraction is: the store did not hold the grain then, so no answer
    about that time may say anything happened to it."""
    store = oms.GrainStore(clock=lambda: T0 + DAY)
    held = store.put(oms.Belief("ann", "likes", "tea", 0.8, created_at=T0))
    before = sorted(str(q) for q in store.backend.quads())
    with pytest.raises(oms.TimeRangeError) as info:
        mark(store, held, T0 - 1)
    assert info.value.code == "ERR_RANGE" and "before the grain entered" in str(
        info.value
    )
    assert sorted(str(q) for q in store.backend.quads()) == before
    mark(store, held, T0)  # at the very time it entered: taken


@pytest.mark.parametrize("reopened", [False, True])
def test_a_retraction_is_weighed_against_the_system_start_the_store_keeps(
    tmp_path: Path, reopened: bool
) -> None:
    """The system start is the grain's system_valid_from when it names one, as
    the store holds it (read back from disk after reopening, or kept from the
    write), not its created_at."""
    path = tmp_path / "store"
    store = oms.GrainStore(path, clock=lambda: T0 + DAY)
    fields = {"type": "belief", "subject": "ann", "relation": "likes",
              "object": "tea", "confidence": 0.8, "created_at": T0,
              "system_valid_from": T0 + 10}  # fmt: skip
    held = store.put(oms.Grain.from_dict(fields))
    if reopened:
        store.close()
        store = oms.GrainStore(path, clock=lambda: T0 + DAY)
    with pytest.raises(oms.TimeRangeError, match="entered the system at"):
        store.retract(held, reason="x", at=T0 + 5)
    assert store.status(held).status == "active"
    store.retract(held, reason="x", at=T0 + 10)
    assert store.status(held).status == "retracted"
    store.close()


def test_a_belief_about_a_namespace_does_not_fill_it(clock: Clock) -> None:
    """A namespace holds grains only in the grain layer: a belief whose relation
    is ``oms:namespace``, about a grain's node, puts nothing in it."""
    store = oms.GrainStore(clock=clock, forward_only=True)
    ann = store.put(belief("ann", "Acme", T0 + 90))
    store.put(oms.Belief(f"nih:sha-256;{ann}", str(OMS.namespace), "fresh", 0.9,
                         created_at=T0 + 91))  # fmt: skip
    with store.load_history(reason="the fresh log", namespace="fresh"):
        early = store.put(belief("bo", "Initech", T0 + 10, namespace="fresh"))
    assert store.beliefs("bo", namespace="fresh", as_of=T0 + 10)[0].address == early
