"""Researcher pages for the batch's Prolific study: POST actions from the invites and participants pages' Prolific
panels. Approvals, rejections and bonuses show a dry run (what would be sent and its total) and send only once
confirmed. Prolific's errors come back as the sentences annotate.prolific.client writes."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from annotate.errors import ApplicationError, NotFound
from annotate.people.access import batch_for_researcher, researcher_required
from annotate.prolific import payments, selectors, studies
from annotate.prolific.sync import prolific_submissions_sync


def _int(value: str | None, name: str) -> int:
    value = (value or "").strip()
    if not value.isdigit():
        raise ApplicationError(_("%(field)s must be a whole number.") % {"field": name}, code="bad_number")
    return int(value)


def _study(batch):
    study = selectors.study_for_batch(batch)
    if study is None:
        raise NotFound(_("This batch has no Prolific study yet."))
    return study


@require_POST
@researcher_required
def prolific_check_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    try:
        connection = studies.prolific_connect_check(by=request.user)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, _("The Prolific token works: it belongs to %(who)s and reaches the workspace "
                                    "%(ws)s.") % {"who": connection.researcher,
                                                  "ws": ", ".join(connection.workspaces) or "—"})
    return redirect(f"/research/batches/{batch.pk}/invites/#prolific")


@require_POST
@researcher_required
def prolific_create_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    post = request.POST
    try:
        places = post.get("places", "").strip()
        study = studies.prolific_study_create(
            batch=batch, by=request.user, origin=f"{request.scheme}://{request.get_host()}",
            name=post.get("name", ""), internal_name=post.get("internal_name", ""),
            description=post.get("description", ""),
            estimated_minutes=_int(post.get("estimated_minutes"), _("Estimated minutes")),
            reward=post.get("reward", ""), places=_int(places, _("Places")) if places else None,
            attention_code=post.get("attention_code", ""))
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, _("The Prolific study is created as a draft: Prolific reports a cost of "
                                    "%(cost)s. Publish it when ready.") % {"cost": _money(study.total_cost_cents)})
    return redirect(f"/research/batches/{batch.pk}/invites/#prolific")


@require_POST
@researcher_required
def prolific_study_page(request, batch_id: int):
    """publish, pause, resume, stop, add places, refresh, sync."""
    batch = batch_for_researcher(request.user, batch_id)
    action = request.POST.get("action", "")
    try:
        study = _study(batch)
        if action == "add_places":
            studies.prolific_study_add_places(study=study, more=_int(request.POST.get("more"), _("Places to add")),
                                              by=request.user)
            messages.success(request, _("Places added: the study now has %(n)s.") % {"n": study.places})
        elif action == "refresh":
            studies.prolific_study_refresh(study=study, by=request.user)
            messages.success(request, _("The study is %(s)s on Prolific.") % {"s": study.status})
        elif action == "sync":
            result = prolific_submissions_sync(study=study, by=request.user)
            messages.success(request, _("%(n)s submissions read from Prolific; %(r)s newly returned (their items are "
                                        "free again).") % {"n": result.seen, "r": result.returned})
        else:
            studies.prolific_study_transition(study=study, action=action, by=request.user)
            messages.success(request, _("The study is %(s)s on Prolific.") % {"s": study.status})
    except ApplicationError as error:
        messages.error(request, error.message)
    return redirect(request.POST.get("next") or f"/research/batches/{batch.pk}/invites/#prolific")


@require_POST
@researcher_required
def prolific_pay_page(request, batch_id: int):
    """Decisions (one participant, or the app's approvals) and the bonuses: a dry run, then send once confirmed."""
    batch = batch_for_researcher(request.user, batch_id)
    post = request.POST
    what = post.get("what", "")
    send = post.get("confirm") == "1"
    back = f"/research/batches/{batch.pk}/participants/#prolific"
    try:
        if what == "bonuses":
            plan = payments.prolific_bonuses_pay(batch=batch, by=request.user, dry_run=not send)
        else:
            decisions = _decisions(batch, post)
            plan = payments.prolific_decisions(batch=batch, decisions=decisions, by=request.user, dry_run=not send)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect(back)
    if not send:
        return render(request, "annotate/prolific/confirm.html", {
            "batch": batch, "plan": plan, "what": what, "fields": [(k, v) for k, v in post.items()
                                                                  if k not in ("csrfmiddlewaretoken", "confirm")]})
    messages.success(request, _("Sent to Prolific: %(n)s; already done there: %(a)s.")
                     % {"n": len(plan.send), "a": len(plan.already)})
    return redirect(back)


def _decisions(batch, post) -> list[tuple[str, str, str, str]]:
    if post.get("what") == "approvals":
        from annotate.crowd.decisions import latest_decisions

        return [(d.participation.user.external_id, "approve", "", "")
                for d in latest_decisions(batch).values()
                if d.decision == "approve" and d.participation.user.external_id]
    pseudonym = post.get("participant", "").strip()
    pid = selectors.participant_ids_by_pseudonym(batch, [pseudonym]).get(pseudonym)
    if pid is None:
        raise ApplicationError(_("No participant %(p)s with a Prolific id in this batch.") % {"p": pseudonym})
    return [(pid, post.get("decision", ""), post.get("rejection_category", ""), post.get("message", ""))]


def _money(cents: int | None) -> str:
    return "—" if cents is None else f"{cents / 100:.2f}"
