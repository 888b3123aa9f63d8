"""The end of a participation before its completion code: declined consent, screened out, too many failed
attention checks, returned, or past the study's time limit. An ended participation is served nothing more, and
the items the participant held go back to the pool at once (annotate.assignments.assignments_release), so the
others waiting for work get them without waiting for a lease to run out.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.assignments import assignments_release
from annotate.crowd.attention import attention_checks
from annotate.errors import Conflict
from annotate.models import CrowdStudy, Participation, User


def participation_end(participation: Participation, reason: str, *, by: User | None = None) -> bool:
    """End the participation now (once: an ended or finished one stays as it is) and free what they held."""
    ended = Participation.objects.filter(pk=participation.pk, ended_at__isnull=True,
                                         finished_at__isnull=True).update(
        ended_at=timezone.now(), end_reason=reason, ended_by=by)
    participation.refresh_from_db(fields=["ended_at", "end_reason", "ended_by"])
    if ended:
        assignments_release(annotator=participation.user)
    return bool(ended)


def _past_time_limit(participation: Participation, study: CrowdStudy) -> bool:
    return bool(study.time_limit_minutes) and participation.started_at + timedelta(
        minutes=study.time_limit_minutes or 0) < timezone.now()


def participation_check(participation: Participation, study: CrowdStudy) -> None:
    """End a participation past its time limit, or with as many failed attention checks as the study allows."""
    if participation.ended_at is not None or participation.finished_at is not None:
        return
    if _past_time_limit(participation, study):
        participation_end(participation, Participation.End.TIMED_OUT)
    elif study.max_attention_failures:
        checks = attention_checks(participation.batch, [participation.user_id]).get(participation.user_id)
        if checks is not None and checks.failed >= study.max_attention_failures:
            participation_end(participation, Participation.End.ATTENTION)


def participant_return(*, user: User, by: User | None = None) -> Participation:
    """The participant leaves the study (they press "Leave the study", or a researcher marks them returned from the
    platform's list). Conflict once they have finished or ended."""
    if user.crowd_batch_id is None:
        raise Conflict(_("Only participants invited to a study can leave it."))
    participation, _created = Participation.objects.select_related("user").get_or_create(
        user=user, defaults={"batch_id": user.crowd_batch_id})
    if not participation_end(participation, Participation.End.RETURNED, by=by):
        raise Conflict(_("This participant has already finished or left the study."))
    return participation


def participations_time_out() -> int:
    """End every open participation past its study's time limit (Celery beat): their items are freed at once."""
    ended = 0
    now = timezone.now()
    for study in CrowdStudy.objects.filter(time_limit_minutes__isnull=False).only("batch_id", "time_limit_minutes"):
        late = Participation.objects.filter(
            Q(batch_id=study.batch_id, ended_at__isnull=True, finished_at__isnull=True),
            started_at__lt=now - timedelta(minutes=study.time_limit_minutes or 0)).select_related("user")
        for participation in late:
            ended += participation_end(participation, Participation.End.TIMED_OUT)
    return ended
