"""English phrases that pages translate (annotate.wording): a Phrase is its English text everywhere but the page
that shows it. The FIRE rating page shows the criteria, the scale and the turns' labels in the reader's language
while the API keeps English; a leak warning lists what it detected in the annotator's language while the record
keeps English; and every phrase in the code has its translation in the catalogs."""

import json
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import polib
import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from annotate.models import LeakWarning, Round
from annotate.queue.services import assignment_next
from annotate.rating.selectors import CRITERIA, SCALE
from annotate.wording import Phrase, phrase, phrase_in, shown
from evaluation.exports.renderers.html import html_table
from evaluation.exports.renderers.tables import render
from evaluation.table import Table, grouped_column
from tests.annotate.sessions.test_leak_oracle import awaiting_feedback
from tests.factories import UserFactory, make_batch

ROOT = Path(settings.BASE_DIR)
CATALOG = ROOT / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"


@pytest.fixture(autouse=True)
def _back_to_english():
    yield
    translation.activate(settings.LANGUAGE_CODE)


# --- the Phrase itself ------------------------------------------------------------------------------------------


def test_a_phrase_is_its_english_text_in_any_language():
    note = phrase("Filtered: %(filters)s", filters="model=gpt-4o")
    with translation.override("zh-hans"):
        assert note == "Filtered: model=gpt-4o" and str(note) == "Filtered: model=gpt-4o"
        assert json.dumps([note]) == '["Filtered: model=gpt-4o"]' and f"{note}" == "Filtered: model=gpt-4o"
        assert hash(note) == hash("Filtered: model=gpt-4o")
        assert note.shown() == "已筛选：model=gpt-4o"
    assert note.shown() == "Filtered: model=gpt-4o"


def test_a_phrase_survives_pickling_and_copies_as_a_phrase():
    """What a cache or a Celery result stores is the English text with its msgid: language-free."""
    title = phrase("Mean FIRE ratings per split — %(batch)s", batch="pilot")
    with translation.override("zh-hans"):
        stored = pickle.dumps(title)
    again = pickle.loads(stored)
    assert isinstance(again, Phrase) and again == "Mean FIRE ratings per split — pilot"
    with translation.override("zh-hans"):
        assert again.shown() == "各数据划分的 FIRE 平均评分 — pilot"


def test_context_and_nested_phrases_are_translated_together():
    split = phrase_in("dataset split", "Split")
    with translation.override("zh-hans"):
        assert split.shown() == "数据划分"
        note = phrase("%(note)s %(turn)s", note=phrase("Mean"), turn=phrase_in("conversation turn", "Turn"))
        assert note == "Mean Turn" and note.shown() == "均值轮次"
    assert shown(7) == 7 and shown("plain") == "plain"


def test_a_table_is_written_in_english_and_shown_translated():
    table = Table(title=phrase("Accuracy (%) of models on InterFeedback-Human"),
                  columns=[phrase_in("report table column", "Model"), grouped_column("GPT-4o", phrase("# Test"))],
                  rows=[[phrase_in("all rows of a table", "All"), 3]], column_groups=[("", 1), ("GPT-4o", 1)],
                  notes=[phrase("'-' = no sessions.")])
    with translation.override("zh-hans"):
        files = {fmt: render(table, fmt) for fmt in ("csv", "md", "tex", "json")}
        page = html_table(table)
    assert files == {fmt: render(table, fmt) for fmt in ("csv", "md", "tex", "json")}
    assert files["csv"] == "Model,GPT-4o: # Test\r\nAll,3\r\n"
    assert json.loads(files["json"])["rows"] == [{"Model": "All", "GPT-4o: # Test": 3}]
    assert page["title"] == "各模型在 InterFeedback-Human 上的准确率（%）"
    assert page["columns"] == ["模型", "测试样本数"] and page["column_groups"] == [("", 1), ("GPT-4o", 1)]
    assert page["rows"] == [[("全部", False, ""), ("3", True, "")]] and page["notes"] == ["“-”表示没有会话。"]


# --- the FIRE rating page ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_rating_page_shows_fire_criteria_and_scale_in_chinese_and_the_api_keeps_english(client, fire_batch):
    rater = UserFactory(username="li-rater", language="zh-hans")
    conversation = assignment_next(annotator=rater).work_item.conversation
    client.force_login(rater)
    body = client.get(reverse("fire-rate", args=[conversation.id])).content.decode()
    for chinese in ("正确性", "建设性", "清晰性", "改进", "是否准确指出了学生回答中的错误？", "很差", "优秀",
                    "为这条回答评分", "为这条反馈评分", "<span class=\"part-label\">思考:</span>",
                    "<span class=\"part-label\">分数:</span>", "学生", "教师"):
        assert chinese in body, chinese
    for english in ("Constructiveness", "Very poor", "Excellent", "Rate this response", ">Thought:<"):
        assert english not in body, english

    api = client.get(reverse("api-conversation", args=[conversation.id])).json()
    assert [c["name"] for c in api["criteria"]["feedback"]] == ["Correctness", "Relevance", "Clarity",
                                                                "Constructiveness"]
    assert [s["label"] for s in api["scale"]] == ["Very poor", "Poor", "Acceptable", "Good", "Excellent"]
    assert {p["label"] for t in api["turns"] for p in t["parts"]} >= {"Thought", "Answer", "Score", "Feedback"}


@pytest.mark.django_db
def test_the_preference_rating_page_names_its_three_dimensions_in_chinese(client, tmp_path):
    from tests.evaluation.preference.study import import_study

    batch = import_study(tmp_path)
    rater = UserFactory(username="chen", language="zh-hans")
    conversation = assignment_next(annotator=rater, batch=batch).work_item.conversation
    client.force_login(rater)
    body = client.get(reverse("fire-rate", args=[conversation.id])).content.decode()
    legends = re.findall(r"<legend>(\S+) <span", body)
    assert legends[:3] == ["有用性", "忠实性", "伦理"]
    assert "回答是否有效地回答了问题？" in body and "所述内容是否都与图片相符（没有幻觉）？" in body
    assert "Helpfulness" not in body and "Does the response answer" not in body
    api = client.get(reverse("api-conversation", args=[conversation.id])).json()
    assert [c["name"] for c in api["criteria"]["candidate"]] == ["Helpfulness", "Faithfulness", "Ethics"]


def test_every_criterion_and_scale_label_has_a_chinese_translation():
    with translation.override("zh-hans"):
        for name, help_text in (c for criteria in CRITERIA.values() for c in criteria):
            assert name.shown() != name and help_text.shown() != help_text, name
        assert [label.shown() for _, label in SCALE] == ["很差", "较差", "尚可", "良好", "优秀"]


# --- leak warnings ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("typed,detected,stored", [
    ("Is it C?", ["选项 C"], "option C"),
    ("Look for the triangle.", ["某个选项的文字：“Triangle”"], "an option's text: 'Triangle'"),
])
def test_a_leak_warning_lists_what_it_detected_in_the_annotators_language(client, simulated_model, no_dispatch,
                                                                         typed, detected, stored):
    batch = make_batch(models=[simulated_model], answer_type="choice", ground_truth="C",
                       options=["Circle", "Square", "Triangle", "Star"], question="Which one is it?")
    annotator = UserFactory(username="wang", language="zh-hans")
    session = awaiting_feedback(annotator, batch)
    client.force_login(annotator)  # the page's own session: the user's language applies
    response = client.post(reverse("api-session-feedback", args=[session.id]),
                           {"feedback": typed, "client_request_id": "r1"}, content_type="application/json")
    assert response.json()["detected"] == detected  # however the warning is answered (an error or a notice)
    assert LeakWarning.objects.get(session=session).stated_answer == stored  # the record stays English


@pytest.mark.django_db
def test_a_number_is_described_in_chinese_and_recorded_in_english(client, simulated_model, no_dispatch):
    batch = make_batch(models=[simulated_model], answer_type="number", ground_truth="7391", question="How many?")
    annotator = UserFactory(username="zhao", language="zh-hans")
    session = awaiting_feedback(annotator, batch)
    client.force_login(annotator)
    sent = client.post(reverse("api-session-feedback", args=[session.id]),
                       {"feedback": "Is it 7390?", "client_request_id": "r1"}, content_type="application/json")
    assert sent.json()["detected"] == ["数字 7390"]
    confirmed = client.post(reverse("api-session-feedback", args=[session.id]),
                            {"feedback": "Is it 7390?", "client_request_id": "r2", "confirm_leak": True},
                            content_type="application/json")
    assert confirmed.status_code == 201
    assert Round.objects.get(session=session, index=1).stated_answer == "the number 7390"


# --- the catalog covers every phrase ----------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="needs GNU gettext's xgettext")
def test_every_phrase_in_the_code_is_translated_in_the_catalog():
    """What `makemessages` collects with this project's phrase keywords from annotate/ and evaluation/ is in the zh
    catalog, translated: a new phrase cannot reach a page untranslated (or be missed by makemessages)."""
    from annotate.management.commands.makemessages import Command

    keywords = [option for option in Command.xgettext_options if option.startswith("--keyword=")]
    assert keywords == ["--keyword=phrase", "--keyword=phrase_in:1c,2"]
    sources = sorted(str(p.relative_to(ROOT)) for app in ("annotate", "evaluation") for p in (ROOT / app).rglob("*.py")
                     if "migrations" not in p.parts)
    pot = subprocess.run(["xgettext", "--language=Python", "--from-code=UTF-8", "--output=-", "-k", *keywords,
                          *sources], cwd=ROOT, capture_output=True, text=True, check=True)
    phrases = {(e.msgctxt, e.msgid) for e in polib.pofile(pot.stdout) if e.msgid}
    catalog = {(e.msgctxt, e.msgid) for e in polib.pofile(str(CATALOG)).translated_entries()}
    assert len(phrases) > 150  # the report tables, FIRE's criteria and scale, the leak warnings
    assert (None, "option %(letter)s") in phrases and ("rating criterion", "Constructiveness") in phrases
    assert sorted(phrases - catalog) == []
