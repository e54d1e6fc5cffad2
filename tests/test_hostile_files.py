"""Hostile files and grains: every way in refuses them with the spec's code, in bounded memory."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

import oms_rdf as oms
from oms_rdf.codec import MAX_BLOB
from oms_rdf.container import write_mg
from tests.helpers import header

NOW = 1_800_000_000_000


def sized(make: Callable[[int], oms.Grain], size: int) -> oms.Grain:
    """The grain ``make(k)`` whose blob is exactly ``size`` bytes."""
    k = size - 200
    for _ in range(5):
        grain = make(k)
        if len(grain.blob) == size:
            return grain
        k += size - len(grain.blob)
    raise AssertionError(f"no grain of {size} bytes")


def text_of(k: int) -> oms.Grain:
    # Control characters: N-Quads writes each as \u0001, six times its size.
    return oms.Belief("big", "says", "\x01" * k, 0.5, created_at=1)


def context_of(k: int) -> oms.Grain:
    # In a map, rdf:JSON writes \u0001 and N-Quads \\u0001: seven times (the worst).
    return oms.Belief("big", "has", "map", 0.5, created_at=2, context={"k": "\x01" * k})


def oversized_blob() -> bytes:
    """A blob one byte over the limit, as a foreign writer would make it."""
    wire = {"c": 0.5, "ca": 1000, "o": "", "r": "r", "s": "s", "t": "belief"}
    base = len(header(sec=1)) + len(msgpack.packb(wire, use_bin_type=True))
    wire["o"] = "x" * (MAX_BLOB + 1 - base - 4)  # str32 has a 5-byte head, not 1
    blob = header(sec=1) + msgpack.packb(wire, use_bin_type=True)
    assert len(blob) == MAX_BLOB + 1
    return blob


def dump(store: oms.GrainStore) -> set[str]:
    return {str(q) for q in store.backend.quads()}


# --- the largest grain ------------------------------------------------------------


def test_a_blob_of_the_limit_encodes_and_one_byte_more_is_refused() -> None:
    largest = sized(text_of, MAX_BLOB)
    assert oms.decode(largest.blob)["object"] == largest.fields["object"]
    with pytest.raises(oms.EncodeError) as info:
        sized(text_of, MAX_BLOB + 1)
    assert info.value.code == oms.ErrorCode.RANGE
    assert "at most 1048576" in str(info.value)


def test_a_blob_over_the_limit_is_refused_by_decode_before_it_is_parsed() -> None:
    with pytest.raises(oms.DecodeError) as info:
        oms.decode(oversized_blob())
    assert info.value.code == oms.ErrorCode.RANGE and "1048577 bytes" in str(info.value)


@pytest.mark.parametrize("held", [False, True], ids=["fresh", "holding"])
@pytest.mark.parametrize("way", ["put", "put_many", "blob"])
def test_every_put_refuses_a_grain_over_the_limit(way: str, held: bool) -> None:
    """A fresh store raised a bare MemoryError; one holding grains stored it."""
    store = oms.GrainStore(clock=lambda: NOW)
    if held:
        store.put(oms.Belief("a", "b", "c", 0.5, created_at=1))
    before = dump(store)
    big: dict[str, Any] = {"type": "belief", "subject": "s", "relation": "r",
                           "object": "x" * MAX_BLOB, "confidence": 0.5, "created_at": 1}  # fmt: skip
    with pytest.raises(oms.OmsError) as info:
        if way == "put":
            store.put(big)
        elif way == "put_many":
            store.put_many([oms.Belief("ok", "r", "o", 0.5, created_at=1), big])
        else:
            store.put(oversized_blob())
    assert info.value.code == oms.ErrorCode.RANGE
    assert dump(store) == before


def _mg_of(blobs: list[bytes]) -> bytes:
    out = io.BytesIO()
    write_mg(blobs, out)
    return out.getvalue()


def _jsonl_of(blobs: list[bytes]) -> bytes:
    import base64
    import json

    return b"".join(
        json.dumps({"$blob": base64.b64encode(b).decode()}).encode() + b"\n"
        for b in blobs
    )


@pytest.mark.parametrize("fmt", ["mg", "jsonl"])
def test_an_import_refuses_a_foreign_grain_over_the_limit(fmt: str) -> None:
    small = oms.Belief("a", "b", "c", 0.5, created_at=1).blob
    data = (_mg_of if fmt == "mg" else _jsonl_of)([small, oversized_blob()])
    store = oms.GrainStore(clock=lambda: NOW)
    before = dump(store)
    with pytest.raises(oms.OmsError) as info:
        store.import_(io.BytesIO(data), format=fmt)
    assert info.value.code == oms.ErrorCode.RANGE
    assert dump(store) == before


def test_an_n_quads_line_past_the_parser_buffer_is_a_corrupt_file() -> None:
    """pyoxigraph stops at a 16 MiB line with a MemoryError, which escaped."""
    line = b'<urn:s> <urn:p> "' + b"x" * (17 << 20) + b'" .\n'
    store = oms.GrainStore(clock=lambda: NOW)
    with pytest.raises(oms.DecodeError) as info:
        store.import_(io.BytesIO(line), format="nquads")
    assert info.value.code == oms.ErrorCode.CORRUPT and "16 MiB" in str(info.value)
    assert len(store) == 0


_SLOW = pytest.mark.soak  # the grain layer in one graph, or RDF 1.2: 10 s and more


@pytest.mark.parametrize(
    ("fmt", "grains"),
    [
        ("trig", None),
        ("nquads", None),
        ("jsonld", None),
        ("mg", None),
        ("jsonl", None),
        pytest.param("turtle", True, marks=_SLOW),
        pytest.param("ntriples", True, marks=_SLOW),
        pytest.param("trig12", None, marks=_SLOW),
    ],
)
def test_grains_of_the_limit_round_trip_through_every_backup_format(
    fmt: str, grains: bool | None
) -> None:
    """Worst-case text (control characters, in a field and in a map) at 1 MiB."""
    text, context = sized(text_of, MAX_BLOB), sized(context_of, MAX_BLOB)
    store = oms.GrainStore(clock=lambda: NOW)
    store.put_many([text, context])
    backup = io.BytesIO()
    store.export(backup, format=fmt, grains=grains)
    fresh = oms.GrainStore(clock=lambda: NOW)
    report = fresh.import_(io.BytesIO(backup.getvalue()), format=fmt)
    assert report.added == 2 and not report.skipped
    assert fresh.get(text.address).blob == text.blob
    assert fresh.get(context.address).blob == context.blob


# --- JSON Lines -------------------------------------------------------------------

GRAIN_LINE = (
    '{"type":"belief","subject":"s","relation":"r","object":"o","confidence":0.5,'
    '"created_at":1,"context":{"k":%s}}'
)
HOSTILE_LINES = {
    "deep": ("[" * 100_000 + "]" * 100_000, oms.ErrorCode.CORRUPT, "nested too deeply"),
    "deep in a grain": (GRAIN_LINE % ("[" * 5_000 + "]" * 5_000),
                        oms.ErrorCode.CORRUPT, "nested too deeply"),
    "huge int": (GRAIN_LINE % ("9" * 5_000), oms.ErrorCode.RANGE, "4300"),
    "bad base64": (GRAIN_LINE % '{"$base64":"abc"}', oms.ErrorCode.CORRUPT, "$base64"),
}  # fmt: skip


@pytest.mark.parametrize("held", [False, True], ids=["fresh", "holding"])
@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_a_hostile_json_line_is_refused_with_its_line_number(
    case: str, held: bool
) -> None:
    """RecursionError and Python's int-string ValueError escaped the import."""
    from oms_rdf.io import dumps_jsonl

    text, code, words = HOSTILE_LINES[case]
    store = oms.GrainStore(clock=lambda: NOW)
    if held:
        store.put(oms.Belief("held", "r", "o", 0.5, created_at=1))
    before = dump(store)
    good = dumps_jsonl(oms.Belief("a", "b", "c", 0.5, created_at=1))
    data = f"{good}\n\n{text}\n{good}\n".encode()
    with pytest.raises(oms.DecodeError) as info:
        store.import_(io.BytesIO(data), format="jsonl")
    assert info.value.code == code and words in str(info.value)
    assert info.value.path == "line 3"  # lines count from 1, the blank one too
    assert dump(store) == before
    report = store.import_(io.BytesIO(data), format="jsonl", skip_invalid=True)
    assert [where for where, _ in report.skipped] == ["line 3"] and report.added == 1
