"""InterFeedback-Bench runs: an LMM in the annotator's seat. A run's sessions and rounds are ordinary Session and
Round rows (annotator empty, ``bench_run`` set), so they share verification and exports with human sessions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models.core import Batch, ModelConfig, Task


class BenchRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Feedback(models.TextChoices):
        DETAIL = "detail", "Detailed feedback from the provider model"
        SIMPLE = "simple", "Simple feedback: 'your answer is incorrect'"
        HUMAN = "human", "A person's feedback from a human session, replayed"

    class Protocol(models.TextChoices):
        INTERFEEDBACK = "interfeedback", "InterFeedback-Bench: receivers corrected by feedback providers"
        FIRE_FIXED = "fire_fixed", "FIRE fixed dialogues: students and teachers on the recorded history"
        FIRE_FREE = "fire_free", "FIRE free dialogues: a student and a teacher converse"

    protocol = models.CharField(max_length=16, choices=Protocol.choices, default=Protocol.INTERFEEDBACK)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="bench_runs")
    receivers = models.ManyToManyField(ModelConfig, related_name="+")
    providers = models.ManyToManyField(ModelConfig, related_name="+")
    feedback_kinds = models.JSONField(default=list, help_text='["detail", "simple"]')
    max_rounds = models.PositiveSmallIntegerField(default=3)
    provider_sees_ground_truth = models.BooleanField(
        default=False, help_text="Give the provider the ground truth (the paper gives it its own right answer only)")
    regenerate_leaks = models.BooleanField(default=True, help_text="Ask the provider once more when its feedback "
                                                                   "states an answer")
    lanes = models.PositiveSmallIntegerField(default=4, help_text="Concurrent workers on the run (per run)")
    # FIRE runs: receivers are the students, providers the teachers.
    n_max = models.PositiveSmallIntegerField(default=5, help_text="FIRE: turns a free dialogue may take")
    threshold = models.PositiveSmallIntegerField(default=8, help_text="FIRE: a teacher score that ends a dialogue")
    baseline = models.CharField(max_length=64, blank=True, help_text="FIRE: the student whose AT is 1 in Table 4")
    ignored_ids = models.JSONField(
        default=list, blank=True,
        help_text="FIRE: conversation ids its tables leave out (FIRE's official analysis skips data/ignore_ids.json)")
    human_session = models.ForeignKey(
        "annotate.Session", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Replay this human session's feedback to the receivers (does a person's feedback transfer?)")
    model_order = models.JSONField(
        default=dict, blank=True,
        help_text='{"receivers": [ids], "providers": [ids]} in the order the run was given: its tables\' order')
    prompts = models.JSONField(default=dict, help_text="The provider's and receiver's prompt templates, as used")
    answers_key = models.CharField(max_length=64, help_text="Generation settings hash the round-0 answers share")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    message = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"bench run {self.pk} on {self.batch.name}"


class BenchAnswer(models.Model):
    """A model's round-0 answer to a task, made once per (task, model, generation settings) and reused by every
    (receiver, provider) pair and every later run on the same batch: a receiver's wrong ones are its negative set,
    a provider's right ones its positive set."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="bench_answers")
    model_config = models.ForeignKey(ModelConfig, on_delete=models.CASCADE, related_name="+")
    answers_key = models.CharField(max_length=64)
    answer_text = models.TextField(blank=True)
    extracted_answer = models.CharField(max_length=500, blank=True)
    verdict = models.BooleanField(null=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "model_config", "answers_key"],
                                               name="bench_answer_once")]


class BenchLane(models.Model):
    """One of a run's workers: it owns the tasks whose id falls in its lane, so lanes never share a session. The
    lease keeps a second copy of a lane (a run started twice, a redelivered message) from working beside it."""

    run = models.ForeignKey(BenchRun, on_delete=models.CASCADE, related_name="lane_rows")
    lane = models.PositiveSmallIntegerField()
    lease_token = models.CharField(max_length=64, blank=True)
    leased_until = models.DateTimeField(null=True, blank=True)
    done = models.BooleanField(default=False)
    calls = models.PositiveIntegerField(default=0, help_text="Model calls made by this lane")
    planned = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "lane"], name="bench_lane_once")]


class FireRunTurn(models.Model):
    """One model-written turn of a FIRE run. Fixed dialogues: a student's response or a teacher's score and feedback
    at a turn of a recorded conversation, with the recorded turn as reference. Free dialogues: the turns a student
    and a teacher wrote together."""

    class Role(models.TextChoices):
        STUDENT = "student", "Student"
        TEACHER = "teacher", "Teacher"

    run = models.ForeignKey(BenchRun, on_delete=models.CASCADE, related_name="fire_turns")
    conversation = models.ForeignKey("annotate.Conversation", on_delete=models.CASCADE, related_name="+")
    student = models.ForeignKey(ModelConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    teacher = models.ForeignKey(ModelConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    pair = models.CharField(max_length=32, help_text="'<student id>:<teacher id>' (either may be empty): the key")
    number = models.PositiveSmallIntegerField(help_text="The dialogue's turn (1-based): a response and its feedback")
    role = models.CharField(max_length=8, choices=Role.choices)
    text = models.TextField(blank=True)
    score = models.FloatField(null=True, blank=True, help_text="Teacher: the parsed score (None: unparseable)")
    reference_text = models.TextField(blank=True, help_text="Fixed dialogues: the recorded turn")
    reference_score = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "conversation_id", "number", "role"]
        constraints = [models.UniqueConstraint(fields=["run", "conversation", "pair", "number", "role"],
                                               name="fire_turn_once")]
