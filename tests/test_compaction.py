"""Large bulk writes into an on-disk store compact it at their end, and say so."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.backends.embedded import LocalBackend
from oms_rdf.cli import cli
from oms_rdf.cli.progress import Bars
from oms_rdf.store import core


def export(n: int, fmt: str = "jsonl") -> bytes:
    store = oms.GrainStore()
    store.put_many(
        oms.Belief(f"s{i}", "r", f"o{i}", 0.5, created_at=i) for i in range(n)
    )
    out = io.BytesIO()
    store.export(out, format=fmt)
    return out.getvalue()


def test_a_large_import_on_disk_compacts_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "COMPACT_AFTER", 50)  # rows: 20 grains are past it
    compactions: list[str] = []
    real = LocalBackend.optimize

    def optimize(self: LocalBackend) -> None:
        compactions.append("optimize")
        real(self)

    monkeypatch.setattr(LocalBackend, "optimize", optimize)
    data = export(20)
    stages: list[tuple[str, int | None]] = []
    ticks: list[int] = []

    def stage(name: str, total: int | None) -> Any:
        stages.append((name, total))
        return ticks.append if name == "writing" else None

    on_disk = oms.GrainStore(tmp_path / "store")
    on_disk.put(oms.Belief("zed", "likes", "tea", 0.5, created_at=1))
    on_disk.import_(io.BytesIO(data), format="jsonl", stage=stage)
    assert stages == [("writing", 20), ("compacting", None)]
    assert sum(ticks) == 20 and compactions == ["optimize"]
    assert len(on_disk.beliefs("s3")) == 1
    # Into a store without grains, JSON Lines is written as it is read (the
    # reading is shown by progress=), and compacted all the same.
    stages.clear()
    oms.GrainStore(tmp_path / "empty").import_(io.BytesIO(data), format="jsonl",
                                               stage=stage)  # fmt: skip
    assert stages == [("compacting", None)] and compactions == ["optimize"] * 2
    # Nothing to compact in memory, and a small write is left to RocksDB.
    stages.clear()
    oms.GrainStore().import_(io.BytesIO(export(20, "mg")), format="mg", stage=stage)
    small = oms.GrainStore(tmp_path / "small")
    small.import_(io.BytesIO(export(2, "mg")), format="mg", stage=stage)
    assert stages == [("writing", 20), ("writing", 2)]
    assert compactions == ["optimize"] * 2


def test_the_cli_says_when_an_import_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "COMPACT_AFTER", 50)
    source = tmp_path / "source.mg"
    source.write_bytes(export(20, "mg"))
    store = str(tmp_path / "store")
    result = CliRunner().invoke(cli, ["--store", store, "import", str(source)])
    assert result.exit_code == 0, result.output
    assert "writing grains" in result.stderr
    assert "compacting the store…" in result.stderr
    assert "imported 20 grains" in result.stdout
    quiet = CliRunner().invoke(
        cli, ["--store", str(tmp_path / "quiet"), "import", str(source), "--quiet"]
    )
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_put_many_with_progress_says_when_it_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(core, "COMPACT_AFTER", 50)
    grains = [oms.Belief(f"s{i}", "r", "o", 0.5, created_at=i) for i in range(20)]
    with Bars() as bars:
        oms.GrainStore(tmp_path / "a").put_many(grains, progress=bars)
    said = capsys.readouterr().err
    assert "mapping grains" in said and "writing grains" in said
    assert "compacting the store…" in said
    oms.GrainStore(tmp_path / "b").put_many(grains)
    assert capsys.readouterr().err == ""
