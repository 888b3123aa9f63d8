"""The live dashboard of a preference batch: its "by model" rows are the sets of models an item compares (the
records' `models` lists, in any order), its "by category" rows the records' sources; each table's rows add up to
the batch's totals, on the page as in the snapshot."""

import re

import pytest
from django.urls import reverse

from annotate.watch.selectors import batch_dashboard
from tests.evaluation.preference.study import PLAN, RECORDS, import_study, rate, raters

pytestmark = pytest.mark.django_db

# A fourth item compares two of the models and names no source.
PAIR = {"id": "q4", "question": "What is 2 + 2?", "responses": ["4.", "5."], "models": ["beta", "alpha"]}
PAIR_PLAN = {"r1": ("1>2", [(5, 5, 5, "Right."), (1, 1, 5, "Wrong.")]), "r2": "skip",
             "r3": ("1>2", [(5, 5, 5, "Right."), (2, 1, 5, "Wrong.")])}
COUNTS = ("needed", "done", "in_progress", "left")


@pytest.fixture
def batch(tmp_path, researcher):
    batch = import_study(tmp_path, records=[*RECORDS, PAIR])
    batch.members.add(researcher)
    rate(batch, raters(), plan={name: {**items, "q4": PAIR_PLAN[name]} for name, items in PLAN.items()})
    return batch


def test_the_tables_by_model_and_by_category_add_up_to_the_totals(batch):
    d = batch_dashboard(batch)
    assert d["totals"] == {"needed": 12, "done": 10, "in_progress": 0, "left": 2}  # 4 items x K=3; r2 skipped two
    assert {row["name"]: row["done"] for row in d["by_model"]} == {"alpha · beta · gamma": 8, "alpha · beta": 2}
    assert {row["name"]: (row["needed"], row["done"]) for row in d["by_category"]} == {
        "mm-rlhf": (6, 6), "text": (3, 2), "—": (3, 2)}
    for table in ("by_model", "by_category"):
        assert {key: sum(row[key] for row in d[table]) for key in COUNTS} == d["totals"], table


def test_the_page_shows_the_rows(client, researcher, batch):
    client.force_login(researcher)
    page = client.get(reverse("research-dashboard", args=[batch.id])).content.decode()
    for table, names in (("by-model", ["alpha · beta", "alpha · beta · gamma"]),
                         ("by-category", ["mm-rlhf", "text", "—"])):
        body = re.search(rf'<table[^>]*id="{table}".*?<tbody>(.*?)</tbody>', page, re.S).group(1)
        rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(\d+)</td>", body)
        assert sorted(name for name, _ in rows) == sorted(names), table
        assert sum(int(done) for _, done in rows) == 10, table
