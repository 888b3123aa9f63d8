"""What preference batches add to the batch kinds: the batch report's downloads and the study bundle. Their own
tables are the preference report's (evaluation/preference/views.py), downloaded from its page and API."""

from __future__ import annotations

from collections.abc import Iterator

from annotate.models import Batch
from evaluation import kinds
from evaluation.exports.bundle import BundleFile, run_table_files

# The batch report's downloads: those of every batch that is not FIRE's (its own tables are on its preference
# report).
DOWNLOADS = ("accuracy", "correction", "fig4", "fig5", "sessions", "bench", "fire-fixed", "fire-free", "costs")


def bundle_files(batch: Batch, skipped: dict[str, str]) -> Iterator[BundleFile]:
    yield from run_table_files(batch, skipped, noted=("fire-fixed", "fire-free"))
    skipped["tables/preference_*"] = ("the preference tables are downloaded from the batch's preference report "
                                      f"(/research/batches/{batch.id}/preferences/)")


kinds.register(kinds.StudyKind(kind=Batch.Kind.PREFERENCE, downloads=DOWNLOADS, bundle_files=bundle_files))
