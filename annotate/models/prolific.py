"""A batch's study on Prolific run through Prolific's API (annotate.prolific): the study, the submissions Prolific
lists for it, every call made to Prolific (the audit trail), and the decisions and bonuses sent (each a row written
before the call, so a retry after a crash asks Prolific before sending again). The API token is never stored."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProlificStudy(models.Model):
    """The Prolific study made for a batch (one per batch), as Prolific last reported it."""

    batch = models.OneToOneField("Batch", on_delete=models.CASCADE, related_name="prolific_study")
    prolific_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=32, help_text="Prolific's status: UNPUBLISHED, ACTIVE, PAUSED, COMPLETED…")
    name = models.CharField(max_length=255)
    internal_name = models.CharField(max_length=255, blank=True)
    estimated_minutes = models.PositiveIntegerField()
    reward_cents = models.PositiveIntegerField(help_text="Per participant, in the workspace's currency's cents")
    places = models.PositiveIntegerField()
    external_url = models.URLField(max_length=1000)
    completion_codes = models.JSONField(default=list, help_text="As sent to Prolific: code, code_type, actions")
    total_cost_cents = models.PositiveIntegerField(null=True, blank=True, help_text="Prolific's figure, fees included")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    sync_error = models.CharField(max_length=500, blank=True)

    class Meta:
        verbose_name_plural = "Prolific studies"


class ProlificSubmission(models.Model):
    """One submission Prolific lists for the study, matched to our participant by their Prolific id."""

    study = models.ForeignKey(ProlificStudy, on_delete=models.CASCADE, related_name="submissions")
    submission_id = models.CharField(max_length=64, unique=True)
    participant_id = models.CharField(max_length=64)
    status = models.CharField(max_length=32)
    participation = models.ForeignKey("Participation", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="prolific_submissions")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "id"]
        indexes = [models.Index(fields=["study", "participant_id"], name="prolific_submission_pid")]


class ProlificCall(models.Model):
    """Every call made to Prolific's API: who, when, what was sent, what came back (headers, and so the token,
    are never kept)."""

    batch = models.ForeignKey("Batch", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=300)
    sent = models.JSONField(null=True, blank=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: no answer came")
    answer = models.JSONField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                           related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]


class ProlificAction(models.Model):
    """A decision or a bonus for one participant, written before it is sent: its key is unique, so the same
    decision or bonus is never sent twice; ``state`` says how far it went."""

    class Kind(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        BONUS = "bonus", "Bonus"

    class State(models.TextChoices):
        PENDING = "pending", "Written, not sent yet"
        SET_UP = "set_up", "Bonus set up on Prolific, not paid yet"
        SENDING = "sending", "Sent; Prolific's answer not recorded yet"
        DONE = "done", "Done on Prolific"
        FAILED = "failed", "Prolific refused it"

    batch = models.ForeignKey("Batch", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=160, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    participant_id = models.CharField(max_length=64)
    submission_id = models.CharField(max_length=64, blank=True)
    amount = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    rejection_category = models.CharField(max_length=32, blank=True)
    message = models.TextField(blank=True)
    bulk_id = models.CharField(max_length=64, blank=True, help_text="Prolific's bulk bonus payment id")
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    error = models.CharField(max_length=500, blank=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                           related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True, help_text="When it was last sent to Prolific")
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "created_at", "id"]
