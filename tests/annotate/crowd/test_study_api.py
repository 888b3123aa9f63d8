"""The same study through the API and the commands: a participant's steps (/api/study/...), the researchers' study
settings (/api/batches/<id>/study/, the `study` command, the import's `study` setting), with the three personas,
404s and clear 400s."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.crowd.study import study_document, study_settings_clean, study_update
from annotate.errors import InvalidFields
from annotate.models import ConsentText, CrowdStudy, Participation
from annotate.queue.services import assignment_next
from tests.annotate.crowd.study_data import PRE_ANSWERS, STUDY, join
from tests.annotate.imports.files import task, write_zip
from tests.factories import UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


@pytest.fixture
def batch(simulated_model, researcher):
    batch = make_batch(models=[simulated_model], tasks=2, members=[researcher])
    study_update(batch=batch, settings=STUDY)
    return batch


def participant_api(client, batch, pid=None) -> tuple[APIClient, object]:
    user = join(client, batch, pid)
    api = APIClient()
    api.force_authenticate(user)
    return api, user


def test_a_participant_goes_through_the_study_by_the_api(client, batch):
    api, user = participant_api(client, batch, pid="api-pid")
    state = api.get(reverse("api-study")).json()
    assert state["stage"] == "consent" and state["consent"]["version"] == 1 and state["code"] is None
    assert api.post(reverse("api-study-screening"), {"question": "leak", "answer": "No"},
                    format="json").status_code == 409  # not at that step yet
    assert api.post(reverse("api-study-consent"), {}, format="json").status_code == 400  # accept: required
    state = api.post(reverse("api-study-consent"), {"accept": True}, format="json").json()
    assert state["stage"] == "screening"
    question = state["screening"]["question"]
    assert question == {"id": "leak", "text": STUDY["screening"][0]["text"], "options": ["Yes", "No"]}  # no answer
    assert "by itself" not in json.dumps(state)  # nor its explanation
    bad = api.post(reverse("api-study-screening"), {"question": "leak", "answer": "Maybe"}, format="json")
    assert bad.status_code == 400 and bad.json()["detail"] == "Choose one of the options shown."
    wrong = api.post(reverse("api-study-screening"), {"question": "leak", "answer": "Yes"}, format="json").json()
    assert wrong["correct"] is False and wrong["tries_left"] == 1 and wrong["explanation"] == ""
    right = api.post(reverse("api-study-screening"), {"question": "leak", "answer": "No"}, format="json").json()
    assert right["correct"] and right["explanation"].startswith("The model must find") and right["passed"] is None
    last = api.post(reverse("api-study-screening"), {"question": "rounds", "answer": "3"}, format="json").json()
    assert last["passed"] is True and last["state"]["stage"] == "pre_survey"
    assert [q["id"] for q in last["state"]["questions"]] == ["english", "device"]
    bad = api.post(reverse("api-study-survey", args=["pre"]), {"answers": {"english": 9, "device": "Phone"}},
                   format="json")
    assert bad.status_code == 400 and bad.json()["english"] == ["Choose a point from 1 to 5."]
    assert api.post(reverse("api-study-survey", args=["pre"]), {"answers": PRE_ANSWERS},
                    format="json").json()["stage"] == "items"
    assert api.post(reverse("api-study-survey", args=["mid"]), {"answers": {}}, format="json").status_code == 404
    served = api.post(reverse("api-next"), {}, format="json").json()
    assert served["state"] == "item"
    state = api.post(reverse("api-study-return")).json()
    assert state["stage"] == "ended" and state["end_reason"] == "returned"
    assert api.post(reverse("api-study-return")).status_code == 409  # once
    assert api.post(reverse("api-next"), {}, format="json").json()["state"] == "study"


def test_only_invited_participants_have_a_study(api_client, annotator, researcher):
    for who in (annotator, researcher):
        api_client.force_authenticate(who)
        assert api_client.get(reverse("api-study")).status_code == 404
        assert api_client.post(reverse("api-study-consent"), {"accept": True}, format="json").status_code == 404
    api_client.force_authenticate(None)
    assert api_client.get(reverse("api-study")).status_code in (401, 403)


def test_researchers_read_and_change_the_study_settings(api_client, batch, researcher, annotator):
    url = reverse("api-batch-study", args=[batch.id])
    api_client.force_authenticate(annotator)
    assert api_client.get(url).status_code == 403
    api_client.force_authenticate(UserFactory(username="other-rita", role="researcher"))
    assert api_client.get(url).status_code == 404  # not a member
    api_client.force_authenticate(researcher)
    document = api_client.get(url).json()
    assert document["consent_version"] == 1 and document["screening_pass_mark"] == 2
    changed = api_client.patch(url, {"consent": "A new text.", "time_limit_minutes": 45, "attention_rate": 0.2},
                               format="json").json()
    assert changed["consent_version"] == 2 and changed["time_limit_minutes"] == 45 and changed["attention_rate"] == 0.2
    assert changed["pre_survey"] == document["pre_survey"]  # left out: kept
    assert list(ConsentText.objects.filter(batch=batch).values_list("version", "text")) == [
        (1, STUDY["consent"]), (2, "A new text.")]
    assert api_client.patch(url, changed, format="json").json()["consent_version"] == 2  # its own document back
    bad = api_client.patch(url, {"screening": [{"text": "Q?", "options": ["a", "b"], "answer": "c"}],
                                 "bonus_rule": "lavish", "colour": "red"}, format="json")
    body = bad.json()
    assert bad.status_code == 400
    assert "must be one of the question's options" in body["study.screening[0].answer"][0]
    assert "bonus_rule" in bad.json()["detail"] and "study.colour" in body
    assert study_document(batch)["bonus_rule"] == "per_item"  # nothing written


@pytest.mark.parametrize("given, field, words", [
    ({"screening": [{"text": "Q", "options": ["a"], "answer": "a"}]}, "study.screening[0].options", "2 to 30"),
    ({"screening": [{"id": "x y", "text": "Q", "options": ["a", "b"], "answer": "a"}]}, "study.screening[0].id",
     "letters"),
    ({"screening": [{"text": "Q", "options": ["a", "b"], "answer": "a"}], "screening_pass_mark": 3},
     "study.screening_pass_mark", "of 1 screening"),
    ({"pre_survey": [{"id": "q", "type": "slider", "text": "Q"}]}, "study.pre_survey[0].type", "likert"),
    ({"pre_survey": [{"id": "q", "type": "likert", "text": "Q", "scale": 20}]}, "study.pre_survey[0].scale",
     "2 to 11"),
    ({"post_survey": [{"id": "q", "type": "number", "text": "Q", "min": 5, "max": 1}]}, "study.post_survey[0].min",
     "greater than max"),
    ({"post_survey": [{"id": "a", "type": "text", "text": "Q"}, {"id": "a", "type": "text", "text": "R"}]},
     "study.post_survey[1].id", "used twice"),
    ({"no_consent_code": "has space"}, "study.no_consent_code", "letters"),
    ({"time_limit_minutes": 0}, "study.time_limit_minutes", "whole number"),
    ({"bonus_amount": "-1"}, "study.bonus_amount", "amount"),
    ({"attention_rate": 2}, "study.attention_rate", "0 to 1"),
])
def test_bad_study_settings_name_what_is_wrong(given, field, words):
    _, problems = study_settings_clean(given)
    assert any(name == field and words in message for name, message in problems), problems


def test_the_study_command_shows_and_sets(batch, tmp_path):
    out = io.StringIO()
    path = tmp_path / "study.json"
    path.write_text(json.dumps({"max_attention_failures": 2, "post_survey": []}))
    call_command("study", "--batch", batch.name, "--set", str(path), stdout=out)
    document = json.loads(out.getvalue())
    assert document["max_attention_failures"] == 2 and document["post_survey"] == []
    assert CrowdStudy.objects.get(batch=batch).max_attention_failures == 2
    path.write_text(json.dumps({"bonus_rule": "lavish"}))
    with pytest.raises(CommandError, match="bonus_rule"):
        call_command("study", "--batch", batch.name, "--set", str(path), stdout=io.StringIO())
    with pytest.raises(CommandError, match="No batch"):
        call_command("study", "--batch", "nope", stdout=io.StringIO())


def test_the_import_sets_the_study(tmp_path, simulated_model):
    study_file = tmp_path / "study.json"
    study_file.write_text(json.dumps(STUDY))
    batch_file = write_zip(tmp_path / "b.zip", [task("t1"), task("t2")])
    out = io.StringIO()
    call_command("import_batch", str(batch_file), "--name", "with-study", "--models", simulated_model.name,
                 "--study", str(study_file), "--no-progress", stdout=out)
    from annotate.models import Batch

    batch = Batch.objects.get(name="with-study")
    assert study_document(batch)["screening"][1]["id"] == "rounds" and study_document(batch)["consent_version"] == 1
    study_file.write_text(json.dumps({"screening": "not a list"}))
    with pytest.raises(CommandError):
        call_command("import_batch", str(batch_file), "--name", "other", "--study", str(study_file),
                     "--no-progress", stdout=out)
    assert "settings.study.screening" in out.getvalue()


def test_a_consent_change_keeps_earlier_acceptances(client, batch):
    _, user = participant_api(client, batch)
    client.post(reverse("crowd-consent"), {"answer": "agree"})
    study_update(batch=batch, settings={"consent": "Changed words."})
    participation = Participation.objects.get(user=user)
    assert participation.consent_version == 1  # the words they accepted
    assert client.get(reverse("crowd-study"))["Location"] == reverse("crowd-screening")  # not asked again


def test_unknown_participant_ids_are_named(batch):
    from annotate.crowd.decisions import participations_by_ids

    with pytest.raises(InvalidFields, match="'ghost'"):
        participations_by_ids(batch, ["ghost"])
    assert assignment_next(annotator=UserFactory()) is not None  # annotators with an account are never asked
