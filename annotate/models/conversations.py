"""FIRE conversation rating (and MM-RLHF-style preference rating): conversations, turns, ratings, rankings."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotate.models.core import Batch, ImageBlob


def _score_range(field: str) -> Q:
    return Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gte": 1, f"{field}__lte": 5})


class Conversation(models.Model):
    """An imported FIRE student–teacher conversation (or, in a preference batch, a question with candidates)."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="conversations")
    external_id = models.CharField(max_length=200)
    position = models.PositiveIntegerField(default=0, help_text="Order in the imported file")
    image = models.ForeignKey(ImageBlob, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    image_name = models.CharField(max_length=500, blank=True, help_text="The image path as given in the file")
    question = models.TextField()
    ground_truth = models.TextField(blank=True)
    source = models.CharField(max_length=200, blank=True)
    split = models.CharField(max_length=100, blank=True)
    round = models.PositiveSmallIntegerField(null=True, blank=True, help_text="FIRE's `round` field")
    original_scores = models.JSONField(default=list, blank=True, help_text="FIRE's `score` field (teacher scores)")
    metadata = models.JSONField(default=dict, blank=True, help_text="Fields of the record not mapped above")
    content_hash = models.CharField(max_length=64, blank=True, help_text="Re-imports compare against it")

    class Meta:
        ordering = ["batch_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "external_id"], name="conversation_unique_external_id")
        ]
        indexes = [
            models.Index(fields=["batch", "split"], name="conversation_by_split"),
            models.Index(fields=["batch", "source"], name="conversation_by_source"),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id}:{self.external_id}"


class Turn(models.Model):
    class Role(models.TextChoices):
        STUDENT = "student", "Student"
        TEACHER = "teacher", "Teacher"
        MODEL = "model", "Model (preference candidate)"

    class Kind(models.TextChoices):
        RESPONSE = "response", "Response"
        FEEDBACK = "feedback", "Feedback"
        CANDIDATE = "candidate", "Candidate response"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()
    role = models.CharField(max_length=8, choices=Role.choices)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    text = models.TextField()
    # FIRE: every teacher feedback and every student response after the first; preference: every candidate.
    is_rateable = models.BooleanField(default=False)

    class Meta:
        ordering = ["conversation_id", "index"]
        constraints = [models.UniqueConstraint(fields=["conversation", "index"], name="turn_unique_index")]


class Rating(models.Model):
    """One annotator's rating of one turn. Drafts (autosaved) have ``is_final`` off and may lack a score.

    FIRE uses ``score`` (1–5) and ``comment``; preference batches use helpfulness / faithfulness / ethics (1–5)
    with ``comment`` as the reason.
    """

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="ratings")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="turn_ratings")
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    comment = models.TextField(blank=True)
    helpfulness = models.PositiveSmallIntegerField(null=True, blank=True)
    faithfulness = models.PositiveSmallIntegerField(null=True, blank=True)
    ethics = models.PositiveSmallIntegerField(null=True, blank=True)
    is_final = models.BooleanField(default=False)
    client_request_id = models.CharField(max_length=64, blank=True, help_text="Of the final submit")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["turn", "annotator"], name="rating_once_per_annotator"),
            models.CheckConstraint(condition=_score_range("score"), name="rating_score_1_5"),
            models.CheckConstraint(condition=_score_range("helpfulness"), name="rating_helpfulness_1_5"),
            models.CheckConstraint(condition=_score_range("faithfulness"), name="rating_faithfulness_1_5"),
            models.CheckConstraint(condition=_score_range("ethics"), name="rating_ethics_1_5"),
        ]
        indexes = [models.Index(fields=["annotator", "is_final"], name="rating_by_annotator")]


class Ranking(models.Model):
    """Preference batches: an annotator's ranking of a conversation's candidates, ties allowed (``1>2=3``)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="rankings")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="rankings")
    ranking = models.CharField(max_length=200, blank=True)
    is_final = models.BooleanField(default=False)
    client_request_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "annotator"], name="ranking_once_per_annotator")
        ]
