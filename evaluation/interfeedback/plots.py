"""Fig. 4 and Fig. 5 of InterFeedback-Human as PNG or SVG bytes.

Built on `matplotlib.figure.Figure` objects, never pyplot: no global figure state, no GUI backend,
safe inside web processes and Celery workers whatever backend is configured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from evaluation.exports.renderers.table_image import figure_bytes
from evaluation.interfeedback.metrics import (
    ROUNDS,
    CountsKey,
    OutcomeCounts,
    categories_of,
    models_of,
    pool,
    pooled_by_model,
)

if TYPE_CHECKING:  # matplotlib is imported when a figure is drawn: commands and pages that draw none skip ~1 s
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FIGURES: tuple[str, ...] = ("fig4", "fig5")
OUTCOME_LABELS: tuple[str, ...] = (*(f"Round {r}" for r in ROUNDS), "Never")


def outcome_shares(counts: OutcomeCounts) -> list[float]:
    """Percent of sessions first corrected in round 0, 1, 2, 3 and never (plotting only, so floats)."""
    if counts.sessions == 0:
        return [0.0] * len(OUTCOME_LABELS)
    return [100.0 * n / counts.sessions for n in (*counts.corrected, counts.never)]


def _grouped_bars(axes: Axes, series: Mapping[str, OutcomeCounts], title: str) -> None:
    """One group per outcome (round 0..3, never), one bar per series (model) inside each group."""
    width = 0.8 / max(len(series), 1)
    for index, (label, counts) in enumerate(series.items()):
        offsets = [x - 0.4 + width * (index + 0.5) for x in range(len(OUTCOME_LABELS))]
        axes.bar(offsets, outcome_shares(counts), width=width, label=f"{label} (n={counts.sessions})")
    axes.set_xticks(range(len(OUTCOME_LABELS)), OUTCOME_LABELS)
    axes.set_ylim(0, 100)
    axes.set_ylabel("Sessions (%)")
    axes.set_title(title)
    axes.grid(axis="y", alpha=0.3)
    axes.set_axisbelow(True)


def corrected_round_by_model_figure(
    counts: Mapping[CountsKey, OutcomeCounts],
    *,
    models: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """Fig. 4: per model, the distribution of the round in which sessions were corrected."""
    by_model = pooled_by_model(counts, categories)
    names = labels or {}
    series = {names.get(model, model): by_model.get(model, OutcomeCounts()) for model in (models or models_of(counts))}
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 4.0), layout="constrained")
    axes = figure.add_subplot()
    _grouped_bars(axes, series, "Round in which sessions were corrected, per model")
    axes.legend(fontsize="small")
    return figure


def corrected_round_by_category_figure(
    counts: Mapping[CountsKey, OutcomeCounts],
    *,
    models: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Figure:
    """Fig. 5: one panel per category, the same per-model distribution inside it."""
    models = list(models or models_of(counts))
    categories = list(categories or categories_of(counts))
    columns = min(3, max(len(categories), 1))
    rows = max(math.ceil(len(categories) / columns), 1)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.2 * columns, 3.4 * rows), layout="constrained")
    for index, category in enumerate(categories):
        axes = figure.add_subplot(rows, columns, index + 1)
        series = {(labels or {}).get(model, model): counts.get((model, category), OutcomeCounts()) for model in models}
        total = pool(series.values()).sessions
        _grouped_bars(axes, series, f"{category} (n={total})")
        axes.tick_params(axis="x", labelsize="small")
        if index == 0:
            axes.legend(fontsize="x-small")
    return figure


_BUILDERS = {"fig4": corrected_round_by_model_figure, "fig5": corrected_round_by_category_figure}


def render_plot(
    figure_name: str,
    counts: Mapping[CountsKey, OutcomeCounts],
    fmt: str,
    *,
    models: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> bytes:
    """`figure_name` is "fig4" (per model) or "fig5" (per category); `fmt` is "png" or "svg". Models are named by
    `labels` (display names) where given; panels follow `categories`' order."""
    try:
        builder = _BUILDERS[figure_name]
    except KeyError:
        raise ValueError(f"unknown figure {figure_name!r}; expected one of {', '.join(FIGURES)}") from None
    if not counts:
        raise ValueError("no sessions to plot")
    return figure_bytes(builder(counts, models=models, categories=categories, labels=labels), fmt)
