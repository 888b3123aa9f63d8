"""Whether an invited participant has reached the items of their study: the gate the next-item queue
asks before serving them. The steps around the items (consent, screening, questionnaires, the time limit, an
end) are annotate.crowd's; this module only reads where a participant stands, so the queue below the crowd
package can ask without importing it.

A participant is held back from items while their study still asks something first (the consent, the screening,
the pre-study questionnaire), and for good once their participation has ended (declined, screened out, failed
attention checks, returned) or is past the study's time limit. Annotators with an account are never held back.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotate.models import Batch, CrowdStudy, Participation, User

# Why a participant may not be served items now (None: they may).
ENDED, CONSENT, SCREENING, PRE_SURVEY = "ended", "consent", "screening", "pre_survey"


def study_asks_first(study: CrowdStudy | None) -> bool:
    """The study asks something of a participant before their first item."""
    return study is not None and bool(study.consent_version or study.screening or study.pre_survey)


def held_back(participation: Participation | None, study: CrowdStudy | None) -> str | None:
    """Why a participant stands before the items (or past them for good: ENDED), None when they are at them."""
    if participation is not None and participation.ended_at is not None:
        return ENDED
    if study is None:
        return None
    if participation is not None and study.time_limit_minutes and participation.finished_at is None and \
            participation.started_at + timedelta(minutes=study.time_limit_minutes) < timezone.now():
        return ENDED  # past the limit; annotate.crowd ends it and frees what they held
    if study.consent_version and (participation is None or participation.consented_at is None):
        return CONSENT
    if study.screening and (participation is None or not participation.screening_passed):
        return SCREENING
    if study.pre_survey and (participation is None or participation.pre_survey_at is None):
        return PRE_SURVEY
    return None


def items_held_back(user: User, batch: Batch) -> str | None:
    """Why the invited participant ``user`` of ``batch`` is not served items now (one query), None if they are
    or are no participant of it."""
    if user.crowd_batch_id is None or user.crowd_batch_id != batch.pk:
        return None
    participation = Participation.objects.filter(user_id=user.pk).select_related("batch__study").first()
    if participation is None:  # joined before studies had steps: the study's steps still come first
        return held_back(None, CrowdStudy.objects.filter(batch_id=batch.pk).first())
    return held_back(participation, getattr(participation.batch, "study", None))
