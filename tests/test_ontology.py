"""The ontology and shapes agree with the code: vocab.py, oms.ttl, shapes.ttl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import rdflib
from hypothesis import given, settings
from pyoxigraph import DefaultGraph, RdfFormat, serialize

import oms_rdf as oms
from oms_rdf.rdf.mapping import grain_to_quads
from oms_rdf.rdf.vocab import OMS, OMS_NS
from tests.strategies import grains

ONTOLOGY = Path(__file__).parent.parent / "ontology"
# pyshacl still calls rdflib Dataset APIs that rdflib 7 deprecates.
PYSHACL_WARNINGS = pytest.mark.filterwarnings(
    "ignore:Dataset.*deprecated:DeprecationWarning"
)


@pytest.fixture(scope="module")
def ontology() -> rdflib.Graph:
    return rdflib.Graph().parse(ONTOLOGY / "oms.ttl")


def test_vocab_and_ontology_agree(ontology: rdflib.Graph) -> None:
    declared = {str(s)[len(OMS_NS):] for s in ontology.subjects(rdflib.RDF.type, None)
                if str(s).startswith(OMS_NS)}  # fmt: skip
    assert declared == set(OMS.terms)


def test_every_property_has_label_comment_and_range(ontology: rdflib.Graph) -> None:
    owl = rdflib.OWL
    for kind in (owl.DatatypeProperty, owl.ObjectProperty):
        for prop in ontology.subjects(rdflib.RDF.type, kind):
            for attr in (rdflib.RDFS.label, rdflib.RDFS.comment, rdflib.RDFS.range):
                assert ontology.value(prop, attr) is not None, (prop, attr)


def test_every_emitted_property_is_declared(ontology: rdflib.Graph) -> None:
    g = oms.Belief("a", "b", "c", 0.5, created_at=0, structural_tags=["x"], derived_from=["a" * 64],
                   related_to=[{"hash": "b" * 64, "relation_type": "supports"}], context={"k": b"x"})  # fmt: skip
    for q in grain_to_quads(g):
        if q.predicate.value.startswith(OMS_NS):
            assert (rdflib.URIRef(q.predicate.value), None, None) in ontology


@PYSHACL_WARNINGS
@settings(max_examples=25)
@given(grains())
def test_mapped_grains_satisfy_the_shapes(fields: dict[str, Any]) -> None:
    import pyshacl

    grain = oms.Grain.from_dict(fields)
    quads = [q for q in grain_to_quads(grain) if isinstance(q.graph_name, DefaultGraph)]
    data = rdflib.Graph().parse(
        data=serialize(quads, format=RdfFormat.N_TRIPLES), format="nt"
    )
    conforms, _, text = pyshacl.validate(data, shacl_graph=str(ONTOLOGY / "shapes.ttl"))
    assert conforms, text


@PYSHACL_WARNINGS
def test_shapes_catch_a_broken_grain() -> None:
    import pyshacl

    data = rdflib.Graph().parse(data=(
        '<nih:sha-256;abc> <https://w3id.org/oms-rdf/ns#contentAddress> "abc" .\n'
        '<nih:sha-256;abc> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <https://w3id.org/oms-rdf/ns#Belief> .\n'
    ), format="nt")  # fmt: skip
    conforms, _, _ = pyshacl.validate(data, shacl_graph=str(ONTOLOGY / "shapes.ttl"))
    assert not conforms


def test_readme_example_is_a_real_grain() -> None:
    import base64
    import re

    import pyoxigraph as ox

    from oms_rdf.rdf.mapping import quads_to_grain

    text = (ONTOLOGY / "README.md").read_text()
    trig = re.search(r"```trig\n(.*?)```", text, re.S)
    assert trig is not None
    quads = list(ox.parse(trig.group(1), format=ox.RdfFormat.TRIG))
    grain = quads_to_grain(quads)
    blob = next(q for q in quads if q.predicate.value.endswith("#blob"))
    assert oms.Grain.from_blob(base64.b64decode(blob.object.value)) == grain
    assert grain.fields["object"] == "Acme"


def _examples() -> tuple[str, list[tuple[str, str, str]]]:
    """The README's setup code, and each (run line, SPARQL, expected answer)."""
    import re

    text = (ONTOLOGY / "README.md").read_text()
    setup = re.search(r"## The questions, in SPARQL.*?```python\n(.*?)```", text, re.S)
    assert setup is not None
    examples = re.findall(
        r"```sparql\n(# run: [^\n]*)\n(.*?)```\s*```text\n(.*?)```", text, re.S
    )
    return setup.group(1), examples


def test_every_sparql_example_runs_as_printed() -> None:
    from datetime import UTC, datetime

    setup, examples = _examples()
    names: dict[str, Any] = {}
    exec(setup, names)  # the README's own code, run as a reader would
    store = names["store"]
    assert len(examples) >= 10
    for run, sparql, expected in examples:
        options: dict[str, Any] = {}
        for option in run.removeprefix("# run:").split():
            if option == "now":
                continue
            key, value = option.split("=")
            options[key] = (
                value == "True"
                if key == "grains"
                else datetime.fromisoformat(value).replace(tzinfo=UTC)
            )
        result = store.query(f"{run}\n{sparql}", **options)
        if isinstance(result, bool):
            got = ["true" if result else "false"]
        else:
            got = [" ".join(str(term) for term in row) for row in result]
        want = expected.strip().splitlines()
        if "ORDER BY" not in sparql:
            got, want = sorted(got), sorted(want)
        assert got == want, (run, sparql)
