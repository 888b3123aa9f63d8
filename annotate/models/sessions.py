"""InterFeedback-Human sessions and their rounds, the leak warnings shown while typing, verdict overrides."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from annotate.models.core import Assignment, Batch, ModelConfig, Task


class Session(models.Model):
    """One InterFeedback-Human session: task × model × annotator, rounds 0..max_rounds."""

    class Status(models.TextChoices):
        GENERATING = "generating", _("Model is answering")
        AWAITING_FEEDBACK = "awaiting_feedback", _("Waiting for feedback")
        AWAITING_VERDICT = "awaiting_verdict", _("Waiting for the annotator's verdict")
        FAILED = "failed", _("Model call failed")
        COMPLETED = "completed", _("Completed")
        ABANDONED = "abandoned", _("Abandoned")

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="sessions")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    model_config = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="sessions")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotation_sessions", null=True
    )
    bench_run = models.ForeignKey("annotate.BenchRun", null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="sessions", help_text="Set on an InterFeedback-Bench session")
    feedback_provider = models.ForeignKey(ModelConfig, null=True, blank=True, on_delete=models.PROTECT,
                                          related_name="+", help_text="Bench: the model giving detailed feedback")
    feedback_kind = models.CharField(max_length=16, blank=True, help_text="Bench: detail or simple")
    assignment = models.OneToOneField(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="session"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.GENERATING)
    corrected_round = models.PositiveSmallIntegerField(null=True, blank=True)
    feedback_draft = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    revealed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the ground truth was shown to the annotator (before the last round)"
    )

    @property
    def status_for_annotator(self) -> str:
        """The status in the annotator's words: an abandoned session says whether it was skipped or ran out of time
        (load `assignment` with the session to spare a query)."""
        if self.status != self.Status.ABANDONED:
            return self.get_status_display()
        skipped = self.assignment is not None and self.assignment.status == Assignment.Status.SKIPPED
        return _("Skipped") if skipped else _("Expired (left unfinished)")

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["batch", "status"], name="session_by_batch_status"),
            models.Index(fields=["annotator", "status"], name="session_by_annotator"),
        ]
        constraints = [
            # A bench run makes one session per (receiver, provider, feedback kind, task): a restart adds none.
            models.UniqueConstraint(fields=["bench_run", "model_config", "feedback_provider", "feedback_kind", "task"],
                                    condition=Q(bench_run__isnull=False), name="bench_session_once"),
        ]

    @property
    def is_finished(self) -> bool:
        return self.status == self.Status.COMPLETED


class Round(models.Model):
    class FeedbackKind(models.TextChoices):
        HUMAN = "human", "Human"
        LMM_DETAIL = "lmm_detail", "LMM (detailed)"
        LMM_SIMPLE = "lmm_simple", "LMM (simple)"
        GROUND_TRUTH = "ground_truth", "Human + ground truth"

    class Generation(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class VerdictSource(models.TextChoices):
        AUTO = "auto", "Automatic"
        ANNOTATOR = "annotator", "Annotator"
        REVIEWER = "reviewer", "Reviewer"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="rounds")
    index = models.PositiveSmallIntegerField()
    feedback_text = models.TextField(blank=True, help_text="What the annotator typed")
    feedback_kind = models.CharField(max_length=16, choices=FeedbackKind.choices, blank=True)
    feedback_to_model = models.TextField(blank=True, help_text="What the model received (adds the GT in round 3)")
    leak_flagged = models.BooleanField(default=False, help_text="The feedback states an answer (warned, sent anyway)")
    stated_answer = models.CharField(max_length=200, blank=True, help_text="What the leak check detected")
    stated_answer_correct = models.BooleanField(
        null=True, help_text="Server-side only: was the stated answer right? Never shown to the annotator"
    )
    client_request_id = models.CharField(max_length=64, blank=True)
    typing_ms = models.PositiveIntegerField(null=True, blank=True)

    generation_status = models.CharField(max_length=8, choices=Generation.choices, default=Generation.QUEUED)
    claim_token = models.CharField(max_length=64, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last partial save by the worker")
    stream_seq = models.PositiveIntegerField(default=0, help_text="Sequence number of the last saved chunk")
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    answer_text = models.TextField(blank=True)
    extracted_answer = models.CharField(max_length=500, blank=True)
    auto_verdict = models.BooleanField(null=True)
    final_verdict = models.BooleanField(null=True)
    verdict_source = models.CharField(max_length=10, choices=VerdictSource.choices, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    first_token_ms = models.PositiveIntegerField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session_id", "index"]
        indexes = [
            # The stalled-round reaper looks for running rounds with an old heartbeat every few seconds.
            models.Index(fields=["heartbeat_at"], condition=Q(generation_status="running"),
                         name="round_running_heartbeat"),
            # ... and for queued rounds no worker took (rounds_requeue_lost): only the few waiting are indexed.
            models.Index(fields=["created_at"], condition=Q(generation_status="queued"), name="round_queued_created"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="round_unique_index"),
            models.UniqueConstraint(
                fields=["session", "client_request_id"],
                condition=~Q(client_request_id=""),
                name="round_unique_client_request",
            ),
        ]


class LeakWarning(models.Model):
    """One "your feedback states an answer" warning shown to an annotator (sent or not), for the quality page.
    Whether the stated answer was right is recorded here and never sent to the annotator."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="leak_warnings")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    round_index = models.PositiveSmallIntegerField()
    stated_answer = models.CharField(max_length=200)
    stated_answer_correct = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["annotator", "session"], name="leak_warning_by_annotator")]


class RoundFailure(models.Model):
    """A round that failed (a model error, a worker that stopped, a model queue out of reach), kept when the round
    is retried: the dashboard counts failed model calls over time from these."""

    class Cause(models.TextChoices):
        MODEL = "model", "The model call failed"
        WORKER_STOPPED = "worker_stopped", "The worker stopped"
        QUEUE_UNREACHABLE = "queue_unreachable", "The model queue could not be reached"

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="failures")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="+")
    model_config = models.ForeignKey(ModelConfig, on_delete=models.CASCADE, related_name="+")
    cause = models.CharField(max_length=20, choices=Cause.choices, default=Cause.MODEL)
    failed_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["batch", "failed_at"], name="round_failure_by_batch")]


class VerdictOverride(models.Model):
    """Audit trail of a reviewer changing a round's verdict."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="overrides")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    old_verdict = models.BooleanField(null=True)
    new_verdict = models.BooleanField()
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
