"""Invite links with their use: who joined through each, how many items they finished, how many finished their share."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from annotate.crowd.services import PROLIFIC_PARAMS, invite_token_create
from annotate.models import Assignment, Batch, InviteLink, Participation, User
from annotate.shares import counted_skips


@dataclass(frozen=True)
class InviteLinkUse:
    link: InviteLink
    path: str  # the join page (add the site's origin)
    prolific_path: str  # the same with Prolific's URL parameters
    joined: int
    items_done: int
    finished_share: int | None  # None: the batch sets no per-participant limit, so no share to finish

    @property
    def state(self) -> str:
        if self.link.revoked_at is not None:
            return "revoked"
        if self.link.expires_at is not None and self.link.expires_at < timezone.now():
            return "expired"
        return "active"


def invite_link_paths(link: InviteLink) -> tuple[str, str]:
    path = reverse("crowd-join", args=[invite_token_create(batch=link.batch, link=link)])
    return path, f"{path}?{PROLIFIC_PARAMS}"


def invite_links_usage(*, batch: Batch) -> list[InviteLinkUse]:
    """Every link of the batch, newest first, with its use (three grouped queries whatever the number of links)."""
    links = list(InviteLink.objects.filter(batch=batch).select_related("batch", "created_by"))
    joined = dict(User.objects.filter(invite_link__batch=batch).values_list("invite_link").annotate(n=Count("id")))
    done_by: dict[int, Counter[int]] = defaultdict(Counter)  # completed items per person
    counted_by: dict[int, Counter[int]] = defaultdict(Counter)  # what counts toward their share (skips where they may)
    people = Assignment.objects.filter(work_item__batch=batch, annotator__invite_link__batch=batch).values_list(
        "annotator__invite_link", "annotator").annotate(
        completed=Count("id", filter=Q(status=Assignment.Status.COMPLETED)),
        skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)))
    for link_id, annotator_id, completed, skipped in people:
        done_by[link_id][annotator_id] = completed
        counted_by[link_id][annotator_id] = completed + counted_skips(batch, skipped)
    limit = batch.items_per_participant
    rows = []
    for link in links:
        path, prolific = invite_link_paths(link)
        rows.append(InviteLinkUse(
            link=link, path=path, prolific_path=prolific, joined=joined.get(link.pk, 0),
            items_done=sum(done_by[link.pk].values()),
            finished_share=None if not limit else sum(1 for n in counted_by[link.pk].values() if n >= limit)))
    return rows


def invite_link_of_batch(*, batch: Batch, link_id: int) -> InviteLink | None:
    return InviteLink.objects.filter(batch=batch, pk=link_id).select_related("batch").first()


def participant_returning(*, batch: Batch, prolific_pid: str | None, current_user: User | None) -> bool:
    """Whether the person opening one of ``batch``'s invite links already took part in it (an item, or a step of its
    study), so the join page greets them back: the PID's account of this batch, else the participant of this batch
    signed in in this browser. Read only: opening the link creates nothing."""
    if prolific_pid:
        user = User.objects.filter(external_id=prolific_pid.strip(), crowd_batch=batch).first()
    elif current_user is not None and current_user.is_authenticated and current_user.crowd_batch_id == batch.pk:
        user = current_user
    else:
        return False
    if user is None:
        return False
    started = Q(consented_at__isnull=False) | Q(screened_at__isnull=False) | Q(pre_survey_at__isnull=False)
    return Assignment.objects.filter(annotator=user).exists() or Participation.objects.filter(started, user=user).exists()
