"""python manage.py run_fire --batch NAME --mode free --students a,b --teachers t [--baseline a] [--n-max 5]
    [--ignore-ids c1,c2]

FIRE's evaluation on an imported FIRE batch, run by the app: ``--mode fixed`` (students and/or teachers on the
recorded history: Tables 2 and 3) or ``--mode free`` (every student converses with every teacher: Tables 4 and 5).
Resume or cancel with ``run_bench --resume RUN`` / ``--cancel RUN``; tables with
``export_tables --run ID --table fire-fixed|fire-free``.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.bench import services
from annotate.errors import ApplicationError
from annotate.management.runs import run_drive, run_report
from annotate.models import Batch


class Command(BaseCommand):
    help = "Run FIRE fixed or free dialogues with student and teacher models on an imported FIRE batch"

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="the imported FIRE batch (its conversations)")
        parser.add_argument("--mode", required=True, choices=["fixed", "free"])
        parser.add_argument("--students", default="", help="comma-separated student model names")
        parser.add_argument("--teachers", default="", help="comma-separated teacher model names")
        parser.add_argument("--baseline", default="", help="the student whose AT is 1 in Table 4 (default: first)")
        parser.add_argument("--n-max", type=int, default=5, help="turns a free dialogue may take (default 5)")
        parser.add_argument("--threshold", type=int, default=8, help="a score that ends a dialogue (default 8)")
        parser.add_argument("--ignore-ids", default="",
                            help="comma-separated conversation ids the tables leave out (FIRE's data/ignore_ids.json)")
        parser.add_argument("--lanes", type=int, default=4)
        parser.add_argument("--in-process", action="store_true", help="run the lanes here, not on the workers")
        parser.add_argument("--no-follow", action="store_true", help="start and return at once")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        try:
            run = services.fire_run_create(
                batch=batch, protocol=f"fire_{opts['mode']}", students=opts["students"], teachers=opts["teachers"],
                baseline=opts["baseline"], n_max=opts["n_max"], threshold=opts["threshold"], lanes=opts["lanes"],
                ignored_ids=opts["ignore_ids"], dispatch=not opts["in_process"])
        except ApplicationError as error:
            raise CommandError(error.message) from None
        run = run_drive(self, run, in_process=opts["in_process"], no_follow=opts["no_follow"])
        progress = services.bench_progress(run)
        run_report(self, run, table=f"fire-{opts['mode']}",
                   done=f"{progress['model_calls']:,} model calls, {progress['turns']:,} turns written")
