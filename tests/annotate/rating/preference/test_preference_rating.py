"""MM-RLHF-style preference rating on the FIRE machinery: import, queue, three 1-5 scores with a reason per
candidate, a ranking with ties."""

import pytest
from django.urls import reverse

from annotate.errors import ApplicationError, Conflict
from annotate.imports.batches import batch_import
from annotate.imports.registry import IMPORTERS
from annotate.models import Assignment, Batch, Ranking, Rating, User
from annotate.queue.services import assignment_next
from annotate.rating.fire.services import ratings_save
from annotate.rating.preference.services import (
    preference_save,
    ranking_contradictions,
    ranking_from_positions,
    ranking_parse,
)
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.factories import UserFactory

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
    with pytest.raises(ApplicationError, match=r"candidate 1 \(faithfulness, ethics, reason\), candidate 2"):
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


# --- reasons and what a final save lacks -------------------------------------------------------------------


def test_a_final_save_needs_a_reason_for_every_candidate(reserved, annotator):
    """The page says "Give a reason for each candidate": an empty (or blank) reason is refused on the final save."""
    blank = {i: {**FULL[i], "reason": "  " if i == 1 else FULL[i]["reason"]} for i in range(3)}
    with pytest.raises(ApplicationError) as refused:
        preference_save(annotator=annotator, conversation_id=reserved.id, ratings=blank, ranking="1>2=3",
                        client_request_id="x", final=True)
    assert refused.value.code == "incomplete"
    assert refused.value.message == "Complete before saving: candidate 2 (reason)."
    assert refused.value.extra["missing"] == ["candidate 2 reason"]
    assert not Rating.objects.filter(is_final=True).exists() and not Ranking.objects.exists()
    # A draft may lack anything; the reason typed later completes it.
    preference_save(annotator=annotator, conversation_id=reserved.id, ratings=blank, ranking="", final=False)
    preference_save(annotator=annotator, conversation_id=reserved.id, ratings={1: {"reason": "Misreads the axis."}},
                    ranking="1>2=3", client_request_id="x", final=True)
    assert Rating.objects.get(turn__index=1).comment == "Misreads the axis."


def test_one_message_names_everything_missing_ranking_included(reserved, annotator):
    ratings = {0: FULL[0], 1: {"helpfulness": 3, "faithfulness": 3, "ethics": 3, "reason": ""}, 2: {"ethics": 4}}
    with pytest.raises(ApplicationError) as refused:
        preference_save(annotator=annotator, conversation_id=reserved.id, ratings=ratings, ranking="",
                        client_request_id="x", final=True)
    assert refused.value.message == ("Complete before saving: candidate 2 (reason), candidate 3 (helpfulness, "
                                     "faithfulness, reason) and the ranking.")
    assert refused.value.extra["missing"] == ["candidate 2 reason", "candidate 3 helpfulness",
                                              "candidate 3 faithfulness", "candidate 3 reason", "ranking"]


def test_a_batch_may_make_reasons_optional(tmp_path, annotator):
    report = batch_import(path=write_jsonl(tmp_path / "opt.jsonl", RECORDS[1:]), name="optional", kind="preference",
                          settings={"overlap": 1, "reasons_required": False})
    assert report.status == "imported", report.render()
    batch = Batch.objects.get(name="optional")
    assert batch.reasons_required is False
    conversation = assignment_next(annotator=annotator).work_item.conversation
    preference_save(annotator=annotator, conversation_id=conversation.id, ranking="2>1", client_request_id="x",
                    ratings={i: {"helpfulness": 3, "faithfulness": 3, "ethics": 3} for i in range(2)}, final=True)
    assert Ranking.objects.get().is_final
    bad = batch_import(path=write_jsonl(tmp_path / "bad.jsonl", RECORDS[1:]), name="bad-setting",
                       kind="preference", settings={"reasons_required": "no"})
    assert "settings.reasons_required: must be true or false, got 'no'" in bad.render()


def test_api_refuses_an_empty_reason(api_client, reserved, annotator):
    api_client.force_authenticate(annotator)
    url = reverse("api-conversation-preferences", args=[reserved.id])
    body = {"ratings": [{"turn": i, **FULL[i], "reason": ""} for i in range(3)], "ranking": "1>2=3", "final": True,
            "client_request_id": "api"}
    response = api_client.post(url, body, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == ("Complete before saving: candidate 1 (reason), candidate 2 (reason) and "
                                         "candidate 3 (reason).")
    assert Assignment.objects.get(annotator=annotator).status == Assignment.Status.ACTIVE


def test_the_page_without_javascript_refuses_an_empty_reason_and_ranks_by_positions(client, reserved, annotator):
    client.force_login(annotator)
    url = reverse("fire-rate", args=[reserved.id])
    form = {"client_request_id": "form", **{f"{d}-{i}": "4" for i in range(3) for d in ("helpfulness", "faithfulness",
                                                                                          "ethics")},
            "rank-0": "2", "rank-1": "1", "rank-2": "2", "comment-0": "Fine.", "comment-1": "Best.", "comment-2": ""}
    refused = client.post(url, form)
    assert refused.status_code == 400 and "Complete before saving: candidate 3 (reason)." in refused.content.decode()
    saved = client.post(url, {**form, "comment-2": "Vague."})
    assert saved.status_code == 302
    assert Ranking.objects.get(annotator=annotator).ranking == "2>1=3"


@pytest.mark.parametrize("positions, text", [
    ({1: 2, 2: 1, 3: 2}, "2>1=3"), ({1: 1, 2: 1}, "1=2"), ({1: 3, 2: 1, 3: 2}, "2>3>1"), ({1: 1, 2: None}, ""),
    ({1: 1}, ""),
])
def test_ranking_from_positions(positions, text):
    assert ranking_from_positions(positions, max(len(positions), 2)) == text


@pytest.mark.parametrize("groups, scores, found", [
    # 2 is ranked above 1, but 1 is at least as good everywhere and better in helpfulness.
    ([[2], [1]], {1: (5, 4, 5), 2: (4, 4, 5)}, [(2, 1)]),
    ([[1], [2]], {1: (5, 4, 5), 2: (4, 4, 5)}, []),
    # Mixed scores (better helpfulness, worse faithfulness): either order is defensible.
    ([[2], [1]], {1: (5, 3, 5), 2: (4, 4, 5)}, []),
    # Equal scores, a strict order: no contradiction; a tie is never one.
    ([[2], [1]], {1: (4, 4, 4), 2: (4, 4, 4)}, []), ([[1, 2]], {1: (5, 5, 5), 2: (1, 1, 1)}, []),
    # Three candidates: 3 > 1 > 2 while 2 dominates both.
    ([[3], [1], [2]], {1: (3, 3, 3), 2: (4, 4, 4), 3: (2, 2, 2)}, [(1, 2), (3, 1), (3, 2)]),
])
def test_ranking_contradictions(groups, scores, found):
    assert ranking_contradictions(groups, scores) == found


def test_researchers_read_every_raters_judgments_and_raters_only_their_own(api_client, tmp_path, annotator):
    named = [dict(RECORDS[1], models=["gpt-4o", "llava"])]
    report = batch_import(path=write_jsonl(tmp_path / "named.jsonl", named), name="named", kind="preference",
                          settings={"overlap": 2})
    assert report.status == "imported", report.render()
    batch = Batch.objects.get(name="named")
    other = UserFactory(username="bob", pseudonym="ann-bob")
    for rater, ranking, final in ((annotator, "2>1", True), (other, "1=2", False)):
        conversation = assignment_next(annotator=rater).work_item.conversation
        preference_save(annotator=rater, conversation_id=conversation.id, ranking=ranking, client_request_id="c",
                        final=final, ratings={i: {"helpfulness": 4, "faithfulness": 3 + i, "ethics": 5,
                                                  "reason": f"{rater.username} {i}"} for i in range(2)})
    url = reverse("api-conversation", args=[conversation.id])
    researcher = UserFactory(username="rex", role=User.Role.RESEARCHER)
    batch.members.add(researcher)
    api_client.force_authenticate(researcher)
    body = api_client.get(url).json()
    assert body["models"] == ["gpt-4o", "llava"] and body["can_rate"] is False
    assert [(j["rater"], j["ranking"], j["final"]) for j in body["judgments"]] == sorted(
        [(annotator.pseudonym, "2>1", True), ("ann-bob", "1=2", False)])  # by pseudonym
    bob = next(j for j in body["judgments"] if j["rater"] == "ann-bob")
    assert bob["scores"] == [
        {"candidate": 1, "turn": 0, "helpfulness": 4, "faithfulness": 3, "ethics": 5, "reason": "bob 0"},
        {"candidate": 2, "turn": 1, "helpfulness": 4, "faithfulness": 4, "ethics": 5, "reason": "bob 1"}]
    # A rater sees their own ratings only, never the others' or the models.
    api_client.force_authenticate(other)
    own = api_client.get(url).json()
    assert "judgments" not in own and "models" not in own and own["ranking"] == "1=2"
    # A researcher who is not a member: 404.
    api_client.force_authenticate(UserFactory(username="stranger", role=User.Role.RESEARCHER))
    assert api_client.get(url).status_code == 404
