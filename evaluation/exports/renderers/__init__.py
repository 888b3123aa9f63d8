"""Exports for researchers: tables (CSV, Markdown, LaTeX, JSON) and plots (PNG, SVG)."""

from evaluation.exports.renderers.tables import FORMATS, render
from evaluation.table import Table

__all__ = ["FORMATS", "Table", "render"]
