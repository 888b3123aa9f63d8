"""Aggregation rows of InterFeedback-Human outcomes, so reports never scan sessions or rounds.

- `CountedSession`: one narrow row per counted session. It is the idempotency marker of `outcome_record`
  (a session is counted once) and remembers the outcome it was counted with, so a later change (a reviewer's
  verdict override) moves the session between counters instead of counting it twice. Its index serves the
  filters counters cannot (date range) and the session browser.
- `OutcomeCounter`: sessions per batch x model x category x outcome; what Table 3/4 and Fig. 4/5 read.
- `AnnotatorOutcomeCounter`: the same per annotator, for the annotator filter and the per-annotator breakdown.
- `BatchAggregate`: one row per batch; its row lock serialises incremental updates against a full recompute.

The first three are derived data, rebuilt by a recompute. Their foreign keys have no database constraint and no
index of their own (Django still cascades deletes; the composite indexes lead with `batch`): on 250k sessions the
per-row constraint checks and three extra indexes would triple the time to rebuild them.

Writes live in evaluation/interfeedback/services.py.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models import Batch, ModelConfig, Session

# Sessions never corrected within the rounds (corrected_round NULL) are stored as -1: a NULL would not take part
# in the unique constraints on every database.
NEVER = -1


def outcome_of(corrected_round: int | None) -> int:
    return NEVER if corrected_round is None else corrected_round


class BatchAggregate(models.Model):
    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, primary_key=True, related_name="aggregate")
    updated_at = models.DateTimeField(null=True, blank=True, help_text="Last change of this batch's counters")
    recomputed_at = models.DateTimeField(null=True, blank=True, help_text="Last full recompute")


def _derived_fk(to, **kwargs):
    return models.ForeignKey(to, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False,
                             **kwargs)


class CountedSession(models.Model):
    session = models.OneToOneField(
        Session, on_delete=models.CASCADE, primary_key=True, related_name="+", db_constraint=False
    )
    batch = _derived_fk(Batch)
    model_config = _derived_fk(ModelConfig)
    category = models.CharField(max_length=100)
    annotator = _derived_fk(settings.AUTH_USER_MODEL, null=True, blank=True)
    corrected_round = models.SmallIntegerField(help_text="0..3, or -1 for never corrected")
    completed_at = models.DateTimeField()

    class Meta:
        indexes = [
            # Date ranges and the session browser (newest first). Kept to two columns on purpose: a covering
            # index would double what a recompute writes, and wide date ranges are read by a scan anyway.
            models.Index(fields=["batch", "completed_at"], name="counted_by_batch_date"),
        ]


class _Counter(models.Model):
    batch = _derived_fk(Batch)
    model_config = _derived_fk(ModelConfig)
    category = models.CharField(max_length=100)
    corrected_round = models.SmallIntegerField(help_text="0..3, or -1 for never corrected")
    count = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class OutcomeCounter(_Counter):
    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "model_config", "category", "corrected_round"], name="outcome_counter_unique"
            )
        ]


class AnnotatorOutcomeCounter(_Counter):
    annotator = _derived_fk(settings.AUTH_USER_MODEL)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["batch", "annotator", "model_config", "category", "corrected_round"],
                name="annotator_counter_unique",
            )
        ]
