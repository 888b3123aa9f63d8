"""Tokens and cost per model of a batch, from the rounds' usage and the models' prices, and the batch budget:
once spent, no new session starts (sessions under way finish), and the researcher is told on the report and in
the API. Prices and the budget are set through the API, the page forms and the commands."""

import io
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.costs import batch_budget_update, batch_costs, batch_spent
from annotate.models import Batch, ModelConfig, Round, User
from annotate.queue.services import assignment_next, nothing_to_serve
from tests.annotate.helpers import run_pending_round
from tests.annotate.imports.files import task, write_zip
from tests.factories import ModelConfigFactory, UserFactory, make_batch

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_dispatch")]


def answered(session, prompt, completion):
    Round.objects.filter(session=session, index=0).update(generation_status=Round.Generation.DONE,
                                                            prompt_tokens=prompt, completion_tokens=completion)


def test_cost_per_model_from_usage_and_prices():
    priced = ModelConfigFactory(name="priced", display_name="Priced", input_price_per_million=Decimal("2.5"),
                                output_price_per_million=Decimal("10"))
    free = ModelConfigFactory(name="unpriced")
    batch = make_batch(models=[priced, free], tasks=3)
    sessions = [assignment_next(annotator=UserFactory(), batch=batch).session for _ in range(6)]
    for session in sessions:
        if session.model_config_id == priced.id:
            answered(session, 1000, 200)
        else:
            answered(session, None, None)  # a server that reports no usage: counted as such, never estimated
    priced_row, free_row = sorted(batch_costs(batch), key=lambda c: c.slug)
    assert (priced_row.rounds, priced_row.prompt_tokens, priced_row.completion_tokens) == (3, 3000, 600)
    assert priced_row.cost == Decimal("0.0135")  # (3000 x 2.5 + 600 x 10) / 1e6
    assert free_row.cost is None and free_row.rounds_without_usage == 3 and free_row.model == "unpriced"
    assert batch_spent(batch) == Decimal("0.0135")

    out = io.StringIO()  # the same figures exported as a table (also in the study bundle)
    call_command("export_tables", "--batch", batch.name, "--table", "costs", "--format", "csv", stdout=out)
    rows = out.getvalue().splitlines()
    assert rows[0] == "Model,Calls,Calls without usage,Prompt tokens,Completion tokens,Cost"
    assert rows[1:3] == ["Priced,3,0,3000,600,0.0135", "unpriced,3,3,0,0,"]  # no price: no cost (empty)


def test_a_reached_budget_starts_no_new_session_and_the_researcher_is_told(client, api_client, researcher):
    model = ModelConfigFactory(input_price_per_million=Decimal("1000"), output_price_per_million=Decimal("1000"))
    batch = make_batch(models=[model], tasks=3, members=[researcher])
    batch.budget = Decimal("1.00")
    batch.save(update_fields=["budget"])
    first = assignment_next(annotator=UserFactory(), batch=batch)
    answered(first.session, 600, 400)  # 1,000 tokens x 1,000 per million = 1.00: the budget
    assert batch_budget_update(batch) is True
    batch.refresh_from_db()
    late = UserFactory()
    assert assignment_next(annotator=late, batch=batch) is None and assignment_next(annotator=late) is None
    assert nothing_to_serve(annotator=late, batch=batch).state == "done"
    assert assignment_next(annotator=first.annotator, batch=batch).pk == first.pk  # under way: it goes on

    client.force_login(researcher)
    page = client.get(reverse("research-report", args=[batch.id])).content.decode()
    assert "Budget reached: 1.00 of 1.00 spent; no new sessions start" in page and 'id="cost-table"' in page
    api_client.force_authenticate(researcher)
    report = api_client.get(reverse("api-batch-report", args=[batch.id])).json()
    assert report["budget"]["reached"] is True and report["costs"][0]["cost"] == "1.0000"

    from annotate.imports.batches import batch_settings_apply

    batch_settings_apply(batch=batch, settings={"budget": "5"})  # a raised budget opens the batch again
    assert Batch.objects.get(pk=batch.pk).budget_reached is False
    assert assignment_next(annotator=late, batch=Batch.objects.get(pk=batch.pk)) is not None


def test_the_round_that_spends_the_budget_closes_the_batch(simulated_model):
    simulated_model.input_price_per_million = simulated_model.output_price_per_million = Decimal("1")
    simulated_model.save()
    batch = make_batch(models=[simulated_model], tasks=2)
    Batch.objects.filter(pk=batch.pk).update(budget=Decimal("0"))  # no spending at all: closed after one answer
    session = assignment_next(annotator=UserFactory(), batch=batch).session
    run_pending_round(session)  # the worker's path: round_finish checks the budget
    assert Batch.objects.get(pk=batch.pk).budget_reached
    assert assignment_next(annotator=UserFactory(), batch=Batch.objects.get(pk=batch.pk)) is None


def test_prices_through_the_api_and_the_command(api_client):
    api_client.force_authenticate(UserFactory(role=User.Role.ADMIN, is_staff=True))
    created = api_client.post(reverse("api-models"), {"name": "gpt-x", "backend": "simulated",
                                                      "input_price_per_million": "2.50",
                                                      "output_price_per_million": "10"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["input_price_per_million"] == "2.5000"
    refused = api_client.patch(reverse("api-model", args=["gpt-x"]), {"input_price_per_million": "-1"},
                               format="json")
    assert refused.status_code == 400
    call_command("model", "edit", "gpt-x", "--output-price", "12.5", stdout=io.StringIO())
    assert ModelConfig.objects.get(name="gpt-x").output_price_per_million == Decimal("12.5")


def test_budget_at_import_and_its_errors(tmp_path, simulated_model):
    path = write_zip(tmp_path / "b.zip", [task("t1")])
    call_command("import_batch", str(path), "--name", "budgeted", "--models", simulated_model.name,
                 "--budget", "25.5", "--no-progress", stdout=io.StringIO())
    assert Batch.objects.get(name="budgeted").budget == Decimal("25.50")
    from django.core.management import CommandError

    out = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_batch", str(path), "--name", "budgeted", "--budget", "a lot", "--no-progress",
                     stdout=out, stderr=out)
    assert "settings.budget" in out.getvalue() and "'a lot'" in out.getvalue()
    assert Batch.objects.get(name="budgeted").budget == Decimal("25.50")  # nothing half-written
