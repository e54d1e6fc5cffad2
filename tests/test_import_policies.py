"""Every way in runs put's policy checks: an import cannot supersede a locked grain."""

from __future__ import annotations

import io

import pytest

import oms_rdf as oms
from oms_rdf.rdf.mapping import rows_to_nquads

FORMATS = ["jsonl", "mg", "trig", "nquads"]
LOCKED = oms.Belief("agent", "rule", "never delete backups", 1.0, created_at=1,
                    invalidation_policy={"mode": "locked"})  # fmt: skip
# The same claim, derived from the locked grain: what put refuses as a
# supersession in disguise.
CHILD = oms.Belief("agent", "rule", "delete backups freely", 1.0, created_at=2,
                   derived_from=[LOCKED.address])  # fmt: skip


def quads(store: oms.GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


def export(store: oms.GrainStore, fmt: str) -> bytes:
    buffer = io.BytesIO()
    store.export(buffer, format=fmt, grains=True)
    return buffer.getvalue()


def test_put_refuses_the_child_itself() -> None:
    store = oms.GrainStore()
    store.put(LOCKED)
    with pytest.raises(oms.PolicyError) as info:
        store.put(CHILD)
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_import_cannot_supersede_a_stored_locked_grain(fmt: str) -> None:
    source = oms.GrainStore()
    source.put(CHILD)  # the parent is not here, so nothing refuses it
    victim = oms.GrainStore()
    victim.put(LOCKED)
    before = quads(victim)
    with pytest.raises(oms.PolicyError) as info:
        victim.import_(io.BytesIO(export(source, fmt)), format=fmt)
    assert info.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert CHILD.address[:12] in str(info.value)
    assert quads(victim) == before
    assert [g.address for g in victim.beliefs("agent")] == [LOCKED.address]
    report = victim.import_(
        io.BytesIO(export(source, fmt)), format=fmt, skip_invalid=True
    )
    assert report.added == 0 and len(report.skipped) == 1
    assert [g.address for g in victim.beliefs("agent")] == [LOCKED.address]


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_import_holding_both_is_refused_even_into_an_empty_store(fmt: str) -> None:
    source = oms.GrainStore()
    # Written past the checks, as a crafted file would be.
    source.backend.load(
        rows_to_nquads([*source.rows_for(LOCKED), *source.rows_for(CHILD)]).encode(),
        oms.backends.embedded.ox.RdfFormat.N_QUADS,  # type: ignore[attr-defined]
    )
    target = oms.GrainStore()
    before = quads(target)
    with pytest.raises(oms.PolicyError):
        target.import_(io.BytesIO(export(source, fmt)), format=fmt)
    assert quads(target) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_recorded_supersession_of_a_protected_grain_still_restores(fmt: str) -> None:
    """An authorised override of a soft-locked grain is history: it comes back whole."""
    did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
    soft = oms.Belief("agent", "rule", "keep logs", 1.0, created_at=1,
                      invalidation_policy={"mode": "soft_locked"})  # fmt: skip
    child = oms.Belief("agent", "rule", "keep logs a year", 1.0, created_at=2,
                       derived_from=[soft.address])  # fmt: skip
    source = oms.GrainStore(authorized=[did])
    source.put(soft)
    new = source.revise(soft, child, force=True, by=did, justification="owner")
    target = oms.GrainStore()
    target.import_(io.BytesIO(export(source, fmt)), format=fmt)
    assert [g.address for g in target.beliefs("agent", as_of=10**13)] == [new]
    assert target.status(soft).superseded_by == new


SUBTREE_ROOT = oms.Belief("agent", "rule", "keep the audit trail", 1.0, created_at=1,
                          invalidation_policy={"mode": "locked", "scope": "subtree"})  # fmt: skip
LEAF = oms.Belief("agent", "note", "trail kept in two places", 1.0, created_at=3,
                  derived_from=[SUBTREE_ROOT.address])  # fmt: skip


def _leaf_retracted_elsewhere(fmt: str) -> bytes:
    """A store that never held the root closed its leaf: its export says so."""
    elsewhere = oms.GrainStore(clock=lambda: 10)
    elsewhere.put(LEAF)
    elsewhere.retract(LEAF.address, reason="not needed")
    return export(elsewhere, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_import_cannot_close_a_grain_a_stored_subtree_lock_covers(fmt: str) -> None:
    """``retract`` refuses to close a grain a locked ancestor's subtree covers;
    so does an import, whose index state says it was closed."""
    store = oms.GrainStore(clock=lambda: 10)
    store.put(SUBTREE_ROOT)
    before = quads(store)
    with pytest.raises(oms.PolicyError, match="subtree policy") as caught:
        store.import_(io.BytesIO(_leaf_retracted_elsewhere(fmt)), format=fmt)
    assert caught.value.code == oms.ErrorCode.INVALIDATION_DENIED
    assert quads(store) == before
    report = store.import_(io.BytesIO(_leaf_retracted_elsewhere(fmt)), format=fmt,
                           skip_invalid=True)  # fmt: skip
    assert LEAF.address not in store and report.skipped


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_backup_restores_whose_subtree_root_came_after_its_leaf_closed(
    fmt: str,
) -> None:
    """The source closed its leaf before it held the root, as retract allows;
    the root came later. Its backup restores whole into an empty store."""
    source = oms.GrainStore(clock=lambda: 10)
    source.import_(io.BytesIO(_leaf_retracted_elsewhere(fmt)), format=fmt)
    root_alone = oms.GrainStore(clock=lambda: 10)
    root_alone.put(SUBTREE_ROOT)
    source.import_(io.BytesIO(export(root_alone, fmt)), format=fmt)
    restored = oms.GrainStore(clock=lambda: 10)
    restored.import_(io.BytesIO(export(source, fmt)), format=fmt)
    assert quads(restored) >= {q for q in quads(source) if "#audit" not in q}
    assert restored.status(LEAF.address).status == "retracted"
