"""The batch's tokens and cost per model as a table (the report's "Tokens and cost", exported like the others)."""

from __future__ import annotations

from annotate.costs import batch_costs, budget_message
from annotate.models import Batch
from evaluation.table import Table


def costs_table(batch: Batch) -> Table:
    costs = batch_costs(batch)
    notes = ["Tokens are the model servers' usage as each round saved it; rounds without usage are counted "
             "apart, never estimated. Cost = tokens x the model's price per million; '-' for a model without "
             "prices. Bench runs' rounds count too."]
    if message := budget_message(batch):
        notes.append(message)
    return Table(
        title=f"Tokens and cost per model — {batch.name}",
        columns=["Model", "Calls", "Calls without usage", "Prompt tokens", "Completion tokens", "Cost"],
        rows=[[c.model, c.rounds, c.rounds_without_usage, c.prompt_tokens, c.completion_tokens, c.cost]
              for c in costs],
        notes=notes)
