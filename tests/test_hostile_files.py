"""Hostile files and grains: every way in refuses them with the spec's code, in bounded memory."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

import oms_rdf as oms
from oms_rdf.codec import MAX_BLOB
from oms_rdf.io.container import write_mg
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
    """A container as a foreign writer makes it (write_mg refuses a large grain)."""
    import hashlib

    start = 16 + 4 * len(blobs)
    offsets = [start + sum(len(b) for b in blobs[:i]) for i in range(len(blobs))]
    data = (
        b"MG\x01\x00" + len(blobs).to_bytes(4, "big") + b"\x01\x00" + bytes(6)
        + b"".join(o.to_bytes(4, "big") for o in offsets) + b"".join(blobs)
    )  # fmt: skip
    return data + hashlib.sha256(data).digest()


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


# --- RDF/XML entities -------------------------------------------------------------

RDF_NS = (
    'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
    'xmlns:ex="http://example.org/"'
)


def rdfxml(dtd: str, body: str = "<ex:p>x</ex:p>") -> bytes:
    return (
        f'<?xml version="1.0"?>\n{dtd}\n<rdf:RDF {RDF_NS}>\n'
        f'<rdf:Description rdf:about="http://example.org/s">{body}'
        "</rdf:Description></rdf:RDF>\n"
    ).encode()


LAUGHS = rdfxml(
    "<!DOCTYPE rdf:RDF [" + '<!ENTITY a "aaaaaaaaaa">'
    + "".join(f'<!ENTITY {chr(98 + i)} "' + f"&{chr(97 + i)};" * 10 + '">'
              for i in range(6))
    + "]>",
    "<ex:p>&g;</ex:p>",
)  # fmt: skip


def test_a_billion_laughs_file_is_refused_before_it_expands() -> None:
    """1.3 KB of RDF/XML imported as a 10,000,000-character literal."""
    import tracemalloc

    assert len(LAUGHS) < 1500
    store = oms.GrainStore(clock=lambda: NOW)
    before = dump(store)
    tracemalloc.start()
    try:
        with pytest.raises(oms.DecodeError) as info:
            store.import_(io.BytesIO(LAUGHS), format="rdfxml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.code == oms.ErrorCode.CORRUPT and info.value.path == "line 2"
    assert "entity 'b' whose text refers to other entities" in str(info.value)
    assert dump(store) == before and peak < 4 << 20, peak


REFUSED_DTDS = {
    "parameter entity": ('<!DOCTYPE rdf:RDF [<!ENTITY % p "x">]>', "", "line 2"),
    "external entity": ('<!DOCTYPE rdf:RDF [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
                        "<ex:p>&x;</ex:p>", "line 2"),
    "character reference": ('<!DOCTYPE rdf:RDF [<!ENTITY a "x&#38;a;">]>',
                            "<ex:p>&a;</ex:p>", "line 2"),
    "markup": ('<!DOCTYPE rdf:RDF [<!ENTITY a "<ex:p>x</ex:p>">]>', "&a;", "line 2"),
    "long text": ('<!DOCTYPE rdf:RDF [<!ENTITY a "' + "x" * 1025 + '">]>',
                  "<ex:p>&a;</ex:p>", "line 2"),
    "second DOCTYPE": ('<!DOCTYPE rdf:RDF [<!ENTITY a "x">]><!DOCTYPE rdf:RDF []>',
                       "", "line 2"),
    # pyoxigraph reads a DOCTYPE anywhere, even inside the root element.
    "DOCTYPE after the prolog": ("", '<!DOCTYPE rdf:RDF [<!ENTITY a "x">]><ex:p>&a;</ex:p>',
                                 "line 4"),
    "expanding past its budget": ('<!DOCTYPE rdf:RDF [<!ENTITY a "' + "x" * 1000 + '">]>',
                                  "<ex:p>" + "&a;" * 2000 + "</ex:p>", "line 5"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED_DTDS))
def test_a_dtd_that_could_expand_without_bound_is_refused(case: str) -> None:
    dtd, body, line = REFUSED_DTDS[case]
    store = oms.GrainStore(clock=lambda: NOW)
    before = dump(store)
    with pytest.raises(oms.DecodeError) as info:
        store.import_(
            io.BytesIO(rdfxml(dtd, body or "<ex:p>x</ex:p>")), format="rdfxml"
        )
    assert info.value.code == oms.ErrorCode.CORRUPT and info.value.path == line
    assert str(info.value).startswith("ERR_CORRUPT: RDF/XML with ")
    assert dump(store) == before


def test_the_namespace_entities_owl_tools_write_are_read() -> None:
    source = rdfxml(
        "<!DOCTYPE rdf:RDF [\n"
        '    <!ENTITY owl "http://www.w3.org/2002/07/owl#" >\n'
        '    <!ENTITY ex "http://example.org/" >\n'
        "]>",
        '<rdf:type rdf:resource="&owl;Class"/><ex:p>&ex;</ex:p>',
    )
    store = oms.GrainStore(clock=lambda: NOW)
    report = store.import_(io.BytesIO(source), format="rdfxml")
    assert report.added == 2
    objects = sorted(g.fields["object"] for g in store.beliefs())
    assert objects == ["http://example.org/", "http://www.w3.org/2002/07/owl#Class"]


class Trickle(io.RawIOBase):
    """A stream that gives at most ``size`` bytes a read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.size, len(self.data))
        buffer[:n], self.data = self.data[:n], self.data[n:]
        return n


@pytest.mark.parametrize("size", [1, 7, 64 << 10])
def test_references_are_counted_across_reads(size: int) -> None:
    from oms_rdf.io.entity_guard import EntityGuard

    source = rdfxml(
        '<!DOCTYPE rdf:RDF [<!ENTITY long-name "12345"><!ENTITY b "xy">]>',
        "<ex:p>" + "&long-name;&b;" * 300 + "</ex:p>",
    )
    guard = EntityGuard(Trickle(source, size))
    assert io.BufferedReader(guard).read() == source
    assert guard.expanded == 300 * 5 + 300 * 2


# --- tombstones in every backup ---------------------------------------------------

ERASED_NAME = "Zoë Quintanilla-Marsh"
BACKUPS = [
    ("trig", None),
    ("nquads", None),
    ("jsonld", None),
    ("mg", None),
    ("jsonl", None),
    ("turtle", True),
    ("ntriples", True),
    ("trig12", None),
]


def _backup(store: oms.GrainStore, fmt: str, grains: bool | None) -> bytes:
    out = io.BytesIO()
    store.export(out, format=fmt, grains=grains)
    return out.getvalue()


def _erased_pair(fmt: str, grains: bool | None) -> tuple[str, str, bytes, bytes]:
    """(erased, kept, backup before the erasure, backup after it)."""
    store = oms.GrainStore(clock=lambda: NOW)
    gone = store.put(oms.Belief(ERASED_NAME, "likes", "tea", 0.5, created_at=1))
    kept = store.put(oms.Belief("bob", "likes", "tea", 0.5, created_at=1))
    old = _backup(store, fmt, grains)
    store.erase(gone, reason="GDPR Art. 17 request")
    new = _backup(store, fmt, grains)
    assert ERASED_NAME.encode() not in new
    return gone, kept, old, new


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "disk"])
@pytest.mark.parametrize(("fmt", "grains"), BACKUPS)
def test_an_erased_grain_stays_gone_when_an_older_backup_follows_a_newer(
    fmt: str, grains: bool | None, disk: bool, tmp_path: Any
) -> None:
    """.mg and JSON Lines left the tombstones out: the old backup brought the
    erased grain back, text and all."""
    gone, kept, old, new = _erased_pair(fmt, grains)
    replica = oms.GrainStore(tmp_path / "s" if disk else None, clock=lambda: NOW)
    replica.import_(io.BytesIO(new), format=fmt)
    assert kept in replica and gone not in replica
    report = replica.import_(io.BytesIO(old), format=fmt)
    assert (f"grain {gone[:12]}…", "erased, skipped") in report.skipped
    assert gone not in replica and kept in replica
    assert ERASED_NAME not in "\n".join(str(q) for q in replica.backend.quads())
    with pytest.raises(oms.PolicyError):
        replica.put(oms.Belief(ERASED_NAME, "likes", "tea", 0.5, created_at=1))
    # The replica's own backups carry the tombstone on.
    again = oms.GrainStore(clock=lambda: NOW)
    again.import_(io.BytesIO(_backup(replica, fmt, grains)), format=fmt)
    again.import_(io.BytesIO(old), format=fmt)
    assert gone not in again and kept in again


def test_the_tombstones_of_a_mg_backup_are_manifest_entries_of_their_own() -> None:
    from oms_rdf.io.container import read_mg

    gone, kept, _, new = _erased_pair("mg", None)
    # The layout stays the spec's: a manifest keyed by address, an entry a map.
    reader = read_mg(io.BytesIO(new))
    assert [oms.content_address(b) for b in reader.blobs()] == [kept]
    assert reader.manifest == {} and reader.tombstones == {gone: NOW}
    body = new[:-32]
    assert body.endswith(msgpack.packb({gone: {"oms_rdf:erased": NOW}}))


def test_the_tombstones_of_a_json_lines_backup_are_lines_of_their_own() -> None:
    from oms_rdf.io import loads_json_grain

    gone, _, _, new = _erased_pair("jsonl", None)
    last = new.splitlines()[-1].decode()
    assert last == f'{{"$erased":"{gone}","at":{NOW}}}'
    with pytest.raises(oms.DecodeError, match="a tombstone"):
        loads_json_grain(last)  # what the CLI's put reads: not a grain


@pytest.mark.parametrize(
    "line",
    ['{"$erased":"nope","at":1}', '{"$erased":"%s","at":"soon"}' % ("ab" * 32),
     '{"$erased":"%s","at":1,"x":2}' % ("ab" * 32)],
)  # fmt: skip
def test_a_malformed_tombstone_line_is_named(line: str) -> None:
    from oms_rdf.io import dumps_jsonl

    good = dumps_jsonl(oms.Belief("a", "b", "c", 0.5, created_at=1))
    data = f"{good}\n{line}\n".encode()
    store = oms.GrainStore(clock=lambda: NOW)
    before = dump(store)
    with pytest.raises(oms.OmsError) as info:
        store.import_(io.BytesIO(data), format="jsonl")
    assert info.value.path is not None and info.value.path.startswith("line 2")
    assert dump(store) == before
    report = store.import_(io.BytesIO(data), format="jsonl", skip_invalid=True)
    assert report.added == 1 and [w for w, _ in report.skipped] == ["line 2"]


@pytest.mark.parametrize("fmt", ["mg", "jsonl"])
def test_a_refused_import_leaves_no_tombstone_behind(fmt: str) -> None:
    gone, _, _, new = _erased_pair(fmt, None)
    bad = oms.Belief("x", "r", "o", 0.5, created_at=1).blob[:-1] + b"\xc1"
    if fmt == "mg":
        from oms_rdf.io.container import read_mg, tombstone_entry

        reader = read_mg(io.BytesIO(new))
        blobs = list(reader.blobs())
        out = io.BytesIO()
        write_mg([*blobs, bad], out, manifest={gone: tombstone_entry(NOW)})
        data = out.getvalue()
    else:
        data = new + _jsonl_of([bad])
    store = oms.GrainStore(clock=lambda: NOW)
    before = dump(store)
    with pytest.raises(oms.DecodeError):
        store.import_(io.BytesIO(data), format=fmt)
    assert dump(store) == before


@pytest.mark.parametrize("fmt", ["mg", "jsonl"])
def test_a_tombstone_never_erases_a_grain_the_store_holds(fmt: str) -> None:
    """As with TriG: an import adds, it never takes away."""
    gone, _, old, new = _erased_pair(fmt, None)
    store = oms.GrainStore(clock=lambda: NOW)
    store.import_(io.BytesIO(old), format=fmt)
    store.import_(io.BytesIO(new), format=fmt)
    assert gone in store and store.verify_audit().ok


@pytest.mark.parametrize("disk", [False, True], ids=["memory", "disk"])
def test_a_backup_with_a_line_past_the_parser_buffer_is_a_corrupt_file(
    disk: bool, tmp_path: Any
) -> None:
    """The fast restore's native load let pyoxigraph's MemoryError escape."""
    store = oms.GrainStore(clock=lambda: NOW)
    store.put(oms.Belief("a", "b", "c", 0.5, created_at=1))
    backup = io.BytesIO()
    store.export(backup, format="nquads")
    huge = b'<urn:s> <urn:p> "' + b"x" * (17 << 20) + b'" <urn:g> .\n'
    path = tmp_path / "b.nq"
    path.write_bytes(backup.getvalue() + huge)
    fresh = oms.GrainStore(tmp_path / "s" if disk else None, clock=lambda: NOW)
    before = dump(fresh)
    with pytest.raises(oms.DecodeError) as info:
        fresh.import_(path)
    assert info.value.code == oms.ErrorCode.CORRUPT and "16 MiB" in str(info.value)
    assert dump(fresh) == before
