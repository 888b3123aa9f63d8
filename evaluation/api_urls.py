"""Researcher API routes (mounted under /api/)."""

urlpatterns: list = []
