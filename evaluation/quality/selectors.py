"""Per-annotator quality of an InterFeedback batch, for researchers: speed, leaks, skips, verdicts, gold accuracy.

A fixed number of queries whatever the batch size (aggregates grouped by annotator, plus two narrow row lists
folded in Python: typing times for the medians, and the gold rounds). Definitions:

- *typing time*: ``Round.typing_ms`` of feedback rounds (index ≥ 1), as measured by the session page.
- *fast round*: feedback typed in less than ``FAST_ROUND_MS`` (3 s).
- *fast session*: a session whose total typing time is under ``FAST_SESSION_FRACTION`` (¼) of the batch median
  of the same (sessions without typed feedback — e.g. right at round 0 — are not timed).
- *leak warnings*: "your feedback states an answer" warnings shown to the annotator (`LeakWarning`, one per refused
  submit, rounds before the last); *sent anyway*: rounds sent after such a warning (``Round.leak_flagged``);
  *stated right*: warnings whose stated answer was the right one (never shown to the annotator; researchers only).
- *manual verdicts*: rounds the annotator judged (``manual`` tasks), including those a reviewer overrode later.
- *gold accuracy*: on gold tasks (``Task.is_gold``), the share of scored gold rounds where the annotator did what
  the check expects: on a ``manual`` gold task with ``metadata["gold_check_type"]`` (``choice``, ``number``,
  ``text``), their verdict agrees with ``annotate.sessions.verification.verify(gold_check_type, model answer, ground
  truth, options)`` (the verdict they gave, even when a reviewer overrode it later); on an automatically checked
  gold task with ``metadata["gold_feedback_terms"]``, their first feedback names one of the terms. Gold rounds
  without such meta are counted as *unscored* (annotate.crowd.attention).
- *attention checks*: gold sessions with a scored round; *failed* when a scored round of it disagrees. An
  annotator with as many failures as the batch's ``max_attention_failures`` (else Prolific's two) is flagged.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import Count, Q

from annotate.crowd.attention import PROLIFIC_FAILURES_TO_REJECT, attention_checks
from annotate.models import Assignment, Batch, CrowdStudy, LeakWarning, Round, Session, User, VerdictOverride

FAST_ROUND_MS = 3000
FAST_SESSION_FRACTION = 0.25
LOW_GOLD_ACCURACY = 0.7  # flag annotators below this with at least MIN_GOLD_FOR_FLAG scored gold rounds
MIN_GOLD_FOR_FLAG = 3
SKIP_REASONS_SHOWN = 5


@dataclass
class AnnotatorQuality:
    annotator_id: int
    pseudonym: str = ""
    sessions: int = 0
    sessions_completed: int = 0
    gold_sessions: int = 0
    typed_rounds: int = 0
    median_typing_ms: int | None = None
    fast_rounds: int = 0
    fast_sessions: int = 0
    leak_warnings: int = 0  # warnings shown
    leaks_sent: int = 0  # warnings overridden: the feedback was sent anyway
    leaks_stated_right: int = 0  # warnings whose stated answer was right (researchers only)
    skips: int = 0
    skip_reasons: list[tuple[str, int]] = field(default_factory=list)
    manual_verdicts: int = 0
    gold_judged: int = 0
    gold_agreed: int = 0
    gold_unscored: int = 0
    overrides_received: int = 0
    attention_checks: int = 0  # gold sessions with a scored verdict (annotate.crowd.attention)
    attention_failed: int = 0
    attention_limit: int = PROLIFIC_FAILURES_TO_REJECT  # this many failures flag the annotator

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_agreed / self.gold_judged if self.gold_judged else None

    @property
    def speed_flags(self) -> int:
        return self.fast_rounds + self.fast_sessions

    @property
    def flagged(self) -> bool:
        low_gold = self.gold_judged >= MIN_GOLD_FOR_FLAG and (self.gold_accuracy or 0) < LOW_GOLD_ACCURACY
        return bool(self.speed_flags or self.leaks_sent or low_gold or self.attention_failed >= self.attention_limit)


@dataclass
class BatchQuality:
    batch: Batch
    annotators: list[AnnotatorQuality]
    median_typing_ms: int | None  # over all typed feedback rounds of the batch
    median_session_typing_ms: int | None  # over sessions with typed feedback
    fast_session_ms: int | None  # sessions typed faster than this are flagged


def _median(values: list[int]) -> int | None:
    return round(statistics.median(values)) if values else None


def batch_quality(batch: Batch) -> BatchQuality:
    rows: dict[int, AnnotatorQuality] = {}

    def row(annotator_id: int) -> AnnotatorQuality:
        return rows.setdefault(annotator_id, AnnotatorQuality(annotator_id=annotator_id))

    sessions = (
        Session.objects.filter(batch=batch, annotator__isnull=False)
        .values("annotator_id")
        .annotate(
            total=Count("id"),
            completed=Count("id", filter=Q(status=Session.Status.COMPLETED)),
            gold=Count("id", filter=Q(task__is_gold=True)),
        )
        .order_by()
    )
    for s in sessions:
        r = row(s["annotator_id"])
        r.sessions, r.sessions_completed, r.gold_sessions = s["total"], s["completed"], s["gold"]

    batch_rounds = Round.objects.filter(session__batch=batch, session__annotator__isnull=False)
    judged_by_annotator = Q(verdict_source=Round.VerdictSource.ANNOTATOR) | Q(
        verdict_source=Round.VerdictSource.REVIEWER, auto_verdict__isnull=True  # manual tasks have no auto verdict
    )
    counts = (
        batch_rounds.values("session__annotator_id")
        .annotate(
            fast=Count("id", filter=Q(index__gte=1, typing_ms__lt=FAST_ROUND_MS)),
            leaks=Count("id", filter=Q(leak_flagged=True)),
            manual=Count("id", filter=judged_by_annotator & Q(final_verdict__isnull=False)),
        )
        .order_by()
    )
    for c in counts:
        r = row(c["session__annotator_id"])
        r.fast_rounds, r.leaks_sent, r.manual_verdicts = c["fast"], c["leaks"], c["manual"]

    warnings = (
        LeakWarning.objects.filter(session__batch=batch)
        .values("annotator_id")
        .annotate(shown=Count("id"), right=Count("id", filter=Q(stated_answer_correct=True)))
        .order_by()
    )
    for w in warnings:
        r = row(w["annotator_id"])
        r.leak_warnings, r.leaks_stated_right = w["shown"], w["right"]

    # Typing times: medians per annotator, and per session totals against the batch median.
    typing = batch_rounds.filter(index__gte=1, typing_ms__isnull=False).values_list(
        "session__annotator_id", "session_id", "typing_ms"
    )
    per_annotator: dict[int, list[int]] = defaultdict(list)
    per_session: dict[int, int] = defaultdict(int)
    session_owner: dict[int, int] = {}
    all_typing: list[int] = []
    for annotator_id, session_id, ms in typing.iterator(chunk_size=5000):
        if ms is None:  # the query leaves these out; for the type checker
            continue
        per_annotator[annotator_id].append(ms)
        per_session[session_id] += ms
        session_owner[session_id] = annotator_id
        all_typing.append(ms)
    for annotator_id, values in per_annotator.items():
        r = row(annotator_id)
        r.typed_rounds, r.median_typing_ms = len(values), _median(values)
    median_session = _median(list(per_session.values()))
    fast_session_ms = round(median_session * FAST_SESSION_FRACTION) if median_session else None
    if fast_session_ms:
        for session_id, total in per_session.items():
            if total < fast_session_ms:
                row(session_owner[session_id]).fast_sessions += 1

    skips = (
        Assignment.objects.filter(work_item__batch=batch, status=Assignment.Status.SKIPPED)
        .values_list("annotator_id", "skip_reason")
    )
    reasons: dict[int, Counter[str]] = defaultdict(Counter)
    for annotator_id, reason in skips.iterator(chunk_size=5000):
        row(annotator_id).skips += 1
        reasons[annotator_id][reason or "(no reason)"] += 1
    for annotator_id, counter in reasons.items():
        rows[annotator_id].skip_reasons = counter.most_common(SKIP_REASONS_SHOWN)

    overrides = (
        VerdictOverride.objects.filter(round__session__batch=batch, round__session__annotator__isnull=False)
        .values("round__session__annotator_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for o in overrides:
        row(o["round__session__annotator_id"]).overrides_received = o["n"]

    _gold_accuracy(batch, row)

    pseudonyms = dict(User.objects.filter(pk__in=list(rows)).values_list("id", "pseudonym"))
    for annotator_id, r in rows.items():
        r.pseudonym = pseudonyms.get(annotator_id, "?")
    return BatchQuality(
        batch=batch,
        annotators=sorted(rows.values(), key=lambda r: r.pseudonym),
        median_typing_ms=_median(all_typing),
        median_session_typing_ms=median_session,
        fast_session_ms=fast_session_ms,
    )


def _gold_accuracy(batch: Batch, row: Callable[[int], AnnotatorQuality]) -> None:
    checks_by_annotator = attention_checks(batch)
    limit = PROLIFIC_FAILURES_TO_REJECT
    if any(checks.failed for checks in checks_by_annotator.values()):  # the study's own limit, when it matters
        limit = CrowdStudy.objects.filter(batch=batch).values_list("max_attention_failures", flat=True).first() \
            or PROLIFIC_FAILURES_TO_REJECT
    for annotator_id, checks in checks_by_annotator.items():
        r = row(annotator_id)
        r.gold_judged, r.gold_agreed, r.gold_unscored = checks.rounds_judged, checks.rounds_agreed, checks.rounds_unscored
        r.attention_checks, r.attention_failed, r.attention_limit = checks.checked, checks.failed, limit
