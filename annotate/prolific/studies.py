"""A batch's Prolific study: the connect check, the draft (name, description, time, reward, places the batch
still needs, the study URL with Prolific's placeholders, the completion codes and what Prolific does with each),
the cost Prolific reports, publish, pause, resume and more places."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.db.models import F, Sum
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from annotate.crowd import selectors as crowd_selectors
from annotate.crowd import services as crowd_services
from annotate.crowd.study import study_of
from annotate.errors import Conflict, InvalidFields
from annotate.models import Batch, ProlificStudy, User, WorkItem
from annotate.prolific.audit import client_for


@dataclass(frozen=True)
class Connection:
    researcher: str
    workspaces: list[str]


def prolific_connect_check(*, by: User | None = None) -> Connection:
    """Whether the token works, and whose it is: ProlificError (in plain words) when it does not."""
    client = client_for(batch=None, by=by)
    me = client.me()
    titles = [str(w.get("title") or w.get("id")) for w in client.workspaces()]
    return Connection(researcher=str(me.get("name") or me.get("email") or me.get("id", "")), workspaces=titles)


def places_needed(batch: Batch) -> int:
    """Participants the batch still needs: the annotations it still wants (overlap less done and in progress),
    over the items one participant does (the whole batch when it sets no per-participant limit)."""
    wanted = WorkItem.objects.filter(batch=batch, is_check=False).aggregate(
        n=Sum(Greatest(batch.overlap - F("completed_count") - F("active_count"), 0)))["n"] or 0
    if not wanted:
        return 0
    share = batch.items_per_participant or WorkItem.objects.filter(batch=batch, is_check=False).count() or 1
    return math.ceil(wanted / share)


def completion_codes(batch: Batch, attention_code: str = "") -> list[dict]:
    """The codes participants bring back to Prolific, each with what Prolific should do with it: a finished
    participant waits for the researcher's review here; screened out and no consent are asked to return the study
    (they are not paid the reward); attention-check failures wait for review (the researcher may reject)."""
    study = study_of(batch)
    if not batch.completion_code:
        raise InvalidFields([("completion_code", _("set the batch's completion code first (a new invite link "
                                                   "takes one), so finished participants can prove it"))])
    codes = [{"code": batch.completion_code, "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    if study.screened_out_code:
        codes.append({"code": study.screened_out_code, "code_type": "OTHER",
                      "actions": [{"action": "REQUEST_RETURN", "return_reason": "Screened out by the comprehension "
                                                                                "questions."}]})
    if study.no_consent_code:
        codes.append({"code": study.no_consent_code, "code_type": "NO_CONSENT",
                      "actions": [{"action": "REQUEST_RETURN", "return_reason": "Did not consent."}]})
    if attention_code:
        codes.append({"code": attention_code, "code_type": "FAILED_ATTENTION_CHECK",
                      "actions": [{"action": "MANUALLY_REVIEW"}]})
    seen = [str(c["code"]) for c in codes]
    if len(set(seen)) != len(seen):
        raise InvalidFields([("completion_codes", _("each code must be different: %(codes)s")
                              % {"codes": ", ".join(seen)})])
    return codes


def _cents(reward: str | Decimal) -> int:
    try:
        amount = Decimal(str(reward).strip())
    except InvalidOperation:
        raise InvalidFields([("reward", _("a number, e.g. 2.50"))]) from None
    if not amount.is_finite() or amount <= 0 or amount != amount.quantize(Decimal("0.01")):
        raise InvalidFields([("reward", _("more than 0, with at most two decimals, e.g. 2.50"))])
    return int(amount * 100)


def prolific_study_create(*, batch: Batch, by: User | None, origin: str, name: str, description: str,
                          estimated_minutes: int, reward: str | Decimal, internal_name: str = "",
                          places: int | None = None, attention_code: str = "") -> ProlificStudy:
    """The batch's Prolific study as a draft (unpublished: nobody sees it, nothing is paid yet)."""
    if ProlificStudy.objects.filter(batch=batch).exists():
        raise Conflict(_("This batch already has a Prolific study."))
    problems = []
    if not (name or "").strip():
        problems.append(("name", _("the title participants see on Prolific")))
    if not (description or "").strip():
        problems.append(("description", _("what participants will do, shown on Prolific")))
    if not isinstance(estimated_minutes, int) or not 1 <= estimated_minutes <= 24 * 60:
        problems.append(("estimated_minutes", _("whole minutes, 1 to 1440")))
    if not origin.startswith(("http://", "https://")):
        problems.append(("origin", _("the site's address participants open, e.g. https://lab.example.org")))
    places = places_needed(batch) if places is None else places
    if places < 1:
        problems.append(("places", _("at least 1 (the batch needs no more participants by its capacity)")))
    if problems:
        raise InvalidFields(problems)
    cents = _cents(reward)
    codes = completion_codes(batch, (attention_code or "").strip())
    link, _token = crowd_services.invite_link_create(batch=batch, label="Prolific study", created_by=by)
    _plain, prolific_path = crowd_selectors.invite_link_paths(link)
    url = origin.rstrip("/") + prolific_path
    body = {"name": name.strip(), "internal_name": (internal_name or batch.name).strip(),
            "description": description.strip(), "external_study_url": url, "prolific_id_option": "url_parameters",
            "completion_codes": codes, "estimated_completion_time": estimated_minutes, "reward": cents,
            "total_available_places": places, "device_compatibility": ["desktop"]}
    answer = client_for(batch=batch, by=by).study_create(body)
    return ProlificStudy.objects.create(
        batch=batch, prolific_id=answer["id"], status=answer.get("status", "UNPUBLISHED"), name=name.strip(),
        internal_name=(internal_name or batch.name).strip(), estimated_minutes=estimated_minutes, reward_cents=cents,
        places=places, external_url=url, completion_codes=codes, total_cost_cents=answer.get("total_cost"),
        created_by=by, synced_at=timezone.now())


TRANSITIONS = {"publish": "PUBLISH", "pause": "PAUSE", "resume": "START", "stop": "STOP"}


def _keep(study: ProlificStudy, answer: dict) -> ProlificStudy:
    study.status = str(answer.get("status") or study.status)
    study.places = int(answer.get("total_available_places") or study.places)
    if answer.get("total_cost") is not None:
        study.total_cost_cents = int(answer["total_cost"])
    study.synced_at = timezone.now()
    study.save(update_fields=["status", "places", "total_cost_cents", "synced_at"])
    return study


def prolific_study_transition(*, study: ProlificStudy, action: str, by: User | None) -> ProlificStudy:
    """publish, pause, resume or stop the study on Prolific."""
    if action not in TRANSITIONS:
        raise InvalidFields([("action", _("one of %(names)s") % {"names": ", ".join(TRANSITIONS)})])
    answer = client_for(batch=study.batch, by=by).study_transition(study.prolific_id, TRANSITIONS[action])
    return _keep(study, answer or {})


def prolific_study_add_places(*, study: ProlificStudy, more: int, by: User | None) -> ProlificStudy:
    if not isinstance(more, int) or more < 1:
        raise InvalidFields([("places", _("how many places to add: a whole number, 1 or more"))])
    answer = client_for(batch=study.batch, by=by).study_update(
        study.prolific_id, {"total_available_places": study.places + more})
    return _keep(study, answer or {})


def prolific_study_refresh(*, study: ProlificStudy, by: User | None) -> ProlificStudy:
    """The study as Prolific has it now (status, places, the cost Prolific reports)."""
    return _keep(study, client_for(batch=study.batch, by=by).study_get(study.prolific_id) or {})
