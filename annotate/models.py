"""Data model of SPEC §2: batches of tasks, model configs, InterFeedback sessions and rounds, the work queue
and long-running jobs. Fields, constraints and trivial properties only: writes live in services/."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q


def _new_pseudonym() -> str:
    return "ann-" + secrets.token_hex(4)


class User(AbstractUser):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "Annotator"
        RESEARCHER = "researcher", "Researcher"
        ADMIN = "admin", "Admin"

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    # Exports and reports name annotators by this, never by username or e-mail.
    pseudonym = models.CharField(max_length=32, unique=True, default=_new_pseudonym)
    external_id = models.CharField(
        max_length=128, null=True, blank=True, unique=True, help_text="Crowdsourcing id (e.g. Prolific PID)"
    )
    # Crowd participants (invite link / Prolific entry) are served only the batch they joined.
    crowd_batch = models.ForeignKey(
        "Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="crowd_annotators",
        help_text="Set by an invite link: the queue serves this annotator only this batch",
    )

    @property
    def is_admin_role(self) -> bool:
        return self.is_superuser or self.role == self.Role.ADMIN

    @property
    def is_researcher_role(self) -> bool:
        return self.is_admin_role or self.role == self.Role.RESEARCHER


class ModelConfig(models.Model):
    class Backend(models.TextChoices):
        SIMULATED = "simulated", "Simulated (offline demo student)"
        REPLAY = "replay", "Replay recorded answers"
        TRANSFORMERS = "transformers", "transformers (local checkpoint)"
        OPENAI = "openai", "OpenAI-compatible server"

    name = models.SlugField(max_length=64, unique=True, help_text="Short id used in queues, exports and tables")
    display_name = models.CharField(max_length=128, blank=True)
    backend = models.CharField(max_length=16, choices=Backend.choices)
    backend_settings = models.JSONField(
        default=dict, blank=True, help_text="path / base_url / model / api_key_env (the NAME of an env var)"
    )
    generation = models.JSONField(default=dict, blank=True, help_text="max_new_tokens, temperature, top_p, seed")
    queue = models.CharField(max_length=64, blank=True, help_text="Celery queue; blank = model.<backend>")
    soft_time_limit = models.PositiveIntegerField(default=300)
    time_limit = models.PositiveIntegerField(default=360)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        base = self.display_name or self.name
        return f"{base} (simulated)" if self.is_simulated and "simulated" not in base.lower() else base

    @property
    def is_simulated(self) -> bool:
        return self.backend == self.Backend.SIMULATED

    @property
    def queue_name(self) -> str:
        return self.queue or f"{settings.MODEL_QUEUE_PREFIX}{self.backend}"


class Batch(models.Model):
    class Kind(models.TextChoices):
        INTERFEEDBACK = "interfeedback", "InterFeedback-Human"
        FIRE = "fire", "FIRE conversation rating"
        PREFERENCE = "preference", "Preference rating (MM-RLHF style)"

    class Status(models.TextChoices):
        IMPORTING = "importing", "Importing"
        READY = "ready", "Ready"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=128, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.INTERFEEDBACK)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.READY)
    description = models.TextField(blank=True)
    models_to_evaluate = models.ManyToManyField(ModelConfig, blank=True, related_name="batches")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="member_batches", help_text="Researchers who may read it"
    )
    overlap = models.PositiveSmallIntegerField(default=1, help_text="Annotators per (task, model): K")
    max_rounds = models.PositiveSmallIntegerField(default=3)
    prompt_templates = models.JSONField(default=dict, blank=True)
    gold_rate = models.FloatField(default=0.0)
    allow_same_task_back_to_back = models.BooleanField(default=False)
    task_count = models.PositiveIntegerField(default=0)
    import_report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Shown on the completion page to invited participants who have no items left (never put in the invite link).
    completion_code = models.CharField(max_length=64, blank=True)
    items_per_participant = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Invited participants (invite links) get at most this many items, then the completion code; "
                  "empty: as many as the batch has for them",
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.name


class ImageBlob(models.Model):
    """An image stored once by content hash, shared by every task that shows it."""

    sha256 = models.CharField(max_length=64, unique=True)
    file = models.FileField(upload_to="images/")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    mime = models.CharField(max_length=32, default="image/png")
    size = models.PositiveIntegerField(default=0)


class Task(models.Model):
    class AnswerType(models.TextChoices):
        CHOICE = "choice", "Multiple choice"
        NUMBER = "number", "Number"
        TEXT = "text", "Text"
        MANUAL = "manual", "Judged by the annotator"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="tasks")
    external_id = models.CharField(max_length=200)
    category = models.CharField(max_length=100, db_index=True)
    question = models.TextField()
    options = models.JSONField(default=list, blank=True)
    answer_type = models.CharField(max_length=8, choices=AnswerType.choices)
    ground_truth = models.TextField()
    source = models.CharField(max_length=200, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    recorded_answers = models.JSONField(default=dict, blank=True)
    is_gold = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=64, blank=True)
    images = models.ManyToManyField(ImageBlob, through="TaskImage", blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["batch", "external_id"], name="task_unique_external_id")]

    def __str__(self) -> str:
        return f"{self.batch_id}:{self.external_id}"


class TaskImage(models.Model):
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="task_images")
    blob = models.ForeignKey(ImageBlob, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["task", "position"], name="task_image_unique_position")]


class WorkItem(models.Model):
    """One unit the queue hands out K times: a (task, model) pair of an InterFeedback batch, or a conversation
    of a FIRE (or preference) batch. Exactly one of ``task`` and ``conversation`` is set."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="work_items")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="work_items", null=True, blank=True)
    conversation = models.ForeignKey(
        "Conversation", on_delete=models.CASCADE, related_name="work_items", null=True, blank=True
    )
    model_config = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="+", null=True)
    completed_count = models.PositiveIntegerField(default=0)
    active_count = models.PositiveIntegerField(default=0)
    pinned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="pinned_items"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["batch", "task", "model_config"], name="work_item_unique_pair"),
            models.UniqueConstraint(
                fields=["conversation"], condition=Q(conversation__isnull=False), name="work_item_unique_conversation"
            ),
            models.CheckConstraint(
                condition=Q(task__isnull=False, conversation__isnull=True)
                | Q(task__isnull=True, conversation__isnull=False),
                name="work_item_task_xor_conversation",
            ),
        ]
        indexes = [
            models.Index(fields=["batch", "completed_count", "active_count"], name="work_item_open"),
            # The next-item query walks this in its ORDER BY and stops at the first free row (no sort of the batch).
            models.Index(fields=["batch", "pinned_to", "-completed_count", "id"], name="work_item_queue"),
        ]


class Assignment(models.Model):
    """An annotator's reservation of a work item, held by a short lease renewed by the page's heartbeat."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        COMPLETED = "completed", "Completed"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"

    work_item = models.ForeignKey(WorkItem, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    lease_expires_at = models.DateTimeField()
    skip_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["work_item", "annotator"], name="assignment_once_per_annotator"),
        ]
        indexes = [
            models.Index(fields=["annotator", "status"], name="assignment_by_annotator"),
            # The annotator's latest assignment (not the same task twice in a row): one index probe.
            models.Index(fields=["annotator", "-created_at"], name="assignment_latest"),
            models.Index(fields=["status", "lease_expires_at"], name="assignment_lease"),
        ]


class Session(models.Model):
    """One InterFeedback-Human session: task × model × annotator, rounds 0..max_rounds."""

    class Status(models.TextChoices):
        GENERATING = "generating", "Model is answering"
        AWAITING_FEEDBACK = "awaiting_feedback", "Waiting for feedback"
        AWAITING_VERDICT = "awaiting_verdict", "Waiting for the annotator's verdict"
        FAILED = "failed", "Model call failed"
        COMPLETED = "completed", "Completed"
        ABANDONED = "abandoned", "Abandoned"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="sessions")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    model_config = models.ForeignKey(ModelConfig, on_delete=models.PROTECT, related_name="sessions")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="annotation_sessions", null=True
    )
    assignment = models.OneToOneField(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="session"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.GENERATING)
    corrected_round = models.PositiveSmallIntegerField(null=True, blank=True)
    feedback_draft = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["batch", "status"], name="session_by_batch_status"),
            models.Index(fields=["annotator", "status"], name="session_by_annotator"),
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
    leak_flagged = models.BooleanField(default=False)
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
        constraints = [
            models.UniqueConstraint(fields=["session", "index"], name="round_unique_index"),
            models.UniqueConstraint(
                fields=["session", "client_request_id"],
                condition=~Q(client_request_id=""),
                name="round_unique_client_request",
            ),
        ]


class VerdictOverride(models.Model):
    """Audit trail of a reviewer changing a round's verdict."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="overrides")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    old_verdict = models.BooleanField(null=True)
    new_verdict = models.BooleanField()
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)


class Job(models.Model):
    """A long operation (import, aggregation, export, benchmark run, model check) with status and progress."""

    class Kind(models.TextChoices):
        IMPORT = "import", "Import"
        AGGREGATE = "aggregate", "Aggregation"
        EXPORT = "export", "Export"
        BENCHMARK = "benchmark", "Benchmark run"
        MODEL_CHECK = "model_check", "Model check"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    params = models.JSONField(default=dict, blank=True)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=300, blank=True)
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    result_file = models.FileField(upload_to="jobs/", blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]


# --- FIRE conversation rating (and MM-RLHF-style preference rating) ----------------------------------------------


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
