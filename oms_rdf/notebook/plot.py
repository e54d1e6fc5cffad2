"""Pictures of a belief graph: the bi-temporal timeline, the entity graph, earned confidence.

Each function returns a :class:`Chart`: a matplotlib figure with labelled axes and
an alt text that says in words what the picture shows. A notebook displays it as
an image carrying that alt text; ``chart.figure`` is the figure to change or save.
matplotlib (and networkx, for the entity graph) come with the ``[notebooks]``
extra and are imported only when a picture is drawn; figures are made without
pyplot, so nothing is shown twice and no GUI backend is needed.

>>> from oms_rdf import Belief, GrainStore
>>> store = GrainStore()
>>> first = store.put(Belief("alice", "works_at", "Acme", 0.9, created_at=1_600_000_000_000))
>>> _ = store.supersede(first, Belief("alice", "works_at", "Initech", 0.9,
...                                   created_at=1_700_000_000_000))
>>> chart = timeline(store, "alice", "works_at")
>>> chart.figure.axes[0].get_xlabel()
'valid time (when it was true)'
>>> chart.alt.splitlines()[0]
'Timeline of alice works_at: 2 versions, valid time against system time.'
"""

from __future__ import annotations

import base64
import html
import io
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from ..codec.grain import Grain
from ..rdf.tables import python_value
from ..times import moment

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..store import GrainStore

__all__ = ["Chart", "confidence", "entity_graph", "timeline"]

# Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito).
_KINDS = {
    "current": ("#009E73", None),
    "superseded": ("#0072B2", "//"),
    "retracted": ("#D55E00", "xx"),
    "past (kept after supersession)": ("#56B4E9", ".."),
}
_RELATION_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00",
                     "#56B4E9", "#F0E442", "#000000")  # fmt: skip


@dataclass(frozen=True, slots=True)
class Chart:
    """A figure and its alt text; shown in a notebook as an image that carries both."""

    figure: Figure
    alt: str

    def png(self) -> bytes:
        """The figure as PNG bytes."""
        out = io.BytesIO()
        self.figure.savefig(out, format="png", dpi=110, bbox_inches="tight")
        return out.getvalue()

    def save(self, path: str, **options: Any) -> None:
        """Save the figure (format from the file name, as matplotlib's ``savefig``)."""
        self.figure.savefig(path, bbox_inches="tight", **options)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:  # fmt: skip
        png = self.png()
        data = base64.b64encode(png).decode()
        return (
            {
                "image/png": data,
                "text/html": f'<img src="data:image/png;base64,{data}" alt="{html.escape(self.alt)}">',
                "text/plain": self.alt,
            },
            {"image/png": {"alt": self.alt}},
        )


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _moment(ms: float) -> datetime:
    return moment(int(ms))


def _days(ms: float) -> float:
    """Epoch ms as matplotlib's date numbers (days since 1970)."""
    return ms / 86_400_000


def _day(ms: float) -> str:
    return _moment(ms).strftime("%Y-%m-%d")


# --- the bi-temporal timeline -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Region:
    grain: Grain
    kind: str
    valid: tuple[float, float | None]  # None: open-ended
    known: tuple[float, float | None]  # None: still held


def _regions(store: GrainStore, grains: Sequence[Grain]) -> Iterator[_Region]:
    """Where each version stands on both axes, as :meth:`GrainStore.beliefs` reads it."""
    for grain in grains:
        state = store.status(grain)
        valid_from = grain.get(
            "valid_from", grain.get("system_valid_from", grain.created_at)
        )
        valid_to = grain.get("valid_to")
        known_from = grain.get("system_valid_from", grain.created_at)
        if state.status == "retracted" or state.voided_at is not None:
            kind = "retracted"
        elif state.is_current:
            kind = "current"
        else:
            kind = "superseded"
        yield _Region(
            grain, kind, (valid_from, valid_to), (known_from, state.system_to)
        )
        if state.superseded_by and state.voided_at is None:
            # After a supersession the old version still describes the past, up to
            # its successor's valid_from (design §5).
            successor = store.get(state.superseded_by)
            end = successor.get("valid_from", successor.created_at)
            end = end if valid_to is None else min(valid_to, end)
            if end > valid_from and state.system_to is not None:
                past = "past (kept after supersession)"
                yield _Region(grain, past, (valid_from, end), (state.system_to, None))


def timeline(
    store: GrainStore,
    subject: str,
    relation: str,
    *,
    namespace: str | None = None,
    now: Any = None,
) -> Chart:
    """Draw every version of one subject and relation: valid time against system time.

    Each version is a box: known from its system time (vertical axis) and said to
    be true over its valid interval (horizontal). Current, superseded and retracted
    versions are told apart by colour and hatching, and after a supersession the
    old version's account of the past is drawn as well. The axes fit the data and
    now; an open-ended interval runs to the edge, marked with an arrow.

    Raises:
        NotFoundError: ERR_NOT_FOUND when the store holds no such belief.
    """

    from ..errors import NotFoundError
    from ..times import to_millis

    grains = sorted(
        {g for status in ("active", "superseded", "retracted")
         for g in store.beliefs(subject, relation, namespace=namespace, status=status)},
        key=lambda g: (g.get("system_valid_from", g.created_at), g.address),
    )  # fmt: skip
    if not grains:
        raise NotFoundError(f"no belief {subject!r} {relation!r} in this store")
    moment = store.clock() if now is None else to_millis(now)
    regions = list(_regions(store, grains))
    edges = [t for r in regions for t in (*r.valid, *r.known) if t is not None]
    low, high = min(edges), max([*edges, moment])
    margin = max((high - low) * 0.06, 86_400_000)
    right, top = high + margin, high + margin

    figure = _figure(9, 5)
    ax = figure.add_subplot()
    seen: set[str] = set()
    for region in regions:
        colour, hatch = _KINDS[region.kind]
        x0, x1 = (
            region.valid[0],
            region.valid[1] if region.valid[1] is not None else right,
        )
        y0, y1 = (
            region.known[0],
            region.known[1] if region.known[1] is not None else top,
        )
        left, bottom = _days(x0), _days(y0)
        width, height = _days(x1) - left, _days(y1) - bottom
        label = None if region.kind in seen else region.kind
        seen.add(region.kind)
        ax.bar(left, height, width=width, bottom=bottom, align="edge", color=colour,
               alpha=0.35, hatch=hatch, edgecolor=colour, linewidth=1.2, label=label)  # fmt: skip
        if not region.kind.startswith("past"):
            ax.annotate(_short(str(region.grain.get("object")), 28),
                        (left + width / 2, bottom + height / 2), ha="center", va="center",
                        fontsize=8, bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})  # fmt: skip
        if region.valid[1] is None:
            ax.annotate("", (_days(right), bottom + height / 2),
                        (_days(right - margin), bottom + height / 2),
                        arrowprops={"arrowstyle": "->", "color": colour})  # fmt: skip
    now_line = _days(moment)
    ax.axvline(now_line, color="grey", linestyle=":", linewidth=1)
    ax.axhline(now_line, color="grey", linestyle=":", linewidth=1)
    ax.text(now_line, _days(low - margin), " now", color="grey",
            fontsize=8, va="bottom")  # fmt: skip
    ax.set_xlim(_days(low - margin), _days(right))
    ax.set_ylim(_days(low - margin), _days(top))
    ax.xaxis_date()
    ax.yaxis_date()
    ax.set_xlabel("valid time (when it was true)")
    ax.set_ylabel("system time (when we knew it)")
    ax.set_title(f"{subject} {relation}: {len(grains)} versions")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.2)

    lines = [f"Timeline of {subject} {relation}: {len(grains)} versions, "
             "valid time against system time."]  # fmt: skip
    for region in regions:
        if region.kind.startswith("past"):
            continue
        valid_to = (
            "open-ended"
            if region.valid[1] is None
            else f"until {_day(region.valid[1])}"
        )
        known_to = (
            "still held"
            if region.known[1] is None
            else f"until {_day(region.known[1])}"
        )
        lines.append(f"{region.grain.get('object')!s}: {region.kind}, true from "
                     f"{_day(region.valid[0])} {valid_to}, known from "
                     f"{_day(region.known[0])} {known_to}.")  # fmt: skip
    return Chart(figure, "\n".join(lines))


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --- the entity graph ---------------------------------------------------------------

Edge = tuple[str, str, str]  # subject, relation, object (as labels)


def entity_graph(
    source: GrainStore | Iterable[Any],
    subject: str | None = None,
    *,
    hops: int = 1,
    limit: int = 50,
    namespace: str | None = None,
) -> Chart:
    """Draw entities and what is believed between them.

    ``source`` is a store (then the neighbourhood of ``subject``, ``hops`` steps out
    either way, among the beliefs held now), or what a query gave: a CONSTRUCT's
    triples, a SELECT's rows (their first three variables are subject, relation and
    object), or a list of grains. At most ``limit`` nodes are drawn, nearest to
    ``subject`` first; relations are told apart by colour, and labels sit on white
    so they stay legible.
    """
    import networkx as nx

    edges = _edges(source, subject, hops, namespace)
    graph = nx.DiGraph()
    for s, p, o in edges:
        if graph.has_edge(s, o) and p not in graph[s][o]["relation"].split(", "):
            graph[s][o]["relation"] += f", {p}"
        else:
            graph.add_edge(s, o, relation=p)
    total = graph.number_of_nodes()
    shells = _shells(graph, subject, limit)
    graph = graph.subgraph([x for shell in shells for x in shell]).copy()
    n = max(graph.number_of_nodes(), 1)
    side = min(14.0, 5.0 + n * 0.16)
    figure = _figure(side, side * 0.85)
    ax = figure.add_subplot()
    # Rings by distance from the subject: no two labels land on one spot, and
    # what is near the subject is drawn near it.
    layout = (
        nx.shell_layout(graph, nlist=shells)
        if n > 1
        else {x: (0.0, 0.0) for x in graph}
    )
    relations = [
        r for r, _ in _by_count(d["relation"] for *_, d in graph.edges(data=True))
    ]
    colours = {
        r: _RELATION_COLOURS[i]
        for i, r in enumerate(relations[: len(_RELATION_COLOURS) - 1])
    }
    other = "#999999"
    for relation in [*colours, None]:
        chosen = [(u, v) for u, v, d in graph.edges(data=True)
                  if (d["relation"] in colours) == (relation is not None)
                  and (relation is None or d["relation"] == relation)]  # fmt: skip
        if chosen:
            nx.draw_networkx_edges(graph, layout, edgelist=chosen, ax=ax, arrows=True,
                                   edge_color=colours.get(relation, other) if relation else other,
                                   alpha=0.7, node_size=300, connectionstyle="arc3,rad=0.08")  # fmt: skip
            ax.plot([], [], color=colours[relation] if relation else other,
                    label=relation or "other relations")  # fmt: skip
    centre = [subject] if subject in graph else []
    nx.draw_networkx_nodes(graph, layout, nodelist=[x for x in graph if x not in centre],
                           node_color="#dddddd", node_size=300, ax=ax)  # fmt: skip
    if centre:
        nx.draw_networkx_nodes(graph, layout, nodelist=centre, node_color="#E69F00",
                               node_size=500, ax=ax)  # fmt: skip
    font = 9 if n <= 20 else 7
    nx.draw_networkx_labels(graph, layout, labels={x: _short(x, 22) for x in graph},
                            font_size=font, ax=ax,
                            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})  # fmt: skip
    ax.legend(loc="lower left", fontsize=8, title="relation", title_fontsize=8)
    shown = graph.number_of_nodes()
    about = f" around {subject}" if subject else ""
    ax.set_title(f"Entity graph{about}: {shown} of {total} nodes, {graph.number_of_edges()} edges"
                 if shown < total else
                 f"Entity graph{about}: {shown} nodes, {graph.number_of_edges()} edges")  # fmt: skip
    ax.set_xlabel("entities laid out by their links (position has no scale)")
    ax.set_ylabel("")
    ax.set_xticks([])
    ax.set_yticks([])
    alt = [f"Entity graph{about}: {shown} nodes and {graph.number_of_edges()} edges"
           f"{f' (of {total} nodes)' if shown < total else ''}."]  # fmt: skip
    alt += [
        f"{s} {d['relation']} {o}." for s, o, d in list(graph.edges(data=True))[:40]
    ]
    return Chart(figure, "\n".join(alt))


def _edges(
    source: Any, subject: str | None, hops: int, namespace: str | None
) -> list[Edge]:
    from ..store import GrainStore, Solutions, Triples

    if isinstance(source, GrainStore):
        beliefs = source.beliefs(namespace=namespace)
        edges = [(str(g.get("subject")), str(g.get("relation")), str(g.get("object")))
                 for g in beliefs if g.type == "belief"]  # fmt: skip
        if subject is None:
            return edges
        near = {subject}
        for _ in range(hops):
            near |= {x for s, _, o in edges if s in near or o in near for x in (s, o)}
        return [e for e in edges if e[0] in near and e[2] in near]
    if isinstance(source, Triples):
        return [
            (_label(t.subject), _label(t.predicate), _label(t.object)) for t in source
        ]
    if isinstance(source, Solutions):
        return [(_label(r[0]), _label(r[1]), _label(r[2])) for r in source]
    return [(str(g.get("subject")), str(g.get("relation")), str(g.get("object")))
            for g in source]  # fmt: skip


def _label(term: Any) -> str:
    value = python_value(term)
    if isinstance(term, ox.NamedNode):
        local = term.value.rstrip("/#").rsplit("#", 1)[-1].rsplit("/", 1)[-1]
        return local or term.value
    return str(value)


def _shells(graph: Any, start: str | None, limit: int) -> list[list[str]]:
    """At most ``limit`` nodes in rings by distance from ``start`` (breadth first, so
    a node sits beside the one that reached it); without ``start``, from the best
    connected node of each part of the graph."""
    undirected = graph.to_undirected(as_view=True)
    by_degree = sorted(graph, key=lambda x: (-graph.degree(x), x))
    roots: list[str] = [start] if start is not None and start in graph else []
    roots += [x for x in by_degree if x != start]
    depth: dict[str, int] = {}
    for root in roots:
        if root in depth or len(depth) >= limit:
            continue
        depth[root] = 0 if root == start or not depth else 1
        queue = deque([root])
        while queue and len(depth) < limit:
            node = queue.popleft()
            for neighbour in sorted(
                undirected[node], key=lambda x: (-graph.degree(x), x)
            ):
                if neighbour not in depth and len(depth) < limit:
                    depth[neighbour] = depth[node] + 1
                    queue.append(neighbour)
    shells: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for node, d in depth.items():  # insertion order is breadth-first order
        shells[d].append(node)
    return [shell for shell in shells if shell]


def _by_count(values: Iterable[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


# --- earned confidence --------------------------------------------------------------


def confidence(store: GrainStore, address: str | Grain) -> Chart:
    """Draw a belief's effective confidence over its evidence events.

    A step line starts at the confidence the grain was stored with; each event is a
    marker (up for supporting, down for refuting) at the confidence it left, and
    the test's promotion or demotion is named where it happened.
    """
    grain = store.get(store.resolve(address))
    log = store.evidence_log(grain)
    start = grain.get("confidence", 0.5)
    born = grain.get("system_valid_from", grain.created_at)
    times = [_days(born)] + [_days(e.at) for e in log]
    values = [start] + [e.effective_confidence for e in log]
    figure = _figure(8, 4)
    ax = figure.add_subplot()
    ax.step(times, values, where="post", color="#0072B2", label="effective confidence")
    for kind, marker, colour in (
        ("supporting", "^", "#009E73"),
        ("refuting", "v", "#D55E00"),
    ):
        chosen = [e for e in log if e.kind == kind]
        if chosen:
            ax.scatter([_days(e.at) for e in chosen],
                       [e.effective_confidence for e in chosen],
                       marker=marker, color=colour, zorder=3, label=f"{kind} evidence")  # fmt: skip
    before = "accumulating"
    for event in log:
        if event.status != before:
            ax.annotate(event.status, (_days(event.at), event.effective_confidence),
                        textcoords="offset points", xytext=(4, 6), fontsize=8)  # fmt: skip
            before = event.status
    ax.axhline(
        start, color="grey", linestyle=":", linewidth=1, label="stored confidence"
    )
    ax.set_ylim(0, 1)
    ax.xaxis_date()
    ax.set_xlabel("time of the evidence")
    ax.set_ylabel("effective confidence")
    said = f"{grain.get('subject')} {grain.get('relation')} {grain.get('object')!s}"
    ax.set_title(_short(said, 70))
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(alpha=0.2)
    figure.autofmt_xdate()
    alt = [f"Effective confidence of '{said}' over {len(log)} evidence events, "
           f"starting at {start:.2f}."]  # fmt: skip
    alt += [f"{_day(e.at)}: {e.kind} ({e.strength:g}) -> {e.effective_confidence:.2f}, {e.status}."
            for e in log[:40]]  # fmt: skip
    return Chart(figure, "\n".join(alt))
