"""The report pages in Simplified Chinese, the files in English: a researcher reading in Chinese sees Table 3 and 4's
titles, columns and notes, the FIRE and preference tables translated, while every download, the API's report,
`export_tables` and `export_fire` give the same English bytes as for an English reader (papers' tables stay exact)."""

import json
import re
from html import unescape

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import translation

from annotate.models import ModelConfig, User
from evaluation.exports.filters import ReportFilters
from evaluation.interfeedback import selectors
from tests.annotate.bench.test_bench_engine import bench_batch, run_all, start  # noqa: F401  (the fixture)
from tests.evaluation.builders import counted_batch
from tests.evaluation.fire.test_fire_reports import rate_all
from tests.factories import ModelConfigFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _back_to_english():
    yield
    translation.activate(settings.LANGUAGE_CODE)


def reader(language: str, batch) -> Client:
    user = UserFactory(username=f"reader-{language or 'browser'}", role=User.Role.RESEARCHER, language=language)
    batch.members.add(user)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def batch(annotator):
    model = ModelConfigFactory(name="gpt-4o", backend=ModelConfig.Backend.REPLAY)
    return counted_batch(model, annotator=annotator)


def table_of(html: str, table_id: str) -> dict:
    """A rendered _table.html: caption, header cells, body rows and the notes after it."""
    match = re.search(rf'<table[^>]*id="{table_id}".*?</table>((?:\s*<p class="muted small">.*?</p>)*)', html, re.S)
    # the n per cell (shown by a toggle) aside: the values as the paper prints them
    table, notes = re.sub(r'<span class="cell-n"[^>]*>.*?</span>', "", match.group(0), flags=re.S), match.group(1)
    rows = [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
    return {"caption": re.search(r"<caption>(.*?)</caption>", table, re.S).group(1), "header": rows[0],
            "rows": rows[1:], "notes": re.findall(r'<p class="muted small">(.*?)</p>', notes)}


def test_tables_3_and_4_in_chinese(batch):
    html = reader("zh-hans", batch).get(reverse("research-report", args=[batch.id])).content.decode()
    accuracy = table_of(html, "accuracy-table")
    assert accuracy["caption"] == "各模型在 InterFeedback-Human 上的准确率（%）"
    assert accuracy["header"] == ["模型", "Visual Logic", "平均"]  # a category is data: as imported
    assert accuracy["rows"] == [["gpt-4o", "21.3", "21.3"]]
    assert accuracy["notes"][:2] == ["准确率 = 第 0 轮答对的会话数 / 会话数。",
                                     "平均值按该模型的全部会话合并计算，而不是各类别列的均值。"]
    correction = table_of(html, "correction-table")
    assert correction["caption"] == "InterFeedback-Human 上各反馈轮次的纠正率（%）"
    assert correction["header"] == ["模型", "轮次", "Visual Logic", "平均"]
    assert correction["rows"][0] == ["gpt-4o", "1", "14.3", "14.3"]
    assert "第 3 轮反馈包含标准答案。" in correction["notes"]
    for english in ("Accuracy (%) of models", "Average is pooled", "Round 3 feedback includes"):
        assert english not in html


def test_the_english_report_is_unchanged(batch):
    html = reader("en", batch).get(reverse("research-report", args=[batch.id])).content.decode()
    accuracy = table_of(html, "accuracy-table")
    assert accuracy["caption"] == "Accuracy (%) of models on InterFeedback-Human"
    assert accuracy["header"] == ["Model", "Visual Logic", "Average"]
    assert accuracy["notes"][0] == "Accuracy = sessions answered correctly in round 0 / sessions."


def test_a_filter_note_is_translated_on_the_page_only(batch):
    url = reverse("research-report", args=[batch.id]) + "?category=Visual+Logic"
    html = reader("zh-hans", batch).get(url).content.decode()
    assert "已筛选：category=Visual Logic" in table_of(html, "accuracy-table")["notes"]
    only = ReportFilters(category="Visual Logic")
    accuracy, _ = selectors.report_tables(batch, selectors.outcome_counts(batch, only), only)
    assert accuracy.notes[-1] == "Filtered: category=Visual Logic"


@pytest.mark.parametrize("name", ["accuracy", "correction"])
@pytest.mark.parametrize("fmt", ["csv", "md", "tex", "json"])
def test_downloads_are_the_same_english_bytes_in_every_language(batch, name, fmt):
    url = reverse("research-export", args=[batch.id, name, fmt])
    chinese = reader("zh-hans", batch).get(url)
    english = reader("en", batch).get(url)
    assert chinese.status_code == english.status_code == 200
    assert chinese.content == english.content
    text = chinese.content.decode()
    assert "Model" in text and "Average" in text and not re.search(r"[\u4e00-\u9fff]", text)


def test_the_api_report_and_export_tables_stay_english_under_chinese(batch, capsys):
    english = reader("en", batch).get(reverse("api-batch-report", args=[batch.id])).json()
    chinese_client = reader("zh-hans", batch)
    chinese = chinese_client.get(reverse("api-batch-report", args=[batch.id]), HTTP_ACCEPT_LANGUAGE="zh-CN").json()
    assert chinese["tables"] == english["tables"]
    assert english["tables"]["accuracy"]["title"] == "Accuracy (%) of models on InterFeedback-Human"
    api_csv = chinese_client.get(reverse("api-batch-table", args=[batch.id, "correction", "csv"]))
    assert api_csv.status_code == 200 and api_csv.content.decode().startswith(
        "Model,# Round,Visual Logic,Visual Logic (k),Visual Logic (n),Average,Average (k),Average (n)")

    call_command("export_tables", "--batch", batch.name, "--table", "accuracy", "--format", "md")
    in_english = capsys.readouterr().out
    with translation.override("zh-hans"):
        call_command("export_tables", "--batch", batch.name, "--table", "accuracy", "--format", "md")
    assert capsys.readouterr().out == in_english
    assert "**Accuracy (%) of models on InterFeedback-Human**" in in_english


def test_tables_built_under_chinese_equal_the_english_ones(batch):
    """What a cache would keep (a built table) does not depend on the request's language."""
    counts = selectors.outcome_counts(batch)
    with translation.override("zh-hans"):
        built_in_chinese = selectors.report_tables(batch, counts, ReportFilters())
    built_in_english = selectors.report_tables(batch, counts, ReportFilters())
    for chinese, english in zip(built_in_chinese, built_in_english, strict=True):
        assert (chinese.title, chinese.columns, chinese.rows, chinese.notes) == (
            english.title, english.columns, english.rows, english.notes)
        assert json.dumps([chinese.title, *chinese.columns, *chinese.notes]).isascii()


def test_the_fire_report_in_chinese_and_its_downloads_in_english(fire_batch, raters, capsys):
    rate_all(raters)
    chinese = reader("zh-hans", fire_batch)
    html = chinese.get(reverse("research-report", args=[fire_batch.id])).content.decode()
    a1 = table_of(html, "fire-table-a1-split-table")
    assert a1["caption"] == "FIRE 教师反馈与学生回答的人工评分（1-5）— fire-sample"
    assert a1["header"] == ["数据划分", "反馈评分数", "反馈", "反馈 95% 置信区间", "回答评分数", "回答",
                            "回答 95% 置信区间"]
    assert a1["rows"][-1][0] == "全部" and "4.27" in a1["rows"][-1]
    by_turn = table_of(html, "fire-summary-turn-table")
    assert by_turn["header"][:3] == ["轮次", "类型", "评分数"]
    assert {row[1] for row in by_turn["rows"]} == {"反馈", "回答"}
    assert by_turn["notes"][0].endswith("轮次：评分页面上显示的编号（1 = 学生的第一条回答）。")
    agreement = table_of(html, "fire-agreement-split-table")
    assert agreement["header"][:4] == ["范围", "条目数", "评分者", "评分数"]
    assert "Human ratings (1-5)" not in html and "Mean FIRE ratings" not in html

    call_command("export_fire", "--batch", fire_batch.name, "--what", "summary", "--by", "turn", "--format", "csv")
    command_csv = capsys.readouterr().out
    download = chinese.get(reverse("research-fire-export", args=[fire_batch.id, "summary", "csv"]) + "?by=turn")
    assert download.content.decode() == command_csv
    assert command_csv.startswith("Turn,Kind,N,Mean,95% CI low,95% CI high") and ",feedback," in command_csv


def test_a_fire_report_without_ratings_says_why_in_chinese(fire_batch):
    page = reader("zh-hans", fire_batch).get(reverse("research-report", args=[fire_batch.id])).content.decode()
    assert "批次 'fire-sample' 还没有可供报告的最终 FIRE 评分。" in unescape(page)
    download = reader("en", fire_batch).get(reverse("research-fire-export", args=[fire_batch.id, "table-a1", "csv"]))
    assert download.status_code == 400
    assert download.content.decode() == "Batch 'fire-sample' has no final FIRE ratings to report yet."


def test_the_preference_report_in_chinese_and_its_tables_in_english(tmp_path):
    from tests.evaluation.preference.study import import_study, rate, raters

    study = import_study(tmp_path)
    rate(study, raters())
    chinese = reader("zh-hans", study)
    html = chinese.get(reverse("research-preferences", args=[study.id])).content.decode()
    assert '<h2 id="h-pairs">两两偏好</h2>' in html and '<h2 id="h-scores">各模型的候选回答评分</h2>' in html
    pairs = table_of(html, "pairs-table")
    assert pairs["caption"] == f"两两偏好（胜 / 平 / 负）— {study.name}"
    assert pairs["header"][:4] == ["模型 A", "模型 B", "条目数", "判断数"]
    scores = table_of(html, "scores-table")
    assert scores["header"][:5] == ["模型", "评分数", "有用性", "有用性 95% 置信区间下限", "有用性 95% 置信区间上限"]
    agreement = table_of(html, "agreement-table")
    assert agreement["rows"][0][0] == "全部评分者"
    assert "模型按名称排序（名称中的数字按数值比较）。" in scores["notes"]

    english = reader("en", study)
    for name in ("pairs", "scores"):
        url = reverse("research-preference-export", args=[study.id, name, "csv"])
        assert chinese.get(url).content == english.get(url).content
    scores_csv = chinese.get(reverse("research-preference-export", args=[study.id, "scores", "csv"])).content.decode()
    assert scores_csv.startswith("Model,Ratings,Helpfulness,Helpfulness 95% CI low,Helpfulness 95% CI high,")


def test_bench_tables_in_chinese_and_their_downloads_in_english(bench_batch):  # noqa: F811
    run = start(bench_batch, lanes=1)
    run_all(run)
    chinese, english = reader("zh-hans", bench_batch), reader("en", bench_batch)
    page = chinese.get(reverse("bench-run-page", args=[run.pk])).content.decode()
    table1 = table_of(page, "bench-table")
    assert table1["caption"].startswith(f"{bench_batch.name} 上的 InterFeedback-Bench（运行 {run.pk}）")
    assert table1["header"] == ["", "p-one", "p-two"]  # the providers' group headings: as named
    assert table1["rows"][0][:6] == ["模型", "准确率（%）", "负样本数", "测试样本数", "详细反馈（%）", "简单反馈（%）"]
    compare = chinese.get(reverse("bench-compare-page", args=[run.pk])).content.decode()
    assert table_of(compare, "compare-mcnemar")["header"][:3] == ["接收模型", "反馈模型", "比较"]
    for url in (reverse("bench-run-table", args=[run.pk, "md"]), reverse("bench-compare-download", args=[run.pk, "csv"])):
        assert chinese.get(url).content == english.get(url).content
    table_md = english.get(reverse("bench-run-table", args=[run.pk, "md"])).content.decode()
    assert table_md.startswith(f"**InterFeedback-Bench on {bench_batch.name} (run {run.pk}): correction rate with LMM")
    assert "| # Test | Detail (%) | Simple (%) |" in table_md and "Column names as InterFeedback's Table 1." in table_md
