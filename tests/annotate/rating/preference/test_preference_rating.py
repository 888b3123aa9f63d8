"""MM-RLHF-style preference rating on the FIRE machinery: import, queue, three 1-5 scores with a reason per
candidate, a ranking with ties."""

import pytest
from django.urls import reverse

from annotate.errors import ApplicationError, Conflict
from annotate.imports.batches import batch_import
from annotate.imports.registry import IMPORTERS
from annotate.models import Assignment, Batch, Ranking, Rating
from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from annotate.rating.preference.services import preference_save, ranking_parse
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl

pytestmark = pytest.mark.django_db

RECORDS = [
    {"id": "p1", "image": "bars_01.png", "question": "What does the chart show?",
     "responses": ["Three bars.", "A pie chart.", "Green is tallest."], "source": "mm-rlhf", "split": "dev"},
    {"id": "p2", "question": "Is this safe?", "responses": ["Yes.", {"value": "It depends."}]},
]
FULL = {i: {"helpfulness": 4, "faithfulness": 5, "ethics": 5, "reason": f"r{i}"} for i in range(3)}


@pytest.fixture
def preference_batch(tmp_path):
    path = write_jsonl(tmp_path / "pref.jsonl", RECORDS)
    report = batch_import(path=path, name="pref", kind="preference", settings={"overlap": 2},
                          options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()
    return Batch.objects.get(name="pref")


@pytest.fixture
def reserved(preference_batch, annotator):
    return assignment_next(annotator=annotator).work_item.conversation


def test_import_makes_rateable_candidates(preference_batch):
    assert "preference" in IMPORTERS
    assert (preference_batch.kind, preference_batch.overlap, preference_batch.task_count) == ("preference", 2, 2)
    first = preference_batch.conversations.get(external_id="p1")
    assert [(t.role, t.kind, t.is_rateable) for t in first.turns.all()] == [("model", "candidate", True)] * 3
    assert first.image is not None
    assert preference_batch.work_items.count() == 2


def test_bad_preference_records_are_named(tmp_path):
    records = [dict(RECORDS[0], responses=["only one"]), dict(RECORDS[1], responses=["a", ""])]
    report = batch_import(path=write_jsonl(tmp_path / "bad.jsonl", records), name="bad", kind="preference")
    assert "line 1, field responses: expected a list of 2-10 responses, got 1 responses" in report.render()
    assert "line 2, field responses[1]: expected the response text" in report.render()
    assert not Batch.objects.exists()


def test_models_list_is_kept_and_checked(tmp_path):
    named = [dict(RECORDS[0], models=["gpt-4o", "llava-1.5", "qwen2-vl"])]
    report = batch_import(path=write_jsonl(tmp_path / "named.jsonl", named), name="named", kind="preference",
                          options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported" and "models" not in report.render()  # a known field: no warning
    conversation = Batch.objects.get(name="named").conversations.get()
    assert conversation.metadata["models"] == ["gpt-4o", "llava-1.5", "qwen2-vl"]
    short = [dict(RECORDS[1], models=["only-one"])]
    report = batch_import(path=write_jsonl(tmp_path / "short.jsonl", short), name="short", kind="preference")
    assert "line 1, field models: expected one model name per response (2 non-empty strings), got 1 entries" in (
        report.render())
    assert not Batch.objects.filter(name="short").exists()


@pytest.mark.parametrize("text, candidates, groups", [
    ("1>2=3", 3, [[1], [2, 3]]), ("2 = 1", 2, [[2, 1]]), ("3>1>2", 3, [[3], [1], [2]]),
])
def test_ranking_parse(text, candidates, groups):
    assert ranking_parse(text, candidates) == groups


@pytest.mark.parametrize("text, message", [
    ("1>2", "each of the candidates 1-3 exactly once"), ("1>1=2", "exactly once"), ("1,2,3", "not of the form"),
    ("", "not of the form"), ("1>4=2", "exactly once"),
])
def test_bad_rankings(text, message):
    with pytest.raises(ApplicationError, match=message):
        ranking_parse(text, 3)


def test_draft_then_final_save_completes_the_assignment(reserved, annotator):
    preference_save(annotator=annotator, conversation_id=reserved.id, ratings={0: {"helpfulness": 3}},
                    ranking="1>", final=False)
    assert Ranking.objects.get().ranking == "1>"
    with pytest.raises(ApplicationError, match="missing candidate 1 faithfulness"):
        preference_save(annotator=annotator, conversation_id=reserved.id, ratings={}, ranking="1>2=3",
                        client_request_id="x", final=True)
    with pytest.raises(ApplicationError, match="exactly once"):
        preference_save(annotator=annotator, conversation_id=reserved.id, ratings=FULL, ranking="1>2",
                        client_request_id="x", final=True)
    preference_save(annotator=annotator, conversation_id=reserved.id, ratings=FULL, ranking="3>1=2",
                    client_request_id="x", final=True)
    ratings = Rating.objects.order_by("turn__index")
    assert [(r.helpfulness, r.faithfulness, r.ethics, r.comment, r.is_final) for r in ratings] == [
        (4, 5, 5, f"r{i}", True) for i in range(3)]
    assert Ranking.objects.get().ranking == "3>1=2" and Ranking.objects.get().is_final
    assert Assignment.objects.get().status == Assignment.Status.COMPLETED
    again = preference_save(annotator=annotator, conversation_id=reserved.id, ratings=FULL, ranking="1>2>3",
                            client_request_id="x", final=True)
    assert again.replayed and Ranking.objects.get().ranking == "3>1=2"
    with pytest.raises(Conflict):
        preference_save(annotator=annotator, conversation_id=reserved.id, ratings=FULL, ranking="1>2>3",
                        client_request_id="y", final=True)


def test_fire_and_preference_services_do_not_mix(reserved, annotator):
    with pytest.raises(ApplicationError, match="not a FIRE conversation rating batch"):
        ratings_save(annotator=annotator, conversation_id=reserved.id, scores={0: (3, "")}, final=False)


def test_api_and_page(api_client, client, reserved, annotator):
    api_client.force_authenticate(annotator)
    url = reverse("api-conversation-preferences", args=[reserved.id])
    bad = api_client.post(url, {"ratings": [{"turn": 0, "ethics": 9}]}, format="json")
    assert bad.status_code == 400 and "less than or equal to 5" in str(bad.json())
    body = {"ratings": [{"turn": i, **FULL[i]} for i in range(3)], "ranking": "1>2=3", "final": True,
            "client_request_id": "api"}
    assert api_client.post(url, body, format="json").status_code == 200
    detail = api_client.get(reverse("api-conversation", args=[reserved.id])).json()
    assert detail["ranking"] == "1>2=3" and detail["submitted"] is True
    assert detail["turns"][0]["rating"] == {"helpfulness": 4, "faithfulness": 5, "ethics": 5, "comment": "r0"}
    client.force_login(annotator)
    page = client.get(reverse("fire-rate", args=[reserved.id])).content.decode()
    assert "Candidate 3" in page and 'name="faithfulness-2"' in page and 'id="ranking"' in page
