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

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyoxigraph as ox

from ..codec.grain import Grain, system_from
from ..errors import NotFoundError
from ..rdf.tables import python_value
from ..store import COMMON_PREFIXES, PREFIXES
from ..store.lookup import kept_past_until
from ..times import moment, to_millis
from .chart import Chart, short
from .chart import figure as new_figure
from .graph import entity_graph

if TYPE_CHECKING:
    from ..store import GrainStore

__all__ = ["Chart", "confidence", "entity_graph", "timeline"]

# Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito).
_KINDS = {
    "current": ("#009E73", None),
    "superseded": ("#0072B2", "//"),
    "retracted": ("#D55E00", "xx"),
    "past (kept after supersession)": ("#56B4E9", ".."),
}


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
        kind = state.kind
        yield _Region(
            grain, kind, (valid_from, valid_to), (known_from, state.system_to)
        )
        kept = kept_past_until(store.backend, grain.address)
        if kept is not None and state.voided_at is None:
            # After a supersession the old version still describes the past, up to
            # its successor's valid_from (design §5).
            end = kept if valid_to is None else min(valid_to, kept)
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
    prefixes: Mapping[str, str] | None = None,
) -> Chart:
    """Draw every version of one subject and relation: valid time against system time.

    Each version is a box: known from its system time (vertical axis) and said to
    be true over its valid interval (horizontal). Current, superseded and retracted
    versions are told apart by colour and hatching, and after a supersession the
    old version's account of the past is drawn as well. The axes fit the data and
    now; an open-ended interval runs to the edge, marked with an arrow. The title
    writes IRIs ``prefix:local``, with ``prefixes`` (by default the common
    vocabularies' and the store's own, ``entity:`` and ``rel:``).

    Raises:
        NotFoundError: ERR_NOT_FOUND when the store holds no such belief.
    """
    grains = _versions(store, subject, relation, namespace)
    now_ms = store.clock() if now is None else to_millis(now)
    regions = list(_regions(store, grains))
    edges = [t for r in regions for t in (*r.valid, *r.known) if t is not None]
    low, high = min(edges), max([*edges, now_ms])
    frame = _Frame(low, high, max((high - low) * 0.06, 86_400_000))
    figure = new_figure(9, 5)
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
    known = dict(prefixes or {})  # the caller's first: they win a tie
    for name, iri in _own_prefixes(store).items():
        if name not in known and iri not in known.values():
            known[name] = iri
    n = len(grains)
    ax.set_title(
        f"{_compact(subject, known)} {_compact(relation, known)}: "
        f"{n} version{'' if n == 1 else 's'}"
    )
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
        """Where both axes begin (not before the first day matplotlib dates)."""
        return max(self.low - self.margin, _FIRST_DAY_MS)

    @property
    def edge(self) -> float:
        """Where both axes end, and open-ended intervals with them (not after the
        last day matplotlib dates: 9999-12-31 is a common "no end")."""
        return min(self.high + self.margin, _LAST_DAY_MS)


# The days matplotlib can date: 0001-01-01 to 9999-12-31, in epoch ms.
_FIRST_DAY_MS, _LAST_DAY_MS = -62_135_596_800_000, 253_402_214_400_000


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
            short(str(region.grain.get("object")), 28),
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
        f"Timeline of {subject} {relation}: {versions} "
        f"version{'s' if versions != 1 else ''}, "
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


# The vocabularies a title shortens without being told.
TITLE_PREFIXES = {**PREFIXES, **COMMON_PREFIXES}


def _own_prefixes(store: GrainStore) -> dict[str, str]:
    base = store.settings.base_iri
    return {
        "schemas": "https://schema.org/",
        **TITLE_PREFIXES,
        "entity": f"{base}entity/",
        "rel": f"{base}rel/",
    }


def _compact(text: str, prefixes: Mapping[str, str]) -> str:
    """An IRI as ``prefix:local`` (the longest namespace that fits); other text as is."""
    try:
        term = ox.NamedNode(text)
    except ValueError:
        return text
    if ":" not in text:
        return text
    shortened = python_value(term, prefixes)
    return shortened if isinstance(shortened, str) else text


# --- earned confidence --------------------------------------------------------------


def confidence(store: GrainStore, address: str | Grain) -> Chart:
    """Draw a belief's effective confidence over its evidence events.

    A step line starts at the confidence the grain was stored with; each event is a
    marker (up for supporting, down for refuting) at the confidence it left, and
    the test's promotion or demotion is named where it happened.
    """
    grain = store.get(store.resolve(address))
    log = store.evidence_log(grain)
    start = grain.get("confidence", 0.0)  # absent: 0, as the store reads it (§2.1)
    born = system_from(grain)
    times = [_days(born)] + [_days(e.at) for e in log]
    values = [start] + [e.effective_confidence for e in log]
    figure = new_figure(8, 4)
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
    ax.set_title(short(said, 70))
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
