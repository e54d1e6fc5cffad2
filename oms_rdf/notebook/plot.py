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

from ..codec.grain import Grain, system_from
from ..errors import NotFoundError
from ..rdf.tables import python_value
from ..times import moment, to_millis

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
_RELATION_COLOURS = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#D55E00",
    "#56B4E9",
    "#F0E442",
    "#000000",
)


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

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
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
        known_from = system_from(grain)
        valid_from = grain.get("valid_from", known_from)
        valid_to = grain.get("valid_to")
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
    grains = _versions(store, subject, relation, namespace)
    now_ms = store.clock() if now is None else to_millis(now)
    regions = list(_regions(store, grains))
    edges = [t for r in regions for t in (*r.valid, *r.known) if t is not None]
    low, high = min(edges), max([*edges, now_ms])
    frame = _Frame(low, high, max((high - low) * 0.06, 86_400_000))
    figure = _figure(9, 5)
    ax = figure.add_subplot()
    seen: set[str] = set()
    for region in regions:
        _draw_region(ax, region, frame, legend=region.kind not in seen)
        seen.add(region.kind)
    _draw_now(ax, now_ms, frame)
    ax.xaxis_date()
    ax.yaxis_date()
    ax.set_xlabel("valid time (when it was true)")
    ax.set_ylabel("system time (when we knew it)")
    ax.set_title(f"{subject} {relation}: {len(grains)} versions")
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.2)
    return Chart(figure, _timeline_alt(subject, relation, len(grains), regions))


def _versions(
    store: GrainStore, subject: str, relation: str, namespace: str | None
) -> list[Grain]:
    """Every version of a subject and relation, in the order they became known."""
    found = {
        grain
        for status in ("active", "superseded", "retracted")
        for grain in store.beliefs_by_status(
            status, subject, relation, namespace=namespace
        )
    }
    if not found:
        raise NotFoundError(f"no belief {subject!r} {relation!r} in this store")
    return sorted(found, key=lambda g: (system_from(g), g.address))


@dataclass(frozen=True, slots=True)
class _Frame:
    """A timeline's extent in epoch ms, the same on both axes: its data run from
    ``low`` to ``high``, with ``margin`` on either side."""

    low: float
    high: float
    margin: float

    @property
    def start(self) -> float:
        """Where both axes begin."""
        return self.low - self.margin

    @property
    def edge(self) -> float:
        """Where both axes end, and open-ended intervals with them."""
        return self.high + self.margin


def _draw_region(ax: Any, region: _Region, frame: _Frame, *, legend: bool) -> None:
    """One version's box, its object's label, and an arrow if it is open-ended."""
    colour, hatch = _KINDS[region.kind]
    valid_to, known_to = region.valid[1], region.known[1]
    x1 = frame.edge if valid_to is None else valid_to
    y1 = frame.edge if known_to is None else known_to
    left, bottom = _days(region.valid[0]), _days(region.known[0])
    width, height = _days(x1) - left, _days(y1) - bottom
    ax.bar(
        left,
        height,
        width=width,
        bottom=bottom,
        align="edge",
        color=colour,
        alpha=0.35,
        hatch=hatch,
        edgecolor=colour,
        linewidth=1.2,
        label=region.kind if legend else None,
    )
    middle = bottom + height / 2
    if not region.kind.startswith("past"):
        ax.annotate(
            _short(str(region.grain.get("object")), 28),
            (left + width / 2, middle),
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8},
        )
    if valid_to is None:
        ax.annotate(
            "",
            (_days(frame.edge), middle),
            (_days(frame.edge - frame.margin), middle),
            arrowprops={"arrowstyle": "->", "color": colour},
        )


def _draw_now(ax: Any, now_ms: float, frame: _Frame) -> None:
    """The lines of now on both axes, and the axes' extent."""
    line = _days(now_ms)
    ax.axvline(line, color="grey", linestyle=":", linewidth=1)
    ax.axhline(line, color="grey", linestyle=":", linewidth=1)
    ax.text(line, _days(frame.start), " now", color="grey", fontsize=8, va="bottom")
    ax.set_xlim(_days(frame.start), _days(frame.edge))
    ax.set_ylim(_days(frame.start), _days(frame.edge))


def _timeline_alt(
    subject: str, relation: str, versions: int, regions: Iterable[_Region]
) -> str:
    """The timeline in words: one line for the chart, one per version."""
    lines = [
        f"Timeline of {subject} {relation}: {versions} versions, "
        "valid time against system time."
    ]
    for region in regions:
        if region.kind.startswith("past"):
            continue
        valid_to, known_to = region.valid[1], region.known[1]
        until = "open-ended" if valid_to is None else f"until {_day(valid_to)}"
        held = "still held" if known_to is None else f"until {_day(known_to)}"
        lines.append(
            f"{region.grain.get('object')!s}: {region.kind}, true from "
            f"{_day(region.valid[0])} {until}, known from "
            f"{_day(region.known[0])} {held}."
        )
    return "\n".join(lines)


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

    graph = _relation_graph(_edges(source, subject, hops, namespace))
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
    _draw_edges(ax, graph, layout)
    _draw_nodes(ax, graph, layout, subject, font=9 if n <= 20 else 7)
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
    alt += [
        f"{s} {d['relation']} {o}." for s, o, d in list(graph.edges(data=True))[:40]
    ]
    return Chart(figure, "\n".join(alt))


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
        r for r, _ in _by_count(d["relation"] for *_, d in graph.edges(data=True))
    ]
    colours = {
        r: _RELATION_COLOURS[i]
        for i, r in enumerate(relations[: len(_RELATION_COLOURS) - 1])
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
        labels={x: _short(x, 22) for x in graph},
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
    if isinstance(source, Triples):
        return [
            (_label(t.subject), _label(t.predicate), _label(t.object)) for t in source
        ]
    if isinstance(source, Solutions):
        return [(_label(r[0]), _label(r[1]), _label(r[2])) for r in source]
    return [
        (str(g.get("subject")), str(g.get("relation")), str(g.get("object")))
        for g in source
    ]


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
    born = system_from(grain)
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
            ax.scatter(
                [_days(e.at) for e in chosen],
                [e.effective_confidence for e in chosen],
                marker=marker,
                color=colour,
                zorder=3,
                label=f"{kind} evidence",
            )
    before = "accumulating"
    for event in log:
        if event.status != before:
            ax.annotate(
                event.status,
                (_days(event.at), event.effective_confidence),
                textcoords="offset points",
                xytext=(4, 6),
                fontsize=8,
            )
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
    alt = [
        f"Effective confidence of '{said}' over {len(log)} evidence events, "
        f"starting at {start:.2f}."
    ]
    alt += [
        f"{_day(e.at)}: {e.kind} ({e.strength:g}) -> {e.effective_confidence:.2f}, {e.status}."
        for e in log[:40]
    ]
    return Chart(figure, "\n".join(alt))
