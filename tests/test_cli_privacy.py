"""The data-protection commands: erase, erase-subject, subject-report, vacuum, audit."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pyoxigraph as ox
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.cli import cli
from oms_rdf.rdf.vocab import OMS

NAME = "Ada Lovelace-Byron"


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    gc.collect()  # the command's store closes with its last reference
    return result


def grains_file(tmp_path: Path) -> Path:
    lines = [
        {"type": "belief", "subject": NAME, "relation": "lives_in", "object": "London",
         "confidence": 0.9, "created_at": 1},
        {"type": "belief", "subject": "babbage", "relation": "knows", "object": NAME,
         "confidence": 0.9, "created_at": 2},
        {"type": "belief", "subject": "babbage", "relation": "builds", "object": "engine",
         "confidence": 0.9, "created_at": 3},
        {"type": "belief", "subject": NAME, "relation": "owns", "object": "notes",
         "confidence": 0.9, "created_at": 4, "invalidation_policy": {"mode": "hold"}},
    ]  # fmt: skip
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_report_erase_vacuum_and_verify(tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("--store", db, "put", str(grains_file(tmp_path))).exit_code == 0
    report = json.loads(run("--store", db, "subject-report", NAME).output)
    assert report["complete"] and len(report["grains"]) == 3
    held = next(
        g["address"] for g in report["grains"] if g["fields"]["relation"] == "owns"
    )

    refused = run("--store", db, "erase", held, "--reason", "request")
    assert refused.exit_code == 1
    assert (
        refused.output.startswith("error: ERR_INVALIDATION_DENIED")
        and "hold" in refused.output
    )
    assert len(refused.output.strip().splitlines()) == 1

    erased = run("--store", db, "erase-subject", NAME, "--reason", "request 42")
    lines = erased.output.splitlines()
    assert erased.exit_code == 0
    assert sum(line.startswith("erased ") for line in lines) == 2
    assert [line for line in lines if line.startswith("held ")] == [
        f"held   {held} (under a hold: kept)"
    ]
    assert any("vacuum" in line for line in lines if line.startswith("note: "))

    assert run("--store", db, "vacuum").exit_code == 0
    leftovers = [
        f for f in Path(db).rglob("*") if f.is_file() and b"London" in f.read_bytes()
    ]
    assert leftovers == []  # the held grain stays, but its city was in an erased one

    verified = run("--store", db, "audit", "verify")
    # put_many, one erase event a grain, the vacuum; a refused erase changes nothing
    assert verified.exit_code == 0 and verified.output.startswith("audit ok: 4 events")

    nothing = run("--store", db, "process-erasures")
    assert nothing.output.strip() == "nothing to erase"


def test_audit_verify_names_a_tampered_event(tmp_path: Path) -> None:
    db = tmp_path / "db"
    assert run("--store", str(db), "put", str(grains_file(tmp_path))).exit_code == 0
    store = oms.GrainStore(db)
    [event] = store.backend.quads(None, OMS.operation, None, OMS.audit)
    store.backend.store.remove(event)
    store.backend.add(
        [ox.Quad(event.subject, OMS.operation, ox.Literal("nothing"), OMS.audit)]
    )
    store.close()
    result = run("--store", str(db), "audit", "verify")
    assert result.exit_code == 1
    assert (
        result.output.startswith("error: ERR_INTEGRITY")
        and "event 1 of chain" in result.output
    )
