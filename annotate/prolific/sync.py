"""Following a Prolific study: its submissions, matched to the batch's participants by Prolific id. A submission
returned or timed out on Prolific marks the participant returned here and frees the items they held at once, as
the participants page's "returns from the platform" does by hand (annotate.crowd.ending)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from annotate.crowd.ending import participant_return
from annotate.errors import Conflict
from annotate.models import Participation, ProlificStudy, ProlificSubmission, User
from annotate.prolific.audit import client_for
from annotate.prolific.client import ProlificError

GONE = ("RETURNED", "TIMED-OUT")


@dataclass
class SyncResult:
    seen: int = 0
    returned: int = 0


def prolific_submissions_sync(*, study: ProlificStudy, by: User | None = None) -> SyncResult:
    """Fetch every submission of the study (all pages) and act on returns; the error, if any, is kept on the
    study for its page and raised."""
    result = SyncResult()
    try:
        rows = list(client_for(batch=study.batch, by=by).submissions(study.prolific_id))
    except ProlificError as error:
        ProlificStudy.objects.filter(pk=study.pk).update(sync_error=error.message[:500])
        raise
    participations = {p.user.external_id: p for p in Participation.objects.filter(
        batch=study.batch, user__external_id__in=[str(r.get("participant_id") or r.get("participant")) for r in rows])
        .select_related("user")}
    for row in rows:
        pid = str(row.get("participant_id") or row.get("participant") or "")
        participation = participations.get(pid)
        status = str(row.get("status") or "")
        ProlificSubmission.objects.update_or_create(
            submission_id=str(row["id"]),
            defaults={"study": study, "participant_id": pid, "status": status, "participation": participation})
        result.seen += 1
        if status in GONE and participation is not None and participation.ended_at is None \
                and participation.finished_at is None:
            try:
                participant_return(user=participation.user)
            except Conflict:
                continue  # finished or ended meanwhile: nothing to free
            result.returned += 1
    ProlificStudy.objects.filter(pk=study.pk).update(synced_at=timezone.now(), sync_error="")
    return result


def prolific_studies_sync() -> int:
    """Every published study not yet completed (Celery beat): the returns it finds; errors stay on each study."""
    returned = 0
    for study in ProlificStudy.objects.exclude(status__in=["UNPUBLISHED", "COMPLETED"]).select_related("batch"):
        try:
            returned += prolific_submissions_sync(study=study).returned
        except ProlificError:
            continue
    return returned
