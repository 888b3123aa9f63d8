"""What run_bench and run_fire share: driving a bench run from the command line and its last lines."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotate.bench import engine
from annotate.bench.follow import follow
from annotate.models import BenchRun


def run_drive(command: BaseCommand, run: BenchRun, *, in_process: bool, no_follow: bool) -> BenchRun:
    """Run the lanes in this process (``--in-process``), or follow the run on the workers unless ``--no-follow``
    (Ctrl+C stops following, not the run); the run as it is then."""
    if in_process:
        for lane in range(run.lanes):
            engine.lane_run(run_id=run.pk, lane=lane)
    elif not no_follow:
        follow(run, command.stdout.write)
    run.refresh_from_db()
    return run


def run_report(command: BaseCommand, run: BenchRun, *, done: str, table: str) -> None:
    """The run's status with ``done`` (what it has done), its error, and once finished how to print its tables."""
    command.stdout.write(f"Run {run.pk} on {run.batch.name}: {run.get_status_display()} — {done}.")
    if run.error:
        command.stdout.write(command.style.ERROR(run.error))
    if run.status == BenchRun.Status.DONE:
        command.stdout.write(f"Tables: python manage.py export_tables --run {run.pk} --table {table} --format md")
