"""The one parser of time arguments: the library, the command line and HTTP alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import oms_rdf as oms
from oms_rdf.cli import cli
from oms_rdf.errors import ErrorCode, SchemaError
from oms_rdf.times import MAX_MS, MIN_MS, to_millis


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


ACCEPTED = [
    ("2022", ms(2022, 1, 1)),  # a year: its first instant, UTC
    ("2022-06", ms(2022, 6, 1)),  # a month: its first instant
    ("2022-06-01", ms(2022, 6, 1)),
    ("20220601", ms(2022, 6, 1)),  # ISO 8601 basic form of a date
    ("2022-06-01T12:00:00Z", ms(2022, 6, 1, 12)),
    ("2022-06-01t12:00:00z", ms(2022, 6, 1, 12)),
    ("2022-06-01T12:00:00", ms(2022, 6, 1, 12)),  # no zone: UTC
    ("2022-06-01 12:00", ms(2022, 6, 1, 12)),
    ("2022-06-01T14:00:00+02:00", ms(2022, 6, 1, 12)),
    ("2022-06-01T12:00:00.123Z", ms(2022, 6, 1, 12) + 123),
    ("  2022-06-01  ", ms(2022, 6, 1)),
    ("0001", MIN_MS),
    ("9999-12-31T23:59:59.999Z", MAX_MS),
    ("1654084800000", ms(2022, 6, 1, 12)),  # 13 digits: epoch milliseconds
    ("10000000000", 10_000_000_000),  # 11 digits: the shortest bare epoch ms
    ("-10000000000", -10_000_000_000),
    ("ms:1654084800000", ms(2022, 6, 1, 12)),  # the explicit form, any length
    ("ms:0", 0),
    ("ms:2022", 2022),
    ("ms:-1", -1),
    ("MS: 5", 5),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
def test_text_forms_that_are_times(text: str, expected: int) -> None:
    assert to_millis(text) == expected


REFUSED = [
    ("1", "1 digit"),
    ("202", "3 digits"),
    ("20226", "5 digits"),
    ("202206", "6 digits"),  # YYYYMM is not ISO 8601 (it reads as YYMMDD)
    ("2022061", "7 digits"),
    ("202206011", "9 digits"),
    ("1654084800", "epoch seconds"),  # 10 digits: seconds, most likely
    ("-2022", "digits"),
    ("+2022", "digits"),
    ("@1654084800000", "ms:1654084800000"),  # GNU date reads @N as seconds
    ("ms:", "ms:"),
    ("ms:12.5", "ms:"),
    ("ms:2022-06-01", "ms:"),
    ("2022-13", "ISO 8601"),
    ("2022-06-31", "ISO 8601"),
    ("June 2022", "ISO 8601"),
    ("last year", "ISO 8601"),
    ("", "ISO 8601"),
    ("\uff12\uff10\uff12\uff12", "ISO 8601"),  # digits, but not ASCII ones
    ("0000", "ISO 8601"),
    ("2022-06-01T12:00:00.123Z\x00junk", "control characters"),  # read to the NUL
]


@pytest.mark.parametrize(("text", "said"), REFUSED)
def test_ambiguous_or_malformed_text_is_refused(text: str, said: str) -> None:
    with pytest.raises(SchemaError) as caught:
        to_millis(text, "valid_at")
    assert caught.value.code is ErrorCode.SCHEMA
    message = str(caught.value)
    assert message.startswith("ERR_SCHEMA: valid_at: expected ")
    assert repr(text) in message and said in message  # what was found


def test_times_outside_the_years_an_xsd_datetime_writes_are_a_range_error() -> None:
    for text in ("ms:253402300800000", "-62135596800001", f"ms:{10**30}"):
        with pytest.raises(SchemaError) as caught:
            to_millis(text)
        assert caught.value.code is ErrorCode.RANGE


def test_typed_values_keep_their_meaning() -> None:
    assert to_millis(2022) == 2022  # an int is epoch ms: its type says so
    assert to_millis(date(2022, 6, 1)) == ms(2022, 6, 1)
    assert to_millis(datetime(2022, 6, 1, 12, tzinfo=UTC)) == ms(2022, 6, 1, 12)
    for value in (True, 2022.0):
        with pytest.raises(SchemaError):
            to_millis(value)  # type: ignore[arg-type]


def _store_with_a_2020_belief(tmp_path: Path) -> Path:
    db = tmp_path / "db"
    store = oms.GrainStore(db)
    store.put(oms.Belief("alice", "works_at", "Acme", 0.9, created_at=ms(2020, 1, 1),
                         valid_from=ms(2020, 1, 1)))  # fmt: skip
    store.close()
    return db


@pytest.mark.parametrize("when", ["2022", "20220601", "2022-06", "2022-06-01",
                                  "2022-06-01T12:00:00Z", "1654084800000"])  # fmt: skip
def test_cli_valid_at_reads_dates_as_dates(tmp_path: Path, when: str) -> None:
    db = _store_with_a_2020_belief(tmp_path)
    got = CliRunner().invoke(
        cli, ["--store", str(db), "beliefs", "--valid-at", when, "--json"]
    )
    assert got.exit_code == 0, got.output
    assert [row["object"] for row in json.loads(got.stdout)] == ["Acme"]
    before = CliRunner().invoke(
        cli, ["--store", str(db), "beliefs", "--valid-at", "2019", "--json"]
    )
    assert json.loads(before.stdout) == []


def test_cli_refuses_an_ambiguous_number_in_one_line(tmp_path: Path) -> None:
    db = _store_with_a_2020_belief(tmp_path)
    for option in ("--valid-at", "--as-of"):
        got = CliRunner().invoke(cli, ["--store", str(db), "beliefs", option, "202206"])
        assert got.exit_code == 1
        assert got.stderr.startswith(f"error: ERR_SCHEMA: {option}: expected ")
        assert "'202206'" in got.stderr and len(got.stderr.splitlines()) == 1
        assert got.stdout == ""


@contextmanager
def _serving(store: oms.GrainStore) -> Iterator[str]:
    from oms_rdf.http.app import create_app
    from tests.test_server import running

    with running(create_app(store)) as base:
        yield base


def test_http_valid_at_takes_the_same_rule(tmp_path: Path) -> None:
    store = oms.GrainStore(_store_with_a_2020_belief(tmp_path))
    ask = 'ASK { ?s ?p "Acme" }'
    try:
        with _serving(store) as base:
            for when, held in (("2022", True), ("2022-06", True), ("2019", False)):
                got = httpx.get(f"{base}/sparql", params={"query": ask, "valid_at": when},
                                headers={"Accept": "application/sparql-results+json"})  # fmt: skip
                assert got.status_code == 200, got.text
                assert got.json()["boolean"] is held, when
            for when, objects in (("2022", ["Acme"]), ("2019", [])):
                facts = httpx.get(f"{base}/v1/facts", params={"valid_at": when})
                assert facts.status_code == 200, facts.text
                assert [f["fields"]["object"] for f in facts.json()["facts"]] == objects
            bad = httpx.get(
                f"{base}/sparql", params={"query": ask, "valid_at": "202206"}
            )
            assert bad.status_code == 400
            assert "ERR_SCHEMA" in bad.text and "'202206'" in bad.text
    finally:
        store.close()


def test_every_route_refuses_a_time_given_twice_or_empty(tmp_path: Path) -> None:
    """/sparql read the first of two valid_at, /v1/facts and the explorer the
    last; the explorer took an empty time for now, where all else refuses it."""
    store = oms.GrainStore(_store_with_a_2020_belief(tmp_path))
    twice = [("valid_at", "2022"), ("valid_at", "2019")]
    try:
        with _serving(store) as base:
            for path, more in (("/sparql", [("query", "ASK {}")]), ("/v1/facts", []),
                               ("/explorer/changes", [("since", "2019")])):  # fmt: skip
                got = httpx.get(base + path, params=more + twice,
                                headers={"Accept": "application/sparql-results+json"})  # fmt: skip
                assert got.status_code in (400, 422), (path, got.text)
                assert (got.json()["code"], got.json()["path"]) == (
                    "ERR_SCHEMA",
                    "valid_at",
                )
            empty = httpx.get(
                base + "/explorer/changes", params={"since": "2019", "until": ""}
            )
            assert empty.status_code == 400 and empty.json()["path"] == "until"
    finally:
        store.close()


def test_naive_datetime_and_naive_text_are_both_utc() -> None:
    naive = datetime(2022, 6, 1, 12, 30)
    assert to_millis(naive) == ms(2022, 6, 1, 12, 30)
    assert to_millis(naive) == to_millis("2022-06-01T12:30")
    assert to_millis(naive) == to_millis(naive.replace(tzinfo=UTC))


def test_numpy_and_pandas_times() -> None:
    import subprocess
    import sys

    import numpy as np
    import pandas as pd

    at = ms(2022, 6, 1, 12)
    assert to_millis(np.int64(at)) == at and type(to_millis(np.int64(at))) is int
    assert to_millis(np.uint64(at)) == at
    assert to_millis(np.datetime64("2022-06-01T12:00:00")) == at
    assert to_millis(np.datetime64("2022-06-01T12:00:00.0009999", "ns")) == at
    assert to_millis(np.datetime64("1969-12-31T23:59:59.9995", "us")) == -1  # floored
    assert to_millis(np.datetime64("2022-06-01")) == ms(2022, 6, 1)
    assert to_millis(np.datetime64("2022-06")) == ms(2022, 6, 1)
    assert to_millis(pd.Timestamp("2022-06-01T12:00")) == at  # naive: UTC
    assert to_millis(pd.Timestamp("2022-06-01T14:00+02:00")) == at
    assert to_millis(pd.Timestamp("2022-06-01T12:00:00.000999999Z")) == at
    for bad in (np.datetime64("NaT"), pd.NaT, np.float64(1.0), np.bool_(True)):
        with pytest.raises(SchemaError, match="found"):
            to_millis(bad)
    # Neither library is imported for the values of neither.
    code = (
        "import sys; from oms_rdf.times import to_millis; "
        "to_millis('2022'); to_millis(5); import datetime as d; "
        "to_millis(d.datetime(2022, 1, 1)); to_millis(d.date(2022, 1, 1)); "
        "print('numpy' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_the_facts_api_refuses_any_parameter_given_twice(tmp_path: Path) -> None:
    """A listing read the last subject, status or limit of several, and answered
    for it alone (``subject=ann&subject=bea`` listed nothing)."""
    store = oms.GrainStore(_store_with_a_2020_belief(tmp_path))
    try:
        with _serving(store) as base:
            for path, name, values in (
                ("/v1/facts", "subject", ("ann", "bea")),
                ("/v1/facts", "status", ("active", "retracted")),
                ("/v1/facts", "limit", ("1", "2")),
                ("/v1/facts/search", "q", ("a", "b")),
            ):
                params = [(name, value) for value in values]
                got = httpx.get(base + path, params=params)
                assert got.status_code == 422, (path, name, got.text)
                assert (got.json()["code"], got.json()["path"]) == ("ERR_SCHEMA", name)
                once = httpx.get(base + path, params=params[:1])
                assert once.status_code == 200, (path, name, once.text)
    finally:
        store.close()
