"""The RDF/XML entity guard reads a prolog the same wherever its reads are cut, and
refuses each DTD it cannot bound with the rule and the line."""

from __future__ import annotations

import io

import pytest

import oms_rdf as oms
from oms_rdf.io.entity_guard import EntityGuard

RDF_NS = (
    'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
    'xmlns:ex="http://example.org/"'
)
ROOT = (
    f"<rdf:RDF {RDF_NS}>"
    '<rdf:Description rdf:about="http://example.org/s"><ex:p>&a;</ex:p>'
    "</rdf:Description></rdf:RDF>\n"
)
# Every kind of thing a DTD's internal subset may hold that the guard passes over.
DOCTYPE = (
    "<!DOCTYPE rdf:RDF [\n"
    "  <!-- a comment -->\n"
    "  <?an instruction?>\n"
    "  <!ELEMENT ex:p (#PCDATA)>\n"
    "  <!NOTATION n SYSTEM 'a\"b'>\n"
    '  <!ENTITY a "tea" >\n'
    "]>\n"
)
CHUNK = 64 << 10  # the guard parses the prolog again every 64 KiB it reads


def guarded(data: bytes) -> tuple[bytes, EntityGuard]:
    guard = EntityGuard(io.BytesIO(data))  # type: ignore[arg-type]
    return io.BufferedReader(guard).read(), guard


def test_a_prolog_cut_anywhere_by_the_reads_is_read_the_same() -> None:
    # A comment pads the prolog so that the first 64 KiB read ends at each byte
    # of the DOCTYPE in turn: every place a declaration can be cut is met.
    head = '<?xml version="1.0"?>\n<!--'
    tail = "-->\n" + DOCTYPE
    for cut in range(len(tail) + 1):
        pad = CHUNK - len(head) - cut
        data = (head + "x" * pad + tail + ROOT).encode()
        read, guard = guarded(data)
        assert read == data, cut
        assert guard.entities == {b"&a;": 3}, cut


def test_comments_instructions_and_declarations_in_a_dtd_are_passed_over() -> None:
    data = ("\ufeff" + '<?xml version="1.0"?>\n' + DOCTYPE + ROOT).encode()
    store = oms.GrainStore()
    report = store.import_(io.BytesIO(data), format="rdfxml")
    assert report.added == 1
    assert [g.fields["object"] for g in store.beliefs()] == ["tea"]


REFUSED = {
    "a DOCTYPE not closed by ]>": ('<!DOCTYPE rdf:RDF [<!ENTITY a "x"> ] x>', 2),
    "a parameter-entity reference": ("<!DOCTYPE rdf:RDF [\n%p;]>", 3),
    "a '[' inside a DTD declaration": ("<!DOCTYPE rdf:RDF [<!ELEMENT a [b]>]>", 2),
    "a DTD it cannot read": ("<!DOCTYPE rdf:RDF [ x ]>", 2),
    "an entity 'a' it cannot read": ('<!DOCTYPE rdf:RDF [<!ENTITY a "x" y>]>', 2),
    "a prolog (XML declaration, comments, DOCTYPE) past": (
        "<!--" + "x" * ((1 << 20) + 2 * CHUNK) + "-->",
        1,
    ),
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_each_dtd_the_guard_cannot_bound_is_refused_with_its_line(why: str) -> None:
    dtd, line = REFUSED[why]
    data = f'<?xml version="1.0"?>\n{dtd}\n{ROOT}'.encode()
    with pytest.raises(oms.DecodeError) as info:
        guarded(data)
    assert info.value.code == oms.ErrorCode.CORRUPT
    assert str(info.value).startswith(f"ERR_CORRUPT: RDF/XML with {why}")
    assert info.value.path == f"line {line}"


@pytest.mark.parametrize(
    "end", ['<!ENTITY a "x', "", '<!ENTITY a "x">]  '], ids=["value", "subset", "close"]
)
def test_a_prolog_the_file_ends_in_is_left_to_the_parser_to_refuse(end: str) -> None:
    data = f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF [ {end}'.encode()
    assert guarded(data)[0] == data  # given whole: the parser names the fault
    store = oms.GrainStore()
    with pytest.raises(oms.DecodeError) as info:
        store.import_(io.BytesIO(data), format="rdfxml")
    assert info.value.code == oms.ErrorCode.CORRUPT
    assert store.is_empty()


def test_a_doctype_without_an_internal_subset_is_read() -> None:
    root = ROOT.replace("&a;", "tea")
    data = f'<?xml version="1.0"?>\n<!DOCTYPE rdf:RDF>\n{root}'.encode()
    store = oms.GrainStore()
    assert store.import_(io.BytesIO(data), format="rdfxml").added == 1
