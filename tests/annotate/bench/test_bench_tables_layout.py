"""InterFeedback-Bench Tables 1/2 in the paper's layout (``Model`` first, rows and provider groups in the order the
run was given, md and tex grouping each provider's three columns under its name), replay answers per provider,
``export_tables --run`` for any finished run, and the run page's wording. Cells derived by hand."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.bench import services
from annotate.models import BenchRun, User
from tests.annotate.bench.test_bench_engine import EXPECTED, RIGHT, WRONG, bench_batch, run_all  # noqa: F401
from tests.factories import BatchFactory, ModelConfigFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def export(capsys, *args: str) -> str:
    call_command("export_tables", *args)
    return capsys.readouterr().out


def test_rows_and_provider_groups_follow_the_order_the_run_was_given(bench_batch, capsys):  # noqa: F811
    run = services.bench_run_create(batch=bench_batch, receivers="r-two,r-one", providers="p-two,p-one",
                                    dispatch=False)
    run_all(run)
    # EXPECTED (test_bench_engine) holds the hand-computed cells with the providers as p-one then p-two.
    r_one, r_two = ([row[:3] + row[6:9] + row[3:6] for row in EXPECTED])
    rows = list(csv.reader(io.StringIO(export(capsys, "--batch", "bench-known", "--table", "bench", "--format",
                                              "csv"))))
    assert rows[0] == ["Model", "Acc (%)", "# Neg", "p-two: # Test", "p-two: Detail (%)", "p-two: Simple (%)",
                       "p-one: # Test", "p-one: Detail (%)", "p-one: Simple (%)"]
    assert rows[1:] == [[str(c) for c in r_two], [str(c) for c in r_one]]

    markdown = export(capsys, "--batch", "bench-known", "--table", "bench", "--format", "md").splitlines()
    header = markdown.index("| Model | Acc (%) | # Neg | p-two |  |  | p-one |  |  |")
    assert markdown[header + 1] == "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    assert markdown[header + 2] == "|  |  |  | # Test | Detail (%) | Simple (%) | # Test | Detail (%) | Simple (%) |"
    assert markdown[header + 3] == "| r-two | 31.3 | 11 | 2 | 50.0 | 100.0 | 2 | 0.0 | 50.0 |"
    assert markdown[header + 4] == "| r-one | 6.3 | 15 | 3 | 100.0 | 66.7 | 3 | 66.7 | 33.3 |"

    tex = export(capsys, "--batch", "bench-known", "--table", "bench", "--format", "tex").splitlines()
    top = tex.index(r"\toprule")
    assert tex[top + 1:top + 5] == [
        r" &  &  & \multicolumn{3}{c}{p-two} & \multicolumn{3}{c}{p-one} \\",
        r"\cmidrule(lr){4-6} \cmidrule(lr){7-9}",
        r"Model & Acc (\%) & \# Neg & \# Test & Detail (\%) & Simple (\%) & \# Test & Detail (\%) & Simple (\%) \\",
        r"\midrule",
    ]
    assert tex[top + 5] == r"r-two & 31.3 & 11 & 2 & 50.0 & 100.0 & 2 & 0.0 & 50.0 \\"
    document = json.loads(export(capsys, "--batch", "bench-known", "--table", "bench", "--format", "json"))
    assert [row["Model"] for row in document["rows"]] == ["r-two", "r-one"]
    # The paper's words for the columns (InterFeedback, Table 1's caption), percentages throughout.
    assert any("Simple (%): correction rate of using simple feedback (0 or 1)" in n for n in document["notes"])
    assert not any("(0-1)" in note for note in document["notes"])


def test_a_replayed_receiver_can_answer_each_providers_feedback_differently(capsys):
    batch = BatchFactory(name="bench-per-provider")
    # One task the receiver gets wrong at round 0 and both providers right. After detail feedback the receiver
    # stays wrong ("r:detail"), except after p-good's ("r:p-good:detail": right in round 1); simple feedback
    # corrects it in round 2 with either provider ("r:simple").
    TaskFactory(batch=batch, external_id="t0", answer_type="choice", options=["red", "green"], ground_truth="A",
                question="Which colour is the square?", recorded_answers={
                    "r": [WRONG] * 4, "r:detail": [WRONG] * 4, "r:p-good:detail": [WRONG, RIGHT],
                    "r:simple": [WRONG, WRONG, RIGHT], "p-good": [RIGHT], "p-plain": [RIGHT],
                    "p-good:feedback": ["Look at the left half."] * 3,
                    "p-plain:feedback": ["Check the colours again."] * 3})
    for name in ("r", "p-good", "p-plain"):
        ModelConfigFactory(name=name, backend="replay", backend_settings={"chunk_delay": 0})
    run = services.bench_run_create(batch=batch, receivers="r", providers="p-good,p-plain", lanes=1,
                                    dispatch=False)
    run_all(run)
    # Acc 0/1 = 0.0, # Neg 1; each provider's test set is t0: detail 1/1 with p-good, 0/1 with p-plain; simple
    # 1/1 with both.
    rows = list(csv.reader(io.StringIO(export(capsys, "--batch", batch.name, "--table", "bench", "--format",
                                              "csv"))))
    assert rows[1] == ["r", "0.0", "1", "1", "100.0", "100.0", "1", "0.0", "100.0"]


def test_export_tables_takes_any_finished_run_of_the_batch(bench_batch, capsys):  # noqa: F811
    first = services.bench_run_create(batch=bench_batch, receivers="r-one,r-two", providers="p-one,p-two",
                                      dispatch=False)
    run_all(first)
    later = services.bench_run_create(batch=bench_batch, receivers="r-one", providers="p-two", feedback="simple",
                                      dispatch=False)
    run_all(later)
    latest = export(capsys, "--batch", "bench-known", "--table", "bench", "--format", "csv")
    assert latest.splitlines()[1:] == ["r-one,6.3,15,3,,66.7"]  # the latest finished run: simple only, p-two (no Detail: empty)
    chosen = export(capsys, "--batch", "bench-known", "--table", "bench", "--format", "csv", "--run", str(first.pk))
    assert chosen.splitlines()[1] == ",".join(str(c) for c in EXPECTED[0])
    assert export(capsys, "--table", "bench", "--format", "csv", "--run", str(first.pk)) == chosen  # batch optional

    wrong_protocol = (rf"Run {first.pk} is an InterFeedback-Bench run; the fire-fixed table takes a FIRE fixed "
                      r"dialogues run \(bench takes this one\)")
    with pytest.raises(CommandError, match=wrong_protocol):
        export(capsys, "--table", "fire-fixed", "--format", "csv", "--run", str(first.pk))
    other = BatchFactory(name="another")
    with pytest.raises(CommandError, match=rf"Run {first.pk} belongs to batch 'bench-known', not 'another'"):
        export(capsys, "--batch", "another", "--table", "bench", "--format", "csv", "--run", str(first.pk))
    queued = services.bench_run_create(batch=bench_batch, receivers="r-one", providers="p-one", dispatch=False)
    with pytest.raises(CommandError, match=rf"Run {queued.pk} is queued: tables come from a finished run"):
        export(capsys, "--table", "bench", "--format", "csv", "--run", str(queued.pk))
    with pytest.raises(CommandError, match="No run 99999"):
        export(capsys, "--table", "bench", "--format", "csv", "--run", "99999")
    with pytest.raises(CommandError, match="--run is for the run tables"):
        export(capsys, "--batch", "bench-known", "--table", "accuracy", "--format", "csv", "--run", str(first.pk))
    assert other.pk


def test_the_run_page_says_done_once(bench_batch, client):  # noqa: F811
    run = services.bench_run_create(batch=bench_batch, receivers="r-one", providers="p-one", dispatch=False)
    run_all(run)
    run.refresh_from_db()
    assert run.status == BenchRun.Status.DONE
    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(researcher)
    client.force_login(researcher)
    page = client.get(f"/research/bench/{run.pk}/").content.decode()
    status = page[page.index('id="run-status"'):page.index("</p>", page.index('id="run-status"'))]
    assert status.count("Done") == 1
    # Table 1 on the page: the provider's heading over its three columns, then "# Test", "Detail (%)", ...
    assert '<th scope="colgroup" colspan="3" class="num">p-one</th>' in page
    assert '<th scope="col" class="num"># Test</th>' in page and "p-one: # Test" not in page
