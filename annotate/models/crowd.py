"""Crowd studies: invite links, and the life of an invited participant around the items (consent, screening,
questionnaires, time limit and returns, approval and pay). Rules and writes live in annotate.crowd."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class InviteLink(models.Model):
    batch = models.ForeignKey("Batch", on_delete=models.CASCADE, related_name="invite_links")
    label = models.CharField(max_length=128, blank=True, help_text="For the researcher, e.g. 'Prolific pilot'")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invite link {self.pk} of {self.batch_id}" + (f" ({self.label})" if self.label else "")


class CrowdStudy(models.Model):
    """What a batch asks of its invited participants besides the items. No row (or empty fields): nothing more."""

    class BonusRule(models.TextChoices):
        NONE = "none", "No bonus"
        PER_ITEM = "per_item", "Per completed item"
        PER_CORRECTED_SESSION = "per_corrected_session", "Per session the model was corrected in (round 1 or later)"
        FIXED = "fixed", "A fixed amount"

    batch = models.OneToOneField("Batch", on_delete=models.CASCADE, related_name="study")
    consent_text = models.TextField(blank=True, help_text="Markdown a participant accepts before the first item")
    consent_version = models.PositiveIntegerField(default=0, help_text="Counts the consent texts set (ConsentText)")
    no_consent_code = models.CharField(max_length=64, blank=True, help_text="Shown to participants who decline")
    screening = models.JSONField(default=list, blank=True,
                                 help_text="Questions with a known answer and an explanation (annotate.crowd.forms)")
    screening_pass_mark = models.PositiveSmallIntegerField(default=0, help_text="Screening questions to get right")
    screened_out_code = models.CharField(max_length=64, blank=True, help_text="Shown to participants screened out")
    max_attention_failures = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Failed attention checks that end a participation (empty: never)")
    pre_survey = models.JSONField(default=list, blank=True, help_text="Questions before the first item")
    post_survey = models.JSONField(default=list, blank=True, help_text="Questions after the last item")
    time_limit_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="From joining; past it the participation ends and held items are freed")
    bonus_rule = models.CharField(max_length=24, choices=BonusRule.choices, default=BonusRule.NONE)
    bonus_amount = models.DecimalField(max_digits=10, decimal_places=2, default=0)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name_plural = "crowd studies"


class ConsentText(models.Model):
    """Every consent text a batch has shown, kept so that each acceptance names the words accepted."""

    batch = models.ForeignKey("Batch", on_delete=models.CASCADE, related_name="consent_texts")
    version = models.PositiveIntegerField()
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["batch", "version"]
        constraints = [models.UniqueConstraint(fields=["batch", "version"], name="consent_text_unique_version")]


class Participation(models.Model):
    """An invited participant's way through their study: one per participant account (bound to one batch)."""

    class End(models.TextChoices):
        NO_CONSENT = "no_consent", "Declined the consent"
        SCREENED_OUT = "screened_out", "Screened out"
        ATTENTION = "attention", "Failed attention checks"
        RETURNED = "returned", "Returned the study"
        TIMED_OUT = "timed_out", "Past the time limit"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participation")
    batch = models.ForeignKey("Batch", on_delete=models.CASCADE, related_name="participations")
    started_at = models.DateTimeField(default=timezone.now)
    consent_version = models.PositiveIntegerField(null=True, blank=True, help_text="The consent text accepted")
    consented_at = models.DateTimeField(null=True, blank=True)
    screening_passed = models.BooleanField(null=True, blank=True)
    screening_score = models.PositiveSmallIntegerField(null=True, blank=True)
    screened_at = models.DateTimeField(null=True, blank=True)
    pre_survey_at = models.DateTimeField(null=True, blank=True)
    post_survey_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True, help_text="When the completion code was first shown")
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=16, choices=End.choices, blank=True)
    ended_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+", help_text="A researcher who marked the return (else nobody)")

    class Meta:
        ordering = ["started_at", "id"]
        indexes = [models.Index(fields=["batch", "ended_at", "finished_at"], name="participation_open")]


class ScreeningAnswer(models.Model):
    """One try at a screening question: two per question at most (Prolific's comprehension-check rule)."""

    participation = models.ForeignKey(Participation, on_delete=models.CASCADE, related_name="screening_answers")
    question = models.CharField(max_length=64)
    attempt = models.PositiveSmallIntegerField()
    answer = models.CharField(max_length=200)
    correct = models.BooleanField()
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["participation", "answered_at", "id"]
        constraints = [models.UniqueConstraint(fields=["participation", "question", "attempt"],
                                               name="screening_answer_once_per_attempt")]


class SurveyResponse(models.Model):
    class Phase(models.TextChoices):
        PRE = "pre", "Before the items"
        POST = "post", "After the items"

    participation = models.ForeignKey(Participation, on_delete=models.CASCADE, related_name="survey_responses")
    phase = models.CharField(max_length=4, choices=Phase.choices)
    answers = models.JSONField(default=dict)
    submitted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["participation", "phase"], name="survey_answered_once")]


class ParticipantDecision(models.Model):
    """A researcher's approve or reject of a participant, with the reason. Never changed: a new decision is a new
    row, the latest one counts, the earlier ones are the audit trail."""

    class Decision(models.TextChoices):
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"

    participation = models.ForeignKey(Participation, on_delete=models.CASCADE, related_name="decisions")
    decision = models.CharField(max_length=8, choices=Decision.choices)
    reason = models.CharField(max_length=500, blank=True)
    suggested = models.CharField(max_length=8, blank=True, help_text="The app's suggestion when it was decided")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["participation", "-decided_at", "-id"]
