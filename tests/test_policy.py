"""Protection policies: every mode and scope, and the bypasses that must stay closed.

After every refusal the store must be exactly as it was: same quads in every graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import oms_rdf as oms
from oms_rdf.store import GrainStore

T0 = 1_700_000_000_000
DAY = 86_400_000


class Clock:
    def __init__(self) -> None:
        self.now = T0 + 100 * DAY

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> GrainStore:
    return GrainStore(clock=clock)


def snapshot(store: GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def belief(obj: str, t: int = T0, subject: str = "agent", **kw: Any) -> dict[str, Any]:
    return {"type": "belief", "subject": subject, "relation": "rule", "object": obj,
            "confidence": 1.0, "created_at": t, **kw}  # fmt: skip


def refused(
    store: GrainStore, action: Callable[[], object], fragment: str | None = None
) -> oms.PolicyError:
    before = snapshot(store)
    with pytest.raises(oms.PolicyError, match=fragment) as info:
        action()
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert snapshot(store) == before
    return info.value


def test_open_and_absent_policies_allow(store: GrainStore) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "open"}))
    b = store.supersede(a, belief("b", T0 + DAY))
    assert store.status(a).superseded_by == b and store.status(b).is_current
    c = store.put(belief("c", subject="other"))
    store.contradict(c)
    assert store.status(c).verification == "contradicted"
    assert not store.status(c).is_current


def test_soft_locked(store: GrainStore) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "soft_locked"}))
    refused(store, lambda: store.supersede(a, belief("b", T0 + DAY)), "soft_locked")
    refused(store, lambda: store.contradict(a), "soft_locked")
    new = store.supersede(a, belief("b", T0 + DAY), justification="user corrected it")
    assert store.get(new)["supersession_justification"] == "user corrected it"
    notes = list(store.query(
        "PREFIX oms: <https://w3id.org/oms-rdf/ns#> SELECT ?n WHERE { GRAPH oms:audit { ?e oms:needsReview ?n } }",
        grains=True,
    ))  # fmt: skip
    assert len(notes) == 1 and "soft_locked" in notes[0]["n"].value


@pytest.mark.parametrize("operation", ["supersede", "retract", "contradict"])
def test_locked_refuses_every_invalidation(store: GrainStore, operation: str) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "locked"}))
    actions = {
        "supersede": lambda: store.supersede(
            a, belief("b", T0 + DAY), justification="x"
        ),
        "retract": lambda: store.retract(a, reason="x"),
        "contradict": lambda: store.contradict(a, reason="x"),
    }
    refused(store, actions[operation], "locked")


def test_timed(store: GrainStore, clock: Clock) -> None:
    until = (T0 + 200 * DAY) // 1000
    a = store.put(
        belief(
            "a",
            invalidation_policy={
                "mode": "timed",
                "locked_until": until,
                "fallback_mode": "open",
            },
        )
    )
    refused(store, lambda: store.supersede(a, belief("b", T0 + DAY)), "locked")
    clock.now = until * 1000  # the lock ends at locked_until exactly
    b = store.supersede(a, belief("b", T0 + DAY))
    assert store.status(a).superseded_by == b


def test_timed_with_locked_fallback(store: GrainStore, clock: Clock) -> None:
    a = store.put(
        belief(
            "a",
            invalidation_policy={
                "mode": "timed",
                "locked_until": 0,
                "fallback_mode": "locked",
            },
        )
    )
    refused(store, lambda: store.supersede(a, belief("b", T0 + DAY)))


def test_hold(store: GrainStore) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "hold"}))
    refused(store, lambda: store.retract(a, reason="erase"), "hold")
    refused(
        store,
        lambda: store.supersede(a, belief("b", T0 + DAY), justification="x"),
        "hold",
    )


@pytest.mark.parametrize("mode", ["quorum", "delegated"])
def test_signature_modes_refuse_unsigned_supersession(
    store: GrainStore, mode: str
) -> None:
    a = store.put(
        belief(
            "a",
            invalidation_policy={
                "mode": mode,
                "authorized": ["did:key:x"],
                "threshold": 1,
            },
        )
    )
    refused(
        store,
        lambda: store.supersede(a, belief("b", T0 + DAY), justification="x"),
        "sign",
    )


@pytest.mark.parametrize(
    "policy", [{"mode": "frobnicate"}, {"mode": 3}, {"scope": "grain", "mode": ""}]
)
def test_unknown_modes_fail_closed(store: GrainStore, policy: dict[str, Any]) -> None:
    a = store.put(belief("a", invalidation_policy=policy))
    refused(store, lambda: store.supersede(a, belief("b", T0 + DAY), justification="x"))


def test_subtree_scope_protects_descendants(store: GrainStore) -> None:
    root = store.put(
        belief("root", invalidation_policy={"mode": "locked", "scope": "subtree"})
    )
    child = store.put(belief("child", T0 + 1, subject="derived", derived_from=[root]))
    refused(
        store,
        lambda: store.supersede(child, belief("x", T0 + DAY, subject="derived")),
        "subtree",
    )
    refused(store, lambda: store.contradict(child), "subtree")


def test_grain_scope_does_not_reach_descendants(store: GrainStore) -> None:
    root = store.put(belief("root", invalidation_policy={"mode": "locked"}))
    child = store.put(belief("child", T0 + 1, subject="derived", derived_from=[root]))
    store.supersede(child, belief("x", T0 + DAY, subject="derived"))


def test_subtree_walk_stops_after_16_hops(store: GrainStore) -> None:
    chain = [
        store.put(
            belief("root", invalidation_policy={"mode": "locked", "scope": "subtree"})
        )
    ]
    for hop in range(1, 18):
        chain.append(
            store.put(
                belief(f"d{hop}", T0 + hop, subject=f"s{hop}", derived_from=[chain[-1]])
            )
        )
    refused(
        store, lambda: store.retract(chain[16], reason="x")
    )  # 16 hops from the root
    store.retract(chain[17], reason="x")  # 17 hops: outside the walk


def test_lineage_scope_follows_the_chain(store: GrainStore) -> None:
    a = store.put(
        belief("a", invalidation_policy={"mode": "soft_locked", "scope": "lineage"})
    )
    b = store.supersede(a, belief("b", T0 + DAY), justification="first change")
    refused(store, lambda: store.supersede(b, belief("c", T0 + 2 * DAY)), "lineage")
    store.supersede(b, belief("c", T0 + 2 * DAY), justification="second change")


# --- lineage through a merge: one grain superseding two ----------------------------


def merge(store: GrainStore, first: str, second: str, t: int) -> str:
    """Supersede two current grains by one: ``derived_from`` names both."""
    merged = store.supersede(
        first,
        belief("merged", t, derived_from=[first, second]),
        justification="merging two rules",
    )
    store.supersede(second, store.get(merged), justification="merging two rules")
    return merged


LINEAGE_SOFT = {"mode": "soft_locked", "scope": "lineage"}
LINEAGE_LOCKED = {"mode": "locked", "scope": "lineage"}


@pytest.mark.parametrize("protected", [0, 1])
def test_a_lineage_lock_survives_a_merge(store: GrainStore, protected: int) -> None:
    # Either parent may be the protected one: the walk follows both predecessors.
    parents = [
        store.put(belief(name, subject=name, invalidation_policy=LINEAGE_SOFT if i == protected else None))
        for i, name in enumerate(("left", "right"))
    ]  # fmt: skip
    merged = merge(store, *parents, T0 + DAY)
    refused(
        store, lambda: store.supersede(merged, belief("next", T0 + 2 * DAY)), "lineage"
    )
    refused(store, lambda: store.contradict(merged), "lineage")
    after = store.supersede(
        merged, belief("next", T0 + 2 * DAY), justification="reviewed"
    )
    assert store.status(merged).superseded_by == after


@pytest.mark.parametrize(
    "flip", [(False, False), (False, True), (True, False), (True, True)]
)
def test_a_lineage_lock_two_merges_back(
    store: GrainStore, flip: tuple[bool, bool]
) -> None:
    def pair(a: str, b: str, flipped: bool) -> tuple[str, str]:
        return (b, a) if flipped else (a, b)

    root = store.put(belief("root", subject="root", invalidation_policy=LINEAGE_SOFT))
    child = store.supersede(root, belief("child", T0 + DAY, subject="root"),
                            justification="first change")  # fmt: skip
    side = store.put(belief("side", T0 + DAY, subject="side"))
    first = merge(store, *pair(side, child, flip[0]), T0 + 2 * DAY)
    other = store.put(belief("other", T0 + 2 * DAY, subject="other"))
    second = merge(store, *pair(other, first, flip[1]), T0 + 3 * DAY)
    assert root in {g.address for g in store.ancestors(second)}
    refused(store, lambda: store.retract(second, reason=""), "lineage")
    refused(
        store, lambda: store.supersede(second, belief("n", T0 + 4 * DAY)), "lineage"
    )
    store.retract(second, reason="the merged rule is wrong")


def test_a_lineage_lock_reaches_past_sixteen_versions(store: GrainStore) -> None:
    # Lineage is the whole supersession chain (spec §8.4), not a 16-hop walk.
    head = store.put(belief("v0", invalidation_policy=LINEAGE_SOFT))
    for n in range(1, 20):
        head = store.supersede(head, belief(f"v{n}", T0 + n), justification="next")
    refused(store, lambda: store.supersede(head, belief("v20", T0 + 20)), "lineage")


def test_related_to_replaces_never_touches_the_target(store: GrainStore) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "locked"}))
    before = store.status(a)
    store.put(
        belief(
            "b",
            T0 + DAY,
            subject="other",
            related_to=[{"hash": a, "relation_type": "replaces"}],
        )
    )
    assert store.status(a) == before
    assert [g.address for g in store.beliefs("agent")] == [a]


def test_put_with_derived_from_is_no_way_around_supersede(store: GrainStore) -> None:
    a = store.put(belief("a", invalidation_policy={"mode": "locked"}))
    refused(
        store, lambda: store.put(belief("b", T0 + DAY, derived_from=[a])), "supersede"
    )
    refused(
        store,
        lambda: store.put_many([belief("b", T0 + DAY, derived_from=[a])]),
        "supersede",
    )
    # A derived belief about something else is fine.
    store.put(belief("summary", T0 + DAY, subject="agent-summary", derived_from=[a]))


def test_put_many_refusal_in_a_batch_keeps_nothing(store: GrainStore) -> None:
    a = oms.Grain.from_dict(belief("a", invalidation_policy={"mode": "locked"}))
    batch = [
        a,
        belief("ok", T0 + 1, subject="s"),
        belief("b", T0 + DAY, derived_from=[a.address]),
    ]
    refused(store, lambda: store.put_many(batch))
    assert a.address not in store
