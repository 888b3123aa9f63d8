"""End to end: import a FIRE file → three raters rate through the queue and the API → the Table A1 export (the
management command) has the hand-computed means."""

import csv
import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.imports.batches import import_fire
from annotate.models import Batch, WorkItem
from tests.annotate.rating.fire.fire_data import write_sample
from tests.evaluation.fire.test_fire_reports import SCORES
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_import_rate_and_export_table_a1(tmp_path):
    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire-e2e", images=images, overlap=3)
    assert report.status == "imported", report.render()
    batch = Batch.objects.get(name="fire-e2e")

    for username in SCORES:
        client = APIClient()
        client.force_authenticate(UserFactory(username=username))
        while (served := client.post(reverse("api-next"), {"batch": batch.name}, format="json")).json()["state"] == "item":
            conversation = client.get(reverse("api-conversation", args=[served.json()["conversation_id"]])).json()
            given = SCORES[username][conversation["external_id"]]
            rateable = [t["index"] for t in conversation["turns"] if t["is_rateable"]]
            assert sorted(given) == rateable
            # A draft first (autosave), then "Save scores and next".
            url = reverse("api-conversation-ratings", args=[conversation["id"]])
            first = rateable[0]
            assert client.post(url, {"ratings": [{"turn": first, "score": given[first]}]},
                               format="json").status_code == 200
            saved = client.post(url, {"ratings": [{"turn": t, "score": s} for t, s in given.items()], "final": True,
                                      "client_request_id": f"{username}-{conversation['id']}"}, format="json")
            assert saved.status_code == 200, saved.json()
        assert served.json() == {"state": "done"}  # nothing left for this rater

    assert sorted(WorkItem.objects.filter(batch=batch).values_list("completed_count", flat=True)) == [3, 3]
    late = APIClient()
    late.force_authenticate(UserFactory(username="rater4"))
    assert late.post(reverse("api-next"), {"batch": batch.name}, format="json").json() == {"state": "done"}  # K met

    out = tmp_path / "table_a1.csv"
    call_command("export_fire", batch=batch.name, what="table-a1", format="csv", out=str(out))
    rows = {row["Split"]: row for row in csv.DictReader(io.StringIO(out.read_text()))}
    assert {split: (Decimal(r["Feedback"]), Decimal(r["Response"])) for split, r in rows.items()} == {
        "fire_test": (Decimal("4.17"), Decimal("2.67")),
        "fire_train": (Decimal("4.33"), Decimal("4.17")),
        "All": (Decimal("4.27"), Decimal("3.67")),
    }
    assert rows["All"]["#Feedback"] == "15" and rows["All"]["#Response"] == "9"
