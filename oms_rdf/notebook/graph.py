"""The entity graph: entities and what is believed between them, around a subject
or of a query's answer (see :func:`entity_graph`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from ..errors import SchemaError
from ..rdf.tables import python_value
from .chart import RELATION_COLOURS, Chart, by_count, short
from .chart import figure as new_figure

if TYPE_CHECKING:
    from ..store import GrainStore

__all__ = ["entity_graph"]


Edge = tuple[str, str, str]  # subject, relation, object (as labels)
ALT_EDGES = 40  # edges the alt text lists one by one


def entity_graph(
    source: GrainStore | Iterable[Any],
    subject: str | None = None,
    *,
    hops: int = 1,
    limit: int = 50,
    namespace: str | None = None,
    hub: int = 8,
) -> Chart:
    """Draw entities and what is believed between them.

    ``source`` is a store (then the neighbourhood of ``subject``, ``hops`` steps out
    either way, among the beliefs held now), or what a query gave: a CONSTRUCT's
    triples, a SELECT's rows (their first three variables are subject, relation and
    object), or a list of grains. At most ``limit`` nodes are drawn, nearest to
    ``subject`` first, with ``subject`` at the centre; a hub (any other node) shows
    at most ``hub`` of the nodes it is the first to reach, and one node, ``+N
    more``, for the rest of those, so that one hub does not fill the picture.
    Relations are told apart by colour (the Okabe-Ito palette, safe for
    colour-blind readers), and labels sit on white so they stay legible.
    """
    import networkx as nx

    # Sorted: the same picture and alt text whatever order the edges came in.
    graph = _relation_graph(sorted(_edges(source, subject, hops, namespace)))
    total = graph.number_of_nodes()
    shells, bundles = _shells(graph, subject, limit, hub)
    graph = _kept(graph, [x for shell in shells for x in shell])
    shells = _bundled(graph, shells, bundles)
    n = max(graph.number_of_nodes(), 1)
    side = min(14.0, 5.0 + n * 0.16)
    figure = new_figure(side, side * 0.85)
    ax = figure.add_subplot()
    # Rings by distance from the subject: no two labels land on one spot, and
    # what is near the subject is drawn near it.
    layout = (
        nx.shell_layout(graph, nlist=shells)
        if n > 1
        else {x: (0.0, 0.0) for x in graph}
    )
    _draw_edges(ax, graph, layout)
    _draw_nodes(ax, graph, layout, subject, font=9 if n <= 20 else 7)
    _centre_on(ax, layout, subject)
    ax.legend(loc="lower left", fontsize=8, title="relation", title_fontsize=8)
    shown, links = graph.number_of_nodes(), graph.number_of_edges()
    about = f" around {subject}" if subject else ""
    of = f" of {total}" if shown < total else ""
    ax.set_title(f"Entity graph{about}: {shown}{of} nodes, {links} edges")
    ax.set_xlabel("entities laid out by their links (position has no scale)")
    ax.set_ylabel("")
    ax.set_xticks([])
    ax.set_yticks([])
    alt = [
        f"Entity graph{about}: {shown} nodes and {links} edges"
        f"{f' (of {total} nodes)' if shown < total else ''}."
    ]
    drawn = [(s, o, d) for s, o, d in graph.edges(data=True) if not d.get("bundle")]
    alt += [f"{s} {d['relation']} {o}." for s, o, d in drawn[:ALT_EDGES]]
    if len(drawn) > ALT_EDGES:
        alt.append(f"{len(drawn) - ALT_EDGES} more edges drawn, not listed here.")
    alt += [
        f"{node} {relation} {count} more, not drawn one by one."
        for node, (count, relation, _) in bundles.items()
    ]
    return Chart(figure, "\n".join(alt))


def _kept(graph: Any, nodes: list[str]) -> Any:
    """The graph of these nodes, in this order, and its edges in the graph's
    order (networkx's subgraph orders them by a set: by the hash seed)."""
    import networkx as nx

    kept, chosen = nx.DiGraph(), set(nodes)
    kept.add_nodes_from(nodes)
    kept.add_edges_from(
        (s, o, d) for s, o, d in graph.edges(data=True) if s in chosen and o in chosen
    )
    return kept


def _bundled(
    graph: Any, shells: list[list[str]], bundles: dict[str, tuple[int, str, bool]]
) -> list[list[str]]:
    """Add a ``+N more`` node for each hub's bundle, in the ring after the hub's."""
    shells = [list(shell) for shell in shells]
    depth = {x: d for d, shell in enumerate(shells) for x in shell}
    for node, (count, relation, outgoing) in bundles.items():
        more = f"+{count} more"
        ends = (node, more) if outgoing else (more, node)
        graph.add_edge(*ends, relation=relation, bundle=True)
        ring = depth[node] + 1
        if ring == len(shells):
            shells.append([])
        shells[ring].append(more)
    return shells


def _centre_on(ax: Any, layout: Any, subject: str | None) -> None:
    """Square limits around the subject's node, so that it sits at the centre."""
    if subject is None or subject not in layout:
        return
    cx, cy = layout[subject]
    reach = max([max(abs(x - cx), abs(y - cy)) for x, y in layout.values()] + [0.5])
    reach *= 1.15  # room for the outer labels
    ax.set_xlim(cx - reach, cx + reach)
    ax.set_ylim(cy - reach, cy + reach)


def _relation_graph(edges: Iterable[Edge]) -> Any:
    """The entities as a directed graph; the relations between two, one edge."""
    import networkx as nx

    graph = nx.DiGraph()
    for s, p, o in edges:
        if graph.has_edge(s, o) and p not in graph[s][o]["relation"].split(", "):
            graph[s][o]["relation"] += f", {p}"
        else:
            graph.add_edge(s, o, relation=p)
    return graph


def _draw_edges(ax: Any, graph: Any, layout: Any) -> None:
    """The edges, the most common relations each in a colour, the rest in grey."""
    import networkx as nx

    relations = [
        r for r, _ in by_count(d["relation"] for *_, d in graph.edges(data=True))
    ]
    colours = {
        r: RELATION_COLOURS[i]
        for i, r in enumerate(relations[: len(RELATION_COLOURS) - 1])
    }
    other = "#999999"
    for relation in [*colours, None]:
        chosen = [
            (u, v)
            for u, v, d in graph.edges(data=True)
            if (d["relation"] in colours) == (relation is not None)
            and (relation is None or d["relation"] == relation)
        ]
        if not chosen:
            continue
        colour = colours[relation] if relation else other
        nx.draw_networkx_edges(
            graph,
            layout,
            edgelist=chosen,
            ax=ax,
            arrows=True,
            edge_color=colour,
            alpha=0.7,
            node_size=300,
            connectionstyle="arc3,rad=0.08",
        )
        ax.plot([], [], color=colour, label=relation or "other relations")


def _draw_nodes(
    ax: Any, graph: Any, layout: Any, subject: str | None, *, font: int
) -> None:
    """The nodes, the subject's in orange, each labelled on white."""
    import networkx as nx

    centre = [subject] if subject in graph else []
    others = [x for x in graph if x not in centre]
    nx.draw_networkx_nodes(
        graph, layout, nodelist=others, node_color="#dddddd", node_size=300, ax=ax
    )
    if centre:
        nx.draw_networkx_nodes(
            graph, layout, nodelist=centre, node_color="#E69F00", node_size=500, ax=ax
        )
    nx.draw_networkx_labels(
        graph,
        layout,
        labels={x: short(x, 22) for x in graph},
        font_size=font,
        ax=ax,
        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
    )


def _edges(
    source: Any, subject: str | None, hops: int, namespace: str | None
) -> list[Edge]:
    from ..store import GrainStore, Solutions, Triples

    if isinstance(source, GrainStore):
        beliefs = source.beliefs(namespace=namespace)
        edges = [
            (str(g.get("subject")), str(g.get("relation")), str(g.get("object")))
            for g in beliefs
            if g.type == "belief"
        ]
        if subject is None:
            return edges
        near = {subject}
        for _ in range(hops):
            near |= {x for s, _, o in edges if s in near or o in near for x in (s, o)}
        return [e for e in edges if e[0] in near and e[2] in near]
    if isinstance(source, Triples | Solutions):
        # Read and kept (the answer can be read again), and labelled as a whole.
        kept = source.triples() if isinstance(source, Triples) else source.rows()
        rows = [_three(row) for row in kept]
        label = _labels([term for row in rows for term in row])
        return [(label[s], label[p], label[o]) for s, p, o in rows]
    return [
        (str(g.get("subject")), str(g.get("relation")), str(g.get("object")))
        for g in source
    ]


def _three(row: Any) -> tuple[Any, Any, Any]:
    """Subject, relation and object of a triple or of a row's first three values."""
    if isinstance(row, ox.Triple):
        return row.subject, row.predicate, row.object
    if len(row) < 3:
        raise SchemaError(
            "a SELECT is drawn from its first three variables (subject, relation, "
            f"object); this one has {len(row)}",
            path="source",
        )
    return row[0], row[1], row[2]


def _labels(terms: list[Any]) -> dict[Any, str]:
    """Each term's label: an IRI's local name where no other IRI of the answer
    has it (else the whole IRI: two entities are never drawn as one)."""
    local = {
        t: t.value.rstrip("/#").rsplit("#", 1)[-1].rsplit("/", 1)[-1]
        for t in set(terms)
        if isinstance(t, ox.NamedNode)
    }
    taken = by_count(name for name in local.values())
    shared = {name for name, count in taken if count > 1}
    return {
        t: (local[t] if local.get(t) and local[t] not in shared else t.value)
        if isinstance(t, ox.NamedNode)
        else str(python_value(t))
        for t in set(terms)
    }


def _shells(
    graph: Any, start: str | None, limit: int, hub: int
) -> tuple[list[list[str]], dict[str, tuple[int, str, bool]]]:
    """At most ``limit`` nodes in rings by distance from ``start`` (breadth first, so
    a node sits beside the one that reached it); without ``start``, from the best
    connected node of each part of the graph. A node other than ``start`` reaches
    at most ``hub`` new nodes; the rest are its bundle: how many, the commonest
    relation to them, and whether it points to them."""
    undirected = graph.to_undirected(as_view=True)
    by_degree = sorted(graph, key=lambda x: (-graph.degree(x), x))
    roots: list[str] = [start] if start is not None and start in graph else []
    roots += [x for x in by_degree if x != start]
    depth: dict[str, int] = {}
    bundles: dict[str, tuple[int, str, bool]] = {}
    hidden: set[str] = set()  # in a bundle
    for root in roots:
        if root in depth or root in hidden or len(depth) >= limit:
            continue
        depth[root] = 0 if root == start or not depth else 1
        queue = deque([root])
        while queue and len(depth) < limit:
            node = queue.popleft()
            new = [
                x
                for x in sorted(undirected[node], key=lambda x: (-graph.degree(x), x))
                if x not in depth and x not in hidden
            ]
            if node != start and len(new) > hub:
                new, rest = new[:hub], new[hub:]
                bundles[node] = _bundle(graph, node, rest)
                hidden.update(rest)
            for neighbour in new:
                if len(depth) < limit:
                    depth[neighbour] = depth[node] + 1
                    queue.append(neighbour)
    shells: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for node, d in depth.items():  # insertion order is breadth-first order
        shells[d].append(node)
    return [shell for shell in shells if shell], bundles


def _bundle(graph: Any, node: str, rest: list[str]) -> tuple[int, str, bool]:
    """A hub's bundle: how many it leaves out, its commonest relation to them, and
    whether most of those links point from the hub."""
    relations = [
        (graph[node][x]["relation"], True)
        if graph.has_edge(node, x)
        else (graph[x][node]["relation"], False)
        for x in rest
    ]
    relation = by_count(r for r, _ in relations)[0][0]
    outgoing = sum(1 for _, out in relations if out) * 2 >= len(relations)
    return len(rest), relation, outgoing
