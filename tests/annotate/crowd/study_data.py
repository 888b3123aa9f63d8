"""A crowd study used by the tests: consent, two screening questions (pass mark 2), both questionnaires."""

from __future__ import annotations

from django.urls import reverse

from annotate.crowd import services as crowd
from annotate.crowd.study import study_update
from annotate.models import Batch, User
from tests.factories import make_batch

CONSENT = "You will judge an AI model's answers. **Your answers are kept under a pseudonym.**"
SCREENING = [
    {"id": "leak", "text": "May your feedback state the answer before the last round?", "options": ["Yes", "No"],
     "answer": "No", "explanation": "The model must find the answer by itself until the last round."},
    {"id": "rounds", "text": "How many feedback rounds are there at most?", "options": ["1", "3", "10"],
     "answer": "3", "explanation": "Up to three rounds; the answer is revealed in the third."},
]
PRE = [{"id": "english", "type": "likert", "text": "How fluent is your English?", "scale": 5,
        "labels": ["Beginner", "Native"]},
       {"id": "device", "type": "single", "text": "What are you using?", "options": ["Phone", "Computer"]}]
POST = [{"id": "tools", "type": "multiple", "text": "What did you look at?", "options": ["Image", "Question", "Answer"]},
        {"id": "minutes", "type": "number", "text": "How many minutes did it take?", "min": 0, "max": 600},
        {"id": "comments", "type": "text", "text": "Anything to tell us?", "required": False}]
STUDY = {"consent": CONSENT, "no_consent_code": "NO-CONSENT", "screening": SCREENING, "screening_pass_mark": 2,
         "screened_out_code": "SCREENED-OUT", "pre_survey": PRE, "post_survey": POST, "bonus_rule": "per_item",
         "bonus_amount": "0.25"}
PRE_ANSWERS = {"english": 4, "device": "Computer"}
POST_ANSWERS = {"tools": ["Question", "Image"], "minutes": 12, "comments": ""}


def join(client, batch, pid: str | None = None) -> User:
    """Join the batch through a new invite link (with a Prolific id when given) and return the participant."""
    _, token = crowd.invite_link_create(batch=batch, label="test")
    query = f"?PROLIFIC_PID={pid}&STUDY_ID=s1&SESSION_ID=x1" if pid else ""
    response = client.post(reverse("crowd-join", args=[token]) + query)
    assert response.status_code == 302, response.content
    return User.objects.get(pk=client.session["_auth_user_id"])


def study_batch(model, *, study: bool = True) -> Batch:
    """A batch of three items, one per participant, completion code ALL-DONE; with ``study``, the study above."""
    batch = make_batch(models=[model], tasks=3)
    crowd.batch_set_completion_code(batch=batch, code="ALL-DONE")
    Batch.objects.filter(pk=batch.pk).update(items_per_participant=1)
    batch.refresh_from_db()
    if study:
        study_update(batch=batch, settings=STUDY)
    return batch
