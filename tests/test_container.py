"""The .mg container and the wire framing."""

from __future__ import annotations

import hashlib
import io
import itertools
import tracemalloc
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oms_rdf as oms
from oms_rdf.codec.grain import Belief
from oms_rdf.errors import DecodeError, ErrorCode
from oms_rdf.io.container import (
    ENTRY_LIMIT,
    read_frames,
    read_mg,
    write_frames,
    write_mg,
)
from tests.strategies import grains

BLOBS = [
    oms.Belief(f"s{i}", "r", f"o{i}", 0.5, created_at=i * 1000).blob for i in range(5)
]
MANIFEST = {
    oms.content_address(BLOBS[0]): {
        "sb": oms.content_address(BLOBS[1]),
        "vstatus": "verified",
    }
}


def container(blobs: list[bytes] = BLOBS, **kw: Any) -> bytes:
    out = io.BytesIO()
    assert write_mg(blobs, out, **kw) == len(blobs)
    return out.getvalue()


def read_all(data: bytes) -> tuple[list[bytes], dict[str, Any]]:
    reader = read_mg(io.BytesIO(data))
    blobs = list(reader.blobs())
    return blobs, reader.manifest


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"manifest": MANIFEST},
        {"compress": True},
        {"compress": True, "manifest": MANIFEST},
    ],
)
def test_round_trip(kw: dict[str, Any]) -> None:
    data = container(**kw)
    blobs, manifest = read_all(data)
    assert blobs == BLOBS
    assert manifest == kw.get("manifest", {})


def test_layout_follows_the_spec() -> None:
    data = container(manifest=MANIFEST)
    assert data[:3] == bytes.fromhex("4d4701")
    assert data[3] == 0x10  # has_index_manifest
    assert int.from_bytes(data[4:8], "big") == 5
    first = int.from_bytes(data[16:20], "big")
    assert first == 16 + 4 * 5 and data[first : first + len(BLOBS[0])] == BLOBS[0]
    second = int.from_bytes(data[20:24], "big")
    assert second == first + len(BLOBS[0])
    assert data[-32:] == hashlib.sha256(data[:-32]).digest()


def test_empty_container_is_valid() -> None:
    data = container([])
    assert len(data) == 16 + 32
    assert read_all(data) == ([], {})


@given(st.lists(grains(), max_size=4))
@settings(max_examples=30)
def test_round_trip_generated(fields: list[dict[str, Any]]) -> None:
    blobs = [oms.encode(f) for f in fields]
    assert read_all(container(blobs))[0] == blobs


def test_every_flipped_byte_is_refused() -> None:
    data = container(manifest=MANIFEST)
    codes = set()
    for index in range(len(data)):
        bad = bytearray(data)
        bad[index] ^= 0x01
        with pytest.raises(oms.OmsError) as info:
            read_all(bytes(bad))
        codes.add(info.value.code)
        if index >= len(data) - 32:
            assert info.value.code == oms.ErrorCode.INTEGRITY
    assert oms.ErrorCode.INTEGRITY in codes and oms.ErrorCode.CORRUPT in codes


def test_damaged_grain_reports_its_own_code_and_place() -> None:
    bad_blob = BLOBS[2][:9] + BLOBS[2][9:].replace(
        b"\xa1t\xa6", b"\xa1u\xa6"
    )  # type key lost
    data = container([*BLOBS[:2], bad_blob])
    with pytest.raises(oms.DecodeError) as info:
        read_all(data)
    assert info.value.code == oms.ErrorCode.NO_TYPE
    assert info.value.path is not None and info.value.path.startswith(
        "grain[2] at offset"
    )


@pytest.mark.parametrize("cut", [1, 10, 32, 40, 100])
def test_truncated_files_are_refused(cut: int) -> None:
    data = container()
    with pytest.raises(oms.OmsError) as info:
        read_all(data[:-cut])
    assert info.value.code in (ErrorCode.TOO_SHORT, ErrorCode.INTEGRITY)
    if info.value.code == ErrorCode.TOO_SHORT:  # it says the file may be cut short
        assert "truncated" in str(info.value)
    if cut <= 32:  # cut in the footer: the message names it, not a grain alone
        assert "footer" in str(info.value)


def test_not_a_container() -> None:
    with pytest.raises(oms.DecodeError):
        read_all(b"PK\x03\x04" + bytes(60))
    with pytest.raises(oms.DecodeError) as info:
        read_all(b"MG\x02" + bytes(45))
    assert info.value.code == oms.ErrorCode.VERSION


def test_wire_frames_round_trip() -> None:
    out = io.BytesIO()
    assert write_frames(BLOBS, out) == 5
    data = out.getvalue()
    assert data.endswith(bytes(4))
    assert data[:4] == len(BLOBS[0]).to_bytes(4, "big")
    assert list(read_frames(io.BytesIO(data))) == BLOBS
    assert list(read_frames(io.BytesIO(bytes(4)))) == []


@pytest.mark.parametrize("cut", [1, 4, 5, 20])
def test_wire_truncation_is_refused(cut: int) -> None:
    out = io.BytesIO()
    write_frames(BLOBS[:2], out)
    with pytest.raises(oms.DecodeError):
        list(read_frames(io.BytesIO(out.getvalue()[:-cut])))


def _container(header_flags: int, count: int, body: bytes) -> bytes:
    """A container around ``body`` with a valid footer, so only the body can be at fault."""
    header = (
        b"MG\x01"
        + bytes([header_flags])
        + count.to_bytes(4, "big")
        + b"\x01\x01"
        + bytes(6)
    )
    data = header + body
    return data + hashlib.sha256(data).digest()


def test_a_huge_grain_count_in_a_tiny_file_fails_fast_without_allocating() -> None:
    import resource

    data = _container(0, 0xFFFFFFFF, bytes(40))  # 88 bytes claiming 4 billion grains
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecodeError) as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == ErrorCode.TOO_SHORT
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 64 * 1024, f"reading 88 bytes grew the process by {grown_kb} KB"


def test_a_zstd_bomb_is_refused_before_it_expands() -> None:
    import resource

    import zstandard

    packer = zstandard.ZstdCompressor(level=19).compressobj()
    zeros = bytes(1 << 20)
    bomb = b"".join(packer.compress(zeros) for _ in range(1024)) + packer.flush()
    assert len(bomb) < 64 * 1024  # 1 GiB of zeros, made without holding it
    data = _container(0x04, 1, (0).to_bytes(4, "big") + bomb)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DecodeError, match="expands past") as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == ErrorCode.CORRUPT
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 256 * 1024, f"the bomb grew the process by {grown_kb} KB"


@pytest.mark.soak  # 30 s: a manifest past 100 MiB
def test_an_800k_entry_manifest_is_written_and_read_an_entry_at_a_time(
    tmp_path: Path,
) -> None:
    """Past msgpack's 100 MiB default buffer once, and never held whole now."""
    grains = [Belief("s", "r", str(i), 0.5, created_at=i) for i in range(3)]
    reason = "checked by hand against the source, which said so at the time"
    last = (grains[-1].address, {"ireason": "the last grain's"})
    assert last[0] > f"{799_999:064x}"  # the pairs go in ascending order
    pairs = itertools.chain(
        ((f"{i:064x}", {"ireason": reason}) for i in range(800_000)), [last]
    )
    path = tmp_path / "big.mg"
    tracemalloc.start()
    try:
        with open(path, "wb") as out:
            write_mg([g.blob for g in grains], out, manifest=pairs)
        written = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        with open(path, "rb") as source:
            items = read_mg(source).items()
            blobs = [next(items) for _ in grains]
            count = 0
            for address, entry in items:  # type: ignore[misc]
                count += 1
                if address == last[0]:
                    assert entry == last[1]
        read = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert blobs == [g.blob for g in grains] and count == 800_001
    assert path.stat().st_size > 100 << 20
    assert written < 10 << 20 and read < 10 << 20, (written, read)


@pytest.mark.parametrize("size", [3, 20, 70_000])  # fixmap, map 16 and map 32
def test_manifest_pairs_write_the_bytes_of_the_mapping(size: int) -> None:
    manifest = {f"{i:064x}": {"svt": i, "vstatus": "verified"} for i in range(size)}
    as_pairs, as_mapping = io.BytesIO(), io.BytesIO()
    write_mg(BLOBS[:2], as_pairs, manifest=iter(manifest.items()))
    write_mg(BLOBS[:2], as_mapping, manifest=manifest)
    assert as_pairs.getvalue() == as_mapping.getvalue()
    body = as_pairs.getvalue()[:-32]  # less the footer
    assert body.endswith(msgpack.packb(manifest, use_bin_type=True))


def test_manifest_pairs_out_of_order_are_refused() -> None:
    pairs = [("b" * 64, {"vstatus": "verified"}), ("a" * 64, {"vstatus": "verified"})]
    out = io.BytesIO()
    with pytest.raises(oms.EncodeError, match="ascending address order"):
        write_mg(BLOBS[:1], out, manifest=pairs)
    assert out.getvalue() == b""


def test_a_manifest_entry_past_the_limit_is_refused() -> None:
    grains = [Belief("s", "r", str(i), 0.5, created_at=i) for i in range(2)]
    manifest = {grains[-1].address: {"ireason": "x" * (ENTRY_LIMIT + 1)}}
    buffer = io.BytesIO()
    write_mg([g.blob for g in grains], buffer, manifest=manifest)
    buffer.seek(0)
    with pytest.raises(oms.DecodeError, match="manifest entry runs past") as info:
        list(read_mg(buffer).blobs())
    assert info.value.code == oms.ErrorCode.CORRUPT and "manifest at offset" in str(
        info.value.path
    )


@pytest.mark.parametrize(
    "key", ["not an address", "3b6feff5\x0c" + "0" * 55, "AB" * 32]
)
def test_a_manifest_key_that_is_no_address_is_refused(key: str) -> None:
    buffer = io.BytesIO()
    write_mg(BLOBS[:2], buffer, manifest={key: {"vstatus": "verified"}})
    buffer.seek(0)
    with pytest.raises(oms.IntegrityError) as info:
        list(read_mg(buffer).blobs())
    assert info.value.path == "manifest entry 0"


def test_a_manifest_that_is_not_a_map_is_refused() -> None:
    manifest = {oms.content_address(BLOBS[0]): {"x": 1}}
    buffer = io.BytesIO()
    write_mg(BLOBS[:1], buffer, manifest=manifest)
    body = buffer.getvalue()[:-32]
    body = body[: body.rindex(msgpack.packb(manifest))] + msgpack.packb([1, 2])
    data = body + hashlib.sha256(body).digest()
    with pytest.raises(DecodeError, match="index manifest is not a map") as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.path is not None and info.value.path.startswith("manifest at")


def test_a_manifest_with_a_key_twice_is_refused() -> None:
    """A map's keys are unique (spec §2.1): the reader, which takes the
    manifest an entry at a time, refuses a second entry for one grain."""
    address = oms.content_address(BLOBS[0])
    manifest = {address: {"vstatus": "verified"}}
    buffer = io.BytesIO()
    write_mg(BLOBS[:1], buffer, manifest=manifest)
    body = buffer.getvalue()[:-32]
    entry = msgpack.packb(manifest)[1:]  # the pair after the map header 0x81
    body = body[: body.rindex(msgpack.packb(manifest))] + b"\x82" + entry + entry
    data = body + hashlib.sha256(body).digest()
    with pytest.raises(DecodeError, match="two entries") as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == "ERR_CORRUPT" and info.value.path == "manifest entry 1"


def test_a_manifest_out_of_order_is_refused() -> None:
    """A canonical map's keys ascend (spec §2.1); read an entry at a time, the
    order is what shows a key given twice without keeping the keys."""
    first, second = sorted(oms.content_address(b) for b in BLOBS[:2])
    buffer = io.BytesIO()
    manifest = {first: {"vstatus": "verified"}, second: {"vstatus": "verified"}}
    write_mg(BLOBS[:2], buffer, manifest=manifest)
    body = buffer.getvalue()[:-32]
    swapped = {second: manifest[second], first: manifest[first]}
    packed = msgpack.packb(manifest)
    body = body[: body.rindex(packed)] + msgpack.packb(swapped)
    data = body + hashlib.sha256(body).digest()
    with pytest.raises(DecodeError, match="out of order") as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == "ERR_CORRUPT" and info.value.path == "manifest entry 1"


def _peak(read: Any) -> tuple[BaseException | None, int]:
    """Run ``read()``; return what it raised and the peak of traced memory."""
    tracemalloc.start()
    try:
        read()
        raised = None
    except BaseException as exc:  # returned, for the test to check
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


def _zeros(mib: int, **kw: Any) -> bytes:
    import zstandard

    packer = zstandard.ZstdCompressor(level=19, **kw).compressobj()
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(mib)) + packer.flush()


def test_an_offset_table_making_room_for_a_bomb_is_refused_before_inflating() -> None:
    """Two grains, the second at 64 MiB: the region was inflated to that size
    (and held twice) before the table was checked."""
    offsets = (0).to_bytes(4, "big") + (64 << 20).to_bytes(4, "big")
    data = _container(0x04, 2, offsets + _zeros(65))
    raised, peak = _peak(lambda: list(read_mg(io.BytesIO(data)).blobs()))
    assert isinstance(raised, DecodeError) and raised.code == ErrorCode.RANGE
    assert raised.path == "index[1]" and "at most 1048576" in str(raised)
    assert peak < 2 << 20, f"{len(data)} bytes took {peak} bytes of memory"


def test_an_uncompressed_grain_larger_than_a_grain_may_be_is_refused() -> None:
    first = 16 + 8  # the header and two offsets
    offsets = first.to_bytes(4, "big") + (first + (2 << 20)).to_bytes(4, "big")
    data = _container(0, 2, offsets + bytes(3 << 20))
    with pytest.raises(DecodeError) as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == ErrorCode.RANGE and info.value.path == "index[1]"


def test_a_frame_declaring_more_than_its_offsets_allow_is_refused_unread() -> None:
    import zstandard

    region = zstandard.ZstdCompressor(level=3).compress(BLOBS[0] + bytes(32 << 20))
    data = _container(0x04, 1, (0).to_bytes(4, "big") + region)
    raised, peak = _peak(lambda: list(read_mg(io.BytesIO(data)).blobs()))
    assert isinstance(raised, DecodeError) and "declares 33554" in str(raised)
    assert peak < 2 << 20, peak


def test_a_frame_asking_for_a_huge_window_is_refused() -> None:
    import zstandard

    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=27)
    packer = zstandard.ZstdCompressor(compression_params=params).compressobj()
    region = packer.compress(BLOBS[0]) + packer.flush()
    data = _container(0x04, 1, (0).to_bytes(4, "big") + region)
    raised, peak = _peak(lambda: list(read_mg(io.BytesIO(data)).blobs()))
    assert isinstance(raised, DecodeError) and "zstd window of 134217728" in str(raised)
    assert peak < 2 << 20, peak


def test_a_compressed_region_is_inflated_as_it_is_read_never_held() -> None:
    blobs = [
        Belief(f"s{i}", "r", f"{i}:" + "x" * 10_000, 0.5, created_at=i).blob
        for i in range(2_000)
    ]
    data = container(blobs, compress=True)
    region = sum(len(b) for b in blobs)
    assert region > 19 << 20 and len(data) < 1 << 20

    def read() -> None:
        for got, blob in zip(read_mg(io.BytesIO(data)).blobs(), blobs, strict=True):
            assert got == blob

    raised, peak = _peak(read)
    assert raised is None
    assert peak < 12 << 20, f"a {region}-byte region took {peak} bytes"


def test_the_writer_refuses_a_grain_no_reader_takes() -> None:
    out = io.BytesIO()
    with pytest.raises(oms.EncodeError) as info:
        write_mg([BLOBS[0], bytes(oms.codec.MAX_BLOB + 1)], out)
    assert info.value.code == ErrorCode.RANGE and info.value.path == "grain[1]"


def test_tombstones_are_gathered_not_yielded_and_checked() -> None:
    from oms_rdf.io.container import ERASED_KEY, tombstone_entry

    gone = "e" * 64
    reader = read_mg(io.BytesIO(container(manifest={gone: tombstone_entry(1234)})))
    assert list(reader.blobs()) == BLOBS and reader.manifest == {}
    assert reader.tombstones == {gone: 1234}
    bad = container(manifest={gone: {ERASED_KEY: -1}})
    with pytest.raises(DecodeError, match="tombstone entry holds only"):
        read_all(bad)
    late = container(manifest={gone: {ERASED_KEY: 253_402_300_800_000}})  # year 10000
    with pytest.raises(oms.OmsError, match="outside years 1-9999") as info:
        read_all(late)
    assert info.value.code == ErrorCode.RANGE


@pytest.mark.parametrize(
    ("flags", "codec", "fragment", "path"),
    [
        (0x08, 0x00, "custom field maps", "header[3]"),
        (0x04, 0x02, "compression codec 0x02 is not supported", "header[9]"),
    ],
)
def test_unsupported_header_options(
    flags: int, codec: int, fragment: str, path: str
) -> None:
    data = bytearray(container())
    data[3], data[9] = flags, codec
    with pytest.raises(DecodeError, match=fragment) as info:
        read_all(bytes(data))
    assert info.value.path == path


def test_progress_counts_every_byte_read() -> None:
    data = container(manifest=MANIFEST)
    seen: list[int] = []
    assert list(read_mg(io.BytesIO(data), progress=seen.append).blobs()) == BLOBS
    assert sum(seen) == len(data)


@pytest.mark.parametrize(
    ("size", "code"), [(9, ErrorCode.TOO_SHORT), (1, ErrorCode.TOO_SHORT),
                       (0, ErrorCode.CORRUPT), (-5, ErrorCode.CORRUPT)],
)  # fmt: skip
def test_offsets_leaving_a_grain_under_ten_bytes(size: int, code: ErrorCode) -> None:
    """Spec §13: a blob under 10 bytes is ERR_TOO_SHORT; offsets that do not
    ascend are a damaged index."""
    first = 16 + 8  # the header and two offsets
    offsets = first.to_bytes(4, "big") + (first + size).to_bytes(4, "big")
    data = _container(0, 2, offsets + bytes(64))
    with pytest.raises(DecodeError) as info:
        list(read_mg(io.BytesIO(data)).blobs())
    assert info.value.code == code and info.value.path == "index[1]"
    assert "at least 10" in str(info.value)


def test_the_manifest_is_written_canonical_at_every_depth() -> None:
    """Spec §11.3 "a canonical map", §2.1: keys in order in every nested map
    (inside arrays too), text in NFC, arrays in their own order."""
    blob = oms.encode({"type": "belief", "subject": "s", "relation": "r",
                       "object": "o", "confidence": 1.0, "created_at": 1})  # fmt: skip
    address = oms.content_address(blob)
    entry = {"oms_rdf:evidence": [{"z": 1, "a": "cafe\u0301"}, {"b": 2, "a": 1}],
             "ireason": "cafe\u0301", "itype": "retraction"}  # fmt: skip
    out = io.BytesIO()
    write_mg([blob], out, manifest={address: entry})
    canonical = {"ireason": "caf\u00e9", "itype": "retraction",
                 "oms_rdf:evidence": [{"a": "caf\u00e9", "z": 1}, {"a": 1, "b": 2}]}  # fmt: skip
    written = msgpack.packb(address) + msgpack.packb(canonical)
    assert written in out.getvalue()
