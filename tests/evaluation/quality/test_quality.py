"""Quality control: the per-annotator quality page (attention checks in the queue: tests/annotate/queue/test_attention_plan.py)."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Assignment, LeakWarning, Round, Session, User, VerdictOverride, WorkItem
from evaluation.quality.selectors import batch_quality
from tests.factories import ModelConfigFactory, TaskFactory, UserFactory, make_batch

pytestmark = pytest.mark.django_db




# --- the quality page ------------------------------------------------------------------------------------------------


def add_session(annotator, task, model, rounds, *, status=Session.Status.COMPLETED, corrected=None):
    item = WorkItem.objects.get(task=task, model_config=model)
    assignment = Assignment.objects.create(work_item=item, annotator=annotator, status=Assignment.Status.COMPLETED,
                                           lease_expires_at=timezone.now() + timedelta(minutes=5))
    session = Session.objects.create(batch=task.batch, task=task, model_config=model, annotator=annotator,
                                     assignment=assignment, status=status, corrected_round=corrected)
    made = []
    for index, fields in enumerate(rounds):
        made.append(Round.objects.create(session=session, index=index, generation_status=Round.Generation.DONE,
                                         feedback_kind="human" if index else "", **fields))
    return session, made


@pytest.fixture
def study(simulated_model, researcher):
    """Three annotators on a batch with two ordinary number tasks and two gold manual tasks."""
    batch = make_batch(models=[simulated_model], tasks=2, members=[researcher])
    scored = TaskFactory(batch=batch, is_gold=True, answer_type="manual", ground_truth="42",
                         metadata={"gold_check_type": "number"})
    unscored = TaskFactory(batch=batch, is_gold=True, answer_type="manual", ground_truth="a cat")
    from annotate.queue.services import work_items_create_for_batch
    work_items_create_for_batch(batch=batch)
    t1, t2 = batch.tasks.filter(is_gold=False).order_by("id")
    a, b, c = (UserFactory(username=n) for n in ("u-ann", "u-bea", "u-cid"))
    wrong = {"auto_verdict": False, "final_verdict": False, "verdict_source": "auto"}
    a_t1, _ = add_session(a, t1, simulated_model, [wrong, {**wrong, "typing_ms": 10000},
                                                   {**wrong, "typing_ms": 12000, "leak_flagged": True}])
    # ann was warned twice in round 2 (a right statement, then a wrong one she sent anyway); bea once, and heeded it.
    for stated, correct in (("the number 7391", True), ("the number 12", False)):
        LeakWarning.objects.create(session=a_t1, annotator=a, round_index=2, stated_answer=stated,
                                   stated_answer_correct=correct)
    add_session(a, scored, simulated_model, [{"answer_text": "Answer: 42", "final_verdict": True,
                                              "verdict_source": "annotator"}], corrected=0)
    add_session(a, unscored, simulated_model, [{"answer_text": "a dog", "final_verdict": False,
                                                "verdict_source": "annotator"}])
    b_t1, _ = add_session(b, t1, simulated_model, [wrong, {**wrong, "typing_ms": 1000}])
    LeakWarning.objects.create(session=b_t1, annotator=b, round_index=1, stated_answer="option C",
                               stated_answer_correct=True)
    _, (gold_round,) = add_session(b, scored, simulated_model, [{"answer_text": "Answer: 41", "final_verdict": False,
                                                                 "verdict_source": "reviewer"}])
    VerdictOverride.objects.create(round=gold_round, reviewer=researcher, old_verdict=True, new_verdict=False,
                                   reason="41 is not 42")
    item = WorkItem.objects.get(task=t2)
    Assignment.objects.create(work_item=item, annotator=b, status=Assignment.Status.SKIPPED,
                              skip_reason="image does not load", lease_expires_at=timezone.now())
    add_session(c, t1, simulated_model, [wrong, {**wrong, "typing_ms": 20000}])
    add_session(c, t2, simulated_model, [wrong], status=Session.Status.GENERATING)
    return batch, {u.username: u for u in (a, b, c)}


def test_quality_figures(study, django_assert_num_queries):
    batch, people = study
    with django_assert_num_queries(10):  # gold rounds: verdicts and first feedbacks; the 10th: the study's attention limit
        quality = batch_quality(batch)
    rows = {r.pseudonym: r for r in quality.annotators}
    a, b, c = (rows[people[n].pseudonym] for n in ("u-ann", "u-bea", "u-cid"))
    assert quality.median_typing_ms == 11000  # of 10000, 12000, 1000, 20000
    assert quality.median_session_typing_ms == 20000 and quality.fast_session_ms == 5000  # of 22000, 1000, 20000
    assert (a.sessions, a.sessions_completed, a.gold_sessions) == (3, 3, 2)
    assert (c.sessions, c.sessions_completed) == (2, 1)
    assert (a.median_typing_ms, b.median_typing_ms, c.median_typing_ms) == (11000, 1000, 20000)
    assert (a.fast_rounds, b.fast_rounds, c.fast_rounds) == (0, 1, 0)
    assert (a.fast_sessions, b.fast_sessions, c.fast_sessions) == (0, 1, 0)
    assert (a.leak_warnings, a.leaks_sent, a.leaks_stated_right) == (2, 1, 1)
    assert (b.leak_warnings, b.leaks_sent, b.leaks_stated_right) == (1, 0, 1)
    assert (c.leak_warnings, c.leaks_sent, c.leaks_stated_right) == (0, 0, 0)
    assert (b.skips, b.skip_reasons, a.skips) == (1, [("image does not load", 1)], 0)
    assert (a.manual_verdicts, b.manual_verdicts, c.manual_verdicts) == (2, 1, 0)
    # ann judged "Answer: 42" correct (right); bea judged "Answer: 41" correct (wrong, overridden since).
    assert (a.gold_judged, a.gold_agreed, a.gold_unscored, a.gold_accuracy) == (1, 1, 1, 1.0)
    assert (b.gold_judged, b.gold_agreed, b.gold_accuracy) == (1, 0, 0.0)
    assert (a.overrides_received, b.overrides_received) == (0, 1)
    assert a.flagged and b.flagged and not c.flagged


def test_query_count_does_not_grow_with_annotators(study, simulated_model, django_assert_num_queries):
    batch, _ = study
    t1 = batch.tasks.filter(is_gold=False).order_by("id").first()
    for n in range(5):
        add_session(UserFactory(), t1, simulated_model, [{"final_verdict": False}, {"typing_ms": 5000 + n}])
    with django_assert_num_queries(10):
        assert len(batch_quality(batch).annotators) == 8


def quality_url(batch):
    return reverse("research-quality", args=[batch.id])


def test_quality_page_for_members(client, researcher, study, django_assert_max_num_queries):
    batch, people = study
    client.force_login(researcher)
    with django_assert_max_num_queries(13):
        page = client.get(quality_url(batch))
    assert page.status_code == 200
    html = page.content.decode()
    for user in people.values():
        assert user.pseudonym in html and user.username not in html
    assert "image does not load" in html and "0% <span" in html  # bea's gold accuracy
    assert "Sent anyway" in html and "Stated right" in html
    row = html[html.index(people["u-ann"].pseudonym, html.index("<tbody>")):]
    cells = [cell.split(">", 1)[1] for cell in row.split("</td>")[:7]]
    assert cells[4:7] == ["2", "1", "1"]  # ann: warnings shown, sent anyway, stated right


def test_quality_page_refuses_annotators_and_non_members(client, annotator, outsider, study):
    batch, _ = study
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get(quality_url(batch)).status_code == 403
    client.force_login(UserFactory(username="nina", role=User.Role.RESEARCHER))
    assert client.get(quality_url(batch)).status_code == 404
    assert client.get(reverse("research-quality", args=[999999])).status_code == 404
    client.logout()
    assert client.get(quality_url(batch)).status_code == 302  # to the login page


def test_admin_sees_any_batch_and_an_empty_batch_renders(client, simulated_model):
    admin = UserFactory(username="ada", role=User.Role.ADMIN)
    batch = make_batch(models=[ModelConfigFactory()], tasks=1)
    client.force_login(admin)
    page = client.get(quality_url(batch))
    assert page.status_code == 200 and "No annotator has worked on this batch yet" in page.content.decode()
