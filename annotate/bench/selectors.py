"""Who may see and start bench runs: admins, and researchers who are members of the run's batch; a run's models in
the order it was given them."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from annotate.errors import NotFound, PermissionDenied
from annotate.models import Batch, BenchRun, ModelConfig, User


def _in_run_order(run: BenchRun, role: str, models: Iterable[ModelConfig]) -> list[ModelConfig]:
    """The order the run was given (``--receivers a,b``: the paper's row order); runs from before it was stored,
    and any model it does not list, by name."""
    position = {pk: n for n, pk in enumerate((run.model_order or {}).get(role, []))}
    return sorted(models, key=lambda m: (position.get(m.pk, len(position)), m.name))


def run_receivers(run: BenchRun) -> list[ModelConfig]:
    """The receivers (FIRE: the students), in the run's order."""
    return _in_run_order(run, "receivers", run.receivers.all())


def run_providers(run: BenchRun) -> list[ModelConfig]:
    """The providers (FIRE: the teachers), in the run's order."""
    return _in_run_order(run, "providers", run.providers.all())


def readable_batch(user: User, *, batch_id: int | None = None, name: str | None = None) -> Batch:
    batches = Batch.objects.all()
    if not user.is_admin_role:
        if not user.is_researcher_role:
            raise PermissionDenied("Only researchers and admins work with bench runs.")
        batches = batches.filter(members=user)
    batch = batches.filter(pk=batch_id).first() if batch_id is not None else batches.filter(name=name).first()
    if batch is None:
        raise NotFound(f"No batch {batch_id if batch_id is not None else repr(name)} that you may read.")
    return batch


def readable_runs(user: User) -> QuerySet[BenchRun]:
    runs = BenchRun.objects.select_related("batch").prefetch_related("receivers", "providers")
    if user.is_admin_role:
        return runs
    if not user.is_researcher_role:
        raise PermissionDenied("Only researchers and admins work with bench runs.")
    return runs.filter(batch__members=user)


def readable_run(user: User, run_id: int) -> BenchRun:
    run = readable_runs(user).filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No bench run {run_id} that you may read.")
    return run
