"""What the pictures share: a figure with its alt text, and a few helpers."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["RELATION_COLOURS", "Chart", "by_count", "figure", "short"]

# Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito).
RELATION_COLOURS = (
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
        _as_written(self.figure).savefig(
            out, format="png", dpi=110, bbox_inches="tight"
        )
        return out.getvalue()

    def save(self, path: str, **options: Any) -> None:
        """Save the figure (format from the file name, as matplotlib's ``savefig``)."""
        _as_written(self.figure).savefig(path, bbox_inches="tight", **options)

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


def _as_written(drawn: Figure) -> Figure:
    """The figure with every text drawn as it is: a belief's "$5 to $10" is no
    formula for matplotlib to typeset (and "$\\frac{$" would not draw at all)."""
    from matplotlib.text import Text

    for text in drawn.findobj(Text):
        text.set_parse_math(False)
    return drawn


def figure(width: float, height: float) -> Figure:
    """A figure without pyplot, laid out to fit its labels."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def short(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, with an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def by_count(values: Iterable[str]) -> list[tuple[str, int]]:
    """Each value and how often it comes, the commonest first."""
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
