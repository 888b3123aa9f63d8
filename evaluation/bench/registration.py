"""What the run engine's results add to the exports registry: each batch's latest InterFeedback-Bench run
(Tables 1/2) and latest FIRE fixed- and free-dialogue runs (Tables 2-5), or a given finished run of the batch
(``export_tables --run ID``)."""

from __future__ import annotations

from annotate.errors import ApplicationError
from annotate.models import Batch, BenchRun
from evaluation.bench.tables import latest_run, run_table
from evaluation.exports import registry as exports
from evaluation.fire.runs import fire_run_tables
from evaluation.table import Table

# The exports made from one run's rows: the protocol of the run each takes.
RUN_EXPORTS: dict[str, str] = {"bench": BenchRun.Protocol.INTERFEEDBACK, "fire-fixed": BenchRun.Protocol.FIRE_FIXED,
                               "fire-free": BenchRun.Protocol.FIRE_FREE}


def run_for_export(batch: Batch, name: str, run: BenchRun | None = None) -> BenchRun:
    """The run a run table comes from: the given one, checked (the batch's, the table's protocol, finished), or
    the batch's latest finished run of the protocol."""
    protocol = RUN_EXPORTS[name]
    if run is None:
        return latest_run(batch, protocol=protocol)
    if run.batch_id != batch.pk:
        raise ApplicationError(f"Run {run.pk} belongs to batch {run.batch.name!r}, not {batch.name!r}.",
                               code="bad_run")
    if run.protocol != protocol:
        label = BenchRun.Protocol(run.protocol).label.split(":")[0]
        right = next(n for n, p in RUN_EXPORTS.items() if p == run.protocol)
        raise ApplicationError(f"Run {run.pk} is an {label} run; the {name} table takes a "
                               f"{BenchRun.Protocol(protocol).label.split(':')[0]} run ({right} takes this one).",
                               code="bad_run")
    if run.status != BenchRun.Status.DONE:
        raise ApplicationError(f"Run {run.pk} is {run.get_status_display().lower()}: tables come from a finished "
                               "run.", code="bad_run")
    return run


def run_tables(run: BenchRun) -> Table | list[Table]:
    """Tables 1/2 (or a person's replayed feedback) for a bench run; FIRE's two tables for a FIRE run."""
    return run_table(run) if run.protocol == BenchRun.Protocol.INTERFEEDBACK else fire_run_tables(run)


def build_run_export(batch: Batch, name: str, fmt: str, run: BenchRun | None = None) -> exports.Export:
    """The run table ``name`` of the given run (checked against the batch), else of the batch's latest one."""
    if name not in RUN_EXPORTS:
        raise ApplicationError(f"A run is given for the run tables ({', '.join(RUN_EXPORTS)}) only, not {name}.",
                               code="bad_run")
    exports.check_export(name, fmt)
    return exports.export_of(batch, name, fmt, run_tables(run_for_export(batch, name, run)))


for _name in RUN_EXPORTS:
    exports.register_export(_name, exports.TABLE_FORMATS,
                            lambda batch, fmt, filters, name=_name: run_tables(run_for_export(batch, name)))
