"""Exports for researchers: tables (CSV, Markdown, LaTeX, JSON) and plots (PNG, SVG)."""

from evaluation.exporters.tables import FORMATS, Table, render

__all__ = ["FORMATS", "Table", "render"]
