"""Tokens and cost of a batch's model calls, per model, and the batch's budget.

Tokens are the server's usage as each round saved it (the `openai` backend's usage, the transformers backend's
own count); a round without usage is counted as such, never estimated. Cost = prompt tokens x input price +
completion tokens x output price, per million; a model without prices has no cost (None), never zero. Bench runs'
rounds count too: they spend the same budget."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Q, Sum

from annotate.models import Batch, Round

MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class ModelCost:
    model: str  # display name
    slug: str
    rounds: int
    rounds_without_usage: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal | None  # None: the model has no price


def batch_costs(batch: Batch) -> list[ModelCost]:
    """Per model of the batch's sessions: model calls that answered, their tokens and their cost (one query)."""
    rows = (Round.objects.filter(session__batch=batch, generation_status=Round.Generation.DONE)
            .values("session__model_config__name", "session__model_config__display_name",
                    "session__model_config__input_price_per_million",
                    "session__model_config__output_price_per_million")
            .annotate(rounds=Count("id"), prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens"),
                      unknown=Count("id", filter=Q(prompt_tokens__isnull=True) | Q(completion_tokens__isnull=True)))
            .order_by("session__model_config__name"))
    costs = []
    for row in rows:
        prompt, completion = row["prompt"] or 0, row["completion"] or 0
        price_in = row["session__model_config__input_price_per_million"]
        price_out = row["session__model_config__output_price_per_million"]
        cost = None
        if price_in is not None and price_out is not None:
            cost = ((prompt * price_in + completion * price_out) / MILLION).quantize(Decimal("0.0001"))
        costs.append(ModelCost(
            model=row["session__model_config__display_name"] or row["session__model_config__name"],
            slug=row["session__model_config__name"], rounds=row["rounds"], rounds_without_usage=row["unknown"],
            prompt_tokens=prompt, completion_tokens=completion, cost=cost))
    return costs


def batch_spent(batch: Batch) -> Decimal:
    """What the batch's priced models cost so far."""
    return sum((c.cost for c in batch_costs(batch) if c.cost is not None), Decimal(0))


def batch_budget_update(batch: Batch) -> bool:
    """Mark the batch over budget once its spending reaches the budget (the queue then starts no new session).
    Returns whether it is over budget. Called after each answered round of a batch with a budget."""
    if batch.budget is None:
        return False
    reached = batch_spent(batch) >= batch.budget
    if reached != batch.budget_reached:
        Batch.objects.filter(pk=batch.pk).update(budget_reached=reached)
        batch.budget_reached = reached
    return reached


def budget_message(batch: Batch) -> str:
    """What the report and the API tell the researcher about the budget ("" without one)."""
    if batch.budget is None:
        return ""
    spent = batch_spent(batch)
    if batch.budget_reached or spent >= batch.budget:
        return (f"Budget reached: {spent:.2f} of {batch.budget:.2f} spent; no new sessions start "
                "(sessions under way finish).")
    return f"Budget: {spent:.2f} of {batch.budget:.2f} spent."
