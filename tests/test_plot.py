"""The pictures: built, with labelled axes fitted to the data, and alt text that says what they show."""

from __future__ import annotations

import io

import pytest
from matplotlib.dates import num2date

from oms_rdf import Belief, GrainStore, NotFoundError
from oms_rdf.notebook import plot

DAY = 86_400_000
T0 = 1_600_000_000_000  # 2020-09-13


def _story() -> tuple[GrainStore, list[str]]:
    """alice works at Acme, then Initech; a wrong Hooli line is retracted."""
    store = GrainStore(clock=lambda: T0 + 1000 * DAY)
    acme = store.put(
        Belief(
            "alice", "works_at", "Acme", 0.9, created_at=T0, valid_from=T0 - 300 * DAY
        )
    )
    initech = store.supersede(acme, Belief("alice", "works_at", "Initech", 0.9,
                                           created_at=T0 + 400 * DAY, valid_from=T0 + 380 * DAY))  # fmt: skip
    hooli = store.put(Belief("alice", "works_at", "Hooli", 0.4, created_at=T0 + 500 * DAY,
                             valid_from=T0 + 450 * DAY, valid_to=T0 + 480 * DAY))  # fmt: skip
    store.retract(hooli, reason="wrong person", at=T0 + 600 * DAY)
    return store, [acme, initech, hooli]


def test_timeline_fits_its_axes_to_the_data_and_now() -> None:
    store, _ = _story()
    chart = plot.timeline(store, "alice", "works_at")
    ax = chart.figure.axes[0]
    assert ax.get_xlabel() == "valid time (when it was true)"
    assert ax.get_ylabel() == "system time (when we knew it)"
    left, right = (num2date(x).timestamp() * 1000 for x in ax.get_xlim())
    bottom, top = (num2date(y).timestamp() * 1000 for y in ax.get_ylim())
    assert left < T0 - 300 * DAY and right > T0 + 1000 * DAY  # earliest valid_from, now
    assert bottom < T0 and top > T0 + 1000 * DAY
    assert right - left < 2 * (1300 * DAY)  # fitted, not padded far beyond the data
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"current", "superseded", "retracted"} <= set(legend)
    labels = {t.get_text() for t in ax.texts}
    assert {"Acme", "Initech", "Hooli"} <= labels


def test_timeline_alt_text_tells_the_story() -> None:
    store, _ = _story()
    lines = plot.timeline(store, "alice", "works_at").alt.splitlines()
    assert (
        lines[0]
        == "Timeline of alice works_at: 3 versions, valid time against system time."
    )
    assert lines[1].startswith(
        "Acme: superseded, true from 2019-11-18 open-ended, known from 2020-09-13 until 2021-10-18"
    )
    assert lines[2].startswith("Initech: current") and lines[2].endswith("still held.")
    assert lines[3].startswith(
        "Hooli: retracted, true from 2021-12-07 until 2022-01-06"
    )


def test_timeline_of_nothing_is_not_found() -> None:
    with pytest.raises(NotFoundError):
        plot.timeline(GrainStore(), "nobody", "works_at")


def test_entity_graph_of_a_neighbourhood_stays_legible_at_fifty_nodes() -> None:
    store = GrainStore()
    store.put_many(Belief(f"person-{i}", "knows", f"person-{i + 1}", 0.8, created_at=T0 + i)
                   for i in range(70))  # fmt: skip
    store.put_many(Belief("person-0", "likes", f"thing-{i}", 0.8, created_at=T0 + 100 + i)
                   for i in range(3))  # fmt: skip
    chart = plot.entity_graph(store, "person-0", hops=100, limit=50)
    ax = chart.figure.axes[0]
    assert ax.get_title() == "Entity graph around person-0: 50 of 74 nodes, 49 edges"
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == 50 and "person-0" in labels and "thing-2" in labels
    # person-0, three things, person-1 to person-46: the farthest are left out
    assert "person-46" in labels and "person-47" not in labels
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["knows", "likes"]
    assert ax.get_xlabel()
    width, _ = chart.figure.get_size_inches()
    assert width >= 10  # room for fifty labels
    assert chart.alt.startswith(
        "Entity graph around person-0: 50 nodes and 49 edges (of 74 nodes)."
    )
    lines = chart.alt.splitlines()  # 40 edges one by one, then how many more
    assert len(lines) == 42 and lines[-1] == "9 more edges drawn, not listed here."


def test_entity_graph_of_a_query_result() -> None:
    store = GrainStore()
    store.import_(io.BytesIO(b"<http://e.org/a> <http://e.org/p> <http://e.org/b> .\n"
                             b"<http://e.org/b> <http://e.org/q> \"text\" .\n"), format="ntriples")  # fmt: skip
    result = store.query("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
    chart = plot.entity_graph(result)
    assert {t.get_text() for t in chart.figure.axes[0].texts} == {"a", "b", "text"}
    rows = store.query("SELECT ?s ?p ?o WHERE { ?s ?p ?o }")
    assert "3 nodes and 2 edges" in plot.entity_graph(rows).alt


def test_confidence_follows_the_evidence() -> None:
    store = GrainStore()
    address = store.put(Belief("a", "r", "x", 0.7, created_at=T0))
    for day in (1, 2):
        store.evidence(address, "supporting", 0.9, at=T0 + day * DAY)
    store.evidence(address, "refuting", 0.9, at=T0 + 3 * DAY)
    chart = plot.confidence(store, address)
    ax = chart.figure.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "time of the evidence",
        "effective confidence",
    )
    step = ax.get_lines()[0]
    assert list(step.get_ydata()) == pytest.approx([0.7, 0.7, 0.8, 0.8])
    assert [t.get_text() for t in ax.texts] == ["promoted"]
    assert (
        chart.alt.splitlines()[2] == "2020-09-15: supporting (0.9) -> 0.80, promoted."
    )


def test_a_chart_shows_in_a_notebook_with_its_alt_text() -> None:
    store, _ = _story()
    chart = plot.timeline(store, "alice", "works_at")
    data, metadata = chart._repr_mimebundle_()
    assert metadata["image/png"]["alt"] == chart.alt
    assert data["text/html"].startswith('<img src="data:image/png;base64,')
    assert 'alt="Timeline of alice works_at' in data["text/html"]
    assert chart.png().startswith(b"\x89PNG")


def _hub_store() -> GrainStore:
    """ann knows bob and cy and works at acme; acme employs forty people."""
    store = GrainStore()
    store.put_many([Belief("ann", "knows", "bob", 0.8, created_at=T0),
                    Belief("ann", "knows", "cy", 0.8, created_at=T0 + 1),
                    Belief("ann", "works_at", "acme", 0.8, created_at=T0 + 2),
                    Belief("bob", "likes", "tea", 0.8, created_at=T0 + 3)])  # fmt: skip
    store.put_many(Belief("acme", "employs", f"worker-{i:02}", 0.8, created_at=T0 + 10 + i)
                   for i in range(40))  # fmt: skip
    return store


def test_entity_graph_keeps_its_subject_at_the_centre() -> None:
    chart = plot.entity_graph(_hub_store(), "ann", hops=2)
    ax = chart.figure.axes[0]
    (x, y) = next(t.get_position() for t in ax.texts if t.get_text() == "ann")
    (left, right), (bottom, top) = ax.get_xlim(), ax.get_ylim()
    assert abs(x - (left + right) / 2) < 1e-9 * (right - left) + 1e-9
    assert abs(y - (bottom + top) / 2) < 1e-9 * (top - bottom) + 1e-9


def test_entity_graph_bundles_what_a_hub_links_beyond_its_cap() -> None:
    chart = plot.entity_graph(_hub_store(), "ann", hops=2, hub=6)
    ax = chart.figure.axes[0]
    labels = [t.get_text() for t in ax.texts]
    workers = [x for x in labels if x.startswith("worker-")]
    assert len(workers) == 6  # the hub shows six of its forty
    assert "+34 more" in labels  # and one node for the rest
    assert {"ann", "bob", "cy", "acme", "tea"} <= set(labels)
    assert "acme employs 34 more, not drawn one by one." in chart.alt.splitlines()
    # The subject's own links are never bundled: the subject is what is asked about.
    many = plot.entity_graph(_hub_store(), "acme", hops=1, hub=6)
    assert (
        len([t for t in many.figure.axes[0].texts if "worker-" in t.get_text()]) == 40
    )


def test_relations_are_drawn_in_the_okabe_ito_palette() -> None:
    from matplotlib.colors import to_hex

    okabe_ito = {"#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00",
                 "#cc79a7", "#000000"}  # fmt: skip
    ax = plot.entity_graph(_hub_store(), "ann", hops=2).figure.axes[0]
    handles = ax.get_legend().legend_handles
    colours = {to_hex(h.get_color()) for h in handles}
    assert colours <= okabe_ito | {"#999999"} and len(colours) == len(handles)


def test_timeline_titles_shorten_iris_with_prefixes() -> None:
    store = GrainStore(clock=lambda: T0 + DAY)
    store.put(Belief("http://xmlns.com/foaf/0.1/alice", "http://schema.org/worksFor",
                     "http://example.org/acme", 0.9, created_at=T0))  # fmt: skip
    title = plot.timeline(store, "http://xmlns.com/foaf/0.1/alice",
                          "http://schema.org/worksFor").figure.axes[0].get_title()  # fmt: skip
    assert title == "foaf:alice schema:worksFor: 1 version"
    mine = plot.timeline(store, "http://xmlns.com/foaf/0.1/alice", "http://schema.org/worksFor",
                         prefixes={"me": "http://xmlns.com/foaf/0.1/"})  # fmt: skip
    assert mine.figure.axes[0].get_title().startswith("me:alice schema:worksFor")
    base = store.settings.base_iri
    store.put(Belief("bob", "works_at", "Acme", 0.9, created_at=T0))
    plain = plot.timeline(store, "bob", "works_at").figure.axes[0].get_title()
    assert plain == "bob works_at: 1 version" and base not in plain


def _kept(regions: list[plot._Region]) -> list[tuple[str, tuple[float, float | None]]]:
    return [(r.grain["object"], r.valid) for r in regions if r.kind.startswith("past")]


def test_the_kept_past_ends_where_the_successor_is_valid_from() -> None:
    """A successor that gives only system_valid_from is valid from it, not from
    its created_at; the picture left a gap there where beliefs() answers."""
    store = GrainStore(clock=lambda: T0 + 1000 * DAY)
    old = store.put(Belief("bo", "works_at", "Acme", 0.9, created_at=T0))
    store.supersede(old, {"type": "belief", "subject": "bo", "relation": "works_at",
                          "object": "Initech", "confidence": 0.9,
                          "created_at": T0 + 100 * DAY,
                          "system_valid_from": T0 + 200 * DAY})  # fmt: skip
    regions = list(plot._regions(store, plot._versions(store, "bo", "works_at", None)))
    assert _kept(regions) == [("Acme", (T0, T0 + 200 * DAY))]
    assert [g["object"] for g in store.beliefs("bo", valid_at=T0 + 150 * DAY)] == [
        "Acme"
    ]


def test_a_chain_whose_middle_was_erased_is_drawn() -> None:
    """Its predecessor's successor is a tombstone: drawing it raised NotFoundError.
    With the successor's valid time gone, the predecessor describes no past."""
    store = GrainStore(clock=lambda: T0 + 1000 * DAY)
    first = store.put(Belief("cy", "works_at", "Acme", 0.9, created_at=T0))
    middle = store.supersede(first, Belief("cy", "works_at", "Initech", 0.9,
                                           created_at=T0 + DAY))  # fmt: skip
    store.supersede(
        middle, Belief("cy", "works_at", "Globex", 0.9, created_at=T0 + 2 * DAY)
    )
    store.erase(middle, reason="asked to")
    chart = plot.timeline(store, "cy", "works_at")
    assert {"Acme", "Globex"} <= {t.get_text() for t in chart.figure.axes[0].texts}
    regions = list(plot._regions(store, plot._versions(store, "cy", "works_at", None)))
    assert _kept(regions) == []
    assert store.beliefs("cy", valid_at=T0 + DAY // 2) == []  # as the picture says


def test_an_entity_graph_is_the_same_under_every_hash_seed() -> None:
    """networkx's subgraph orders nodes by a set: the alt text (and the picture)
    changed from one run to the next."""
    import os
    import subprocess
    import sys

    script = (
        "from oms_rdf import Belief, GrainStore\n"
        "from oms_rdf.notebook import plot\n"
        "s = GrainStore()\n"
        "s.put_many([Belief(f'p{i}', 'knows', f'p{(i * 7 + 3) % 200}', 0.9,"
        " created_at=i + 1) for i in range(200)] + [Belief(f'p{i}', 'works_at',"
        " f'o{i % 7}', 0.9, created_at=i + 1) for i in range(200)])\n"
        "print(plot.entity_graph(s, 'p1', hops=4, limit=25, hub=4).alt)\n"
    )
    alts = {
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       check=True, env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }  # fmt: skip
    assert len(alts) == 1
