"""Reads for verdict review: who may review a round, and its audit trail."""

from __future__ import annotations

from annotate.errors import NotFound, PermissionDenied
from annotate.models import Round, User, VerdictOverride

NOT_FOUND = "Round {} does not exist or you are not a member of its batch."


def review_round_batch(user: User, round_id: int) -> int:
    """The batch id of a round the user may review: admins any, researchers those of batches they are members of.

    Annotators are refused (403) whatever the round; a missing round and a batch the researcher is not a member
    of read the same (404), so ids cannot be probed.
    """
    if not user.is_authenticated or not user.is_researcher_role:
        raise PermissionDenied("Only researchers and admins can review verdicts.")
    rows = Round.objects.filter(pk=round_id)
    if not user.is_admin_role:
        rows = rows.filter(session__batch__members=user)
    batch_id = rows.values_list("session__batch_id", flat=True).first()
    if batch_id is None:
        raise NotFound(NOT_FOUND.format(round_id))
    return batch_id


def round_overrides(*, user: User, round_id: int) -> list[VerdictOverride]:
    """A round's overrides, oldest first, for a user who may review it."""
    review_round_batch(user, round_id)
    return list(VerdictOverride.objects.filter(round_id=round_id).select_related("reviewer").order_by("created_at"))
