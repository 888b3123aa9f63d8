"""The dashboard's progress plot, drawn as an inline SVG polyline (the page redraws it from each pushed snapshot
with the same arithmetic in static/js/dashboard.js): no plotting library on a page that refreshes every few
seconds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from annotate.watch.selectors import Dashboard

WIDTH, HEIGHT, PAD = 480, 160, 6


def progress_points(cumulative: list[int], needed: int) -> str:
    """SVG polyline points: hours left to right, completions bottom to top (the top is everything needed)."""
    top = max(needed, max(cumulative, default=0), 1)
    step = (WIDTH - 2 * PAD) / max(len(cumulative) - 1, 1)
    return " ".join(f"{PAD + i * step:.1f},{HEIGHT - PAD - (HEIGHT - 2 * PAD) * value / top:.1f}"
                    for i, value in enumerate(cumulative))


def progress_svg(snapshot: Dashboard) -> dict[str, int | str]:
    return {"width": WIDTH, "height": HEIGHT, "points": progress_points(snapshot["cumulative"],
                                                                         snapshot["totals"]["needed"])}
