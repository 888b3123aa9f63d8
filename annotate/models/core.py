"""People, model configs, batches of tasks and their images, the work queue's items and leases, and long-running
jobs."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


def _new_pseudonym() -> str:
    return "ann-" + secrets.token_hex(4)


def new_serving_seed() -> int:
    """A batch's serving seed when none is given at import (annotate.queue.order)."""
    return secrets.randbelow(2**31)


class User(AbstractUser):
    class Role(models.TextChoices):
        ANNOTATOR = "annotator", _("Annotator")
        RESEARCHER = "researcher", _("Researcher")
        ADMIN = "admin", _("Admin")

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    # Exports and reports name annotators by this, never by username or e-mail.
    pseudonym = models.CharField(max_length=32, unique=True, default=_new_pseudonym)
    # One account per participant id and batch: the same Prolific participant in two studies has two accounts, so
    # a PID typed into another study's link never opens the first (annotate.crowd.services).
    external_id = models.CharField(
        max_length=128, null=True, blank=True, help_text="Crowdsourcing id (e.g. Prolific PID), unique per batch"
    )
    # Crowd participants (invite link / Prolific entry) are served only the batch they joined.
    crowd_batch = models.ForeignKey(
        "Batch", null=True, blank=True, on_delete=models.SET_NULL, related_name="crowd_annotators",
        help_text="Set by an invite link: the queue serves this annotator only this batch",
    )
    invite_link = models.ForeignKey(
        "InviteLink", null=True, blank=True, on_delete=models.SET_NULL, related_name="participants",
        help_text="The invite link this participant first joined through (counted on the invite links page)",
    )
    # The pages' language, chosen in the top bar; blank follows the browser (annotate.i18n applies it).
    language = models.CharField(
        max_length=16, blank=True, default="", choices=settings.LANGUAGES,
        help_text="Language of the pages; blank follows the browser's",
    )
    # Bumped by every reservation of an item for this person, in the reservation's own statement: a next-item
    # request that read another value has lost a race with a request of theirs and starts over (annotate.queue).
    serving_version = models.PositiveIntegerField(default=0, editable=False)

    class Meta(AbstractUser.Meta):
        constraints = [
            models.UniqueConstraint(fields=["external_id", "crowd_batch"], condition=Q(external_id__isnull=False),
                                    name="user_unique_external_id_per_batch"),
        ]

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
    # Prices per million tokens (the API's currency); blank: the cost of this model's rounds is not computed.
    input_price_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    output_price_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # Quotas across all workers (annotate.quotas); empty: no limit.
    max_concurrent_requests = models.PositiveIntegerField(null=True, blank=True,
                                                          help_text="Calls to the model at once, all workers")
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True, help_text="Calls started per minute")
    tokens_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="Prompt + completion tokens per minute (the server's usage)")
    is_active = models.BooleanField(default=True)
    # Health (annotate.modelconfigs.health): the latest periodic probe, and the circuit breaker.
    probed_at = models.DateTimeField(null=True, blank=True, help_text="When the latest health probe ended")
    probe_latency_ms = models.PositiveIntegerField(null=True, blank=True, help_text="The latest probe's latency")
    probe_error = models.TextField(blank=True, help_text="The latest probe's error (empty: it answered)")
    unavailable_since = models.DateTimeField(
        null=True, blank=True,
        help_text="Set when rounds failed in a row: its rounds fail at once until a probe answers again",
    )
    unavailable_reason = models.TextField(blank=True)
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
    # Empty (annotators_named off): every annotator account named on no other open batch is served the batch (with
    # open_to_all_annotators: every annotator account). Invited participants (invite links) are served the batch
    # they joined either way.
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="annotator_batches",
        help_text="Annotators served this batch; none named: everyone with the annotator role",
    )
    annotators_named = models.BooleanField(
        default=False, help_text="Only the named annotators are served the batch (kept by the import's settings)",
    )
    open_to_all_annotators = models.BooleanField(
        default=False,
        help_text="Served to every annotator account, also the people of other batches (off: an annotator named on "
                  "another open batch is served only the batches naming them)",
    )
    overlap = models.PositiveSmallIntegerField(default=1, help_text="Annotators per (task, model): K")
    max_rounds = models.PositiveSmallIntegerField(default=3)
    prompt_templates = models.JSONField(default=dict, blank=True)
    gold_rate = models.FloatField(default=0.0)
    allow_same_task_back_to_back = models.BooleanField(default=False)
    instructions = models.TextField(
        blank=True, help_text="Markdown shown to annotators at the top of every item and on the batch's start page",
    )
    reasons_required = models.BooleanField(
        default=True,
        help_text="Preference batches: a final save needs a reason for every candidate (off: reasons are optional)",
    )
    allow_repeat_tasks = models.BooleanField(
        default=False,
        help_text="Serve a task again to an annotator (with another model) if they have not seen its answer yet",
    )
    category_order = models.JSONField(
        default=list, blank=True,
        help_text="Category names in the order of the report's columns (Tables 3-4, Fig. 5); "
                  "categories not listed follow in the order they first appear",
    )
    task_count = models.PositiveIntegerField(default=0)
    import_report = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Shown on the completion page to invited participants who have no items left (never put in the invite link).
    completion_code = models.CharField(max_length=64, blank=True)
    budget = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True,
        help_text="Model spending limit (prices of the models); once reached, no new session starts",
    )
    budget_reached = models.BooleanField(default=False, help_text="Set when the spent cost reaches the budget")
    items_per_participant = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Invited participants (invite links) get at most this many items, then the completion code; "
                  "empty: as many as the batch has for them",
    )
    skips_count_toward_share = models.BooleanField(
        default=False, help_text="A participant's skipped items count toward their share (at most max_counted_skips)",
    )
    max_counted_skips = models.PositiveSmallIntegerField(
        default=1, help_text="With skips_count_toward_share: how many of a participant's skips count at most",
    )
    # The serving order (annotate.queue.order): pairs interleaved per task and each annotator's models in turn,
    # drawn from this seed, so a study can be run again in the same order and described in a paper.
    serving_seed = models.PositiveIntegerField(
        default=new_serving_seed, help_text="Seed of the order tasks and models are served in (set at import)",
    )
    serving_models = models.JSONField(
        default=list, blank=True, help_text="The models' ids in the turn annotators are served them (from the seed)",
    )
    annotators_started = models.PositiveIntegerField(
        default=0, help_text="How many annotators have started on the batch (the n-th starts at model n mod M)",
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
    # An attention check: the pair of a gold task. Served only where a person's check plan puts one, to any number
    # of people (never twice to one), outside the overlap; kept on the item so the queue's walks need no join.
    is_check = models.BooleanField(default=False)

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
            # A batch's attention checks, few among many items: found without walking the ordinary ones.
            models.Index(fields=["batch", "id"], condition=Q(is_check=True), name="work_item_checks"),
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
    position = models.PositiveIntegerField(
        default=0, help_text="The item's place in its annotator's sequence of the batch (1: their first)",
    )

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
