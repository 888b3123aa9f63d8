"""python manage.py run_bench --batch NAME --receivers a,b --providers x,y [--feedback detail,simple] [--rounds 3]

Starts an InterFeedback-Bench run and follows it with a progress bar (Ctrl+C stops following, not the run).
``--in-process`` runs the lanes in this process instead of on the bench workers (small runs, no worker needed);
``--resume RUN`` goes on with a run after a crash, a cancel or a failed model call; ``--cancel RUN`` stops one.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.bench import services
from annotate.errors import ApplicationError
from annotate.management.runs import run_drive, run_report
from annotate.models import Batch, BenchRun


class Command(BaseCommand):
    help = "Run InterFeedback-Bench: LMM feedback providers correcting receiver models, rounds as in the paper"

    def add_arguments(self, parser):
        parser.add_argument("--batch", help="the InterFeedback batch whose tasks are the benchmark")
        parser.add_argument("--receivers", help="comma-separated model names answering the tasks")
        parser.add_argument("--providers", help="comma-separated model names giving feedback")
        parser.add_argument("--feedback", default="detail,simple", help="detail, simple or both (default)")
        parser.add_argument("--rounds", type=int, default=3, help="feedback rounds (default 3)")
        parser.add_argument("--lanes", type=int, default=4, help="concurrent lanes of the run (default 4)")
        parser.add_argument("--provider-sees-ground-truth", action="store_true",
                            help="give providers the ground truth (default: their own right answer only)")
        parser.add_argument("--no-regenerate-leaks", action="store_true",
                            help="keep detail feedback that states the answer (default: ask the provider once more)")
        parser.add_argument("--replay-human-session", type=int, metavar="SESSION",
                            help="the provider is a person: replay this human session's feedback to the receivers")
        parser.add_argument("--in-process", action="store_true", help="run the lanes here, not on the workers")
        parser.add_argument("--resume", type=int, metavar="RUN", help="go on with an unfinished run")
        parser.add_argument("--cancel", type=int, metavar="RUN", help="cancel a run")
        parser.add_argument("--no-follow", action="store_true", help="start and return at once")

    def handle(self, *args, **opts):
        try:
            run = self._run(opts)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if opts["cancel"]:
            self.stdout.write(f"Run {run.pk}: {run.get_status_display()}")
            return
        run = run_drive(self, run, in_process=opts["in_process"], no_follow=opts["no_follow"])
        progress = services.bench_progress(run)
        run_report(self, run, table="bench", done=f"{progress['model_calls']:,} model calls, "
                   f"{progress['sessions_done']:,} of {progress['sessions']:,} feedback sessions finished")

    def _run(self, opts) -> BenchRun:
        if opts["cancel"] or opts["resume"]:
            run = BenchRun.objects.filter(pk=opts["cancel"] or opts["resume"]).first()
            if run is None:
                raise CommandError(f"No bench run {opts['cancel'] or opts['resume']}.")
            if opts["cancel"]:
                return services.bench_run_cancel(run=run)
            return services.bench_run_resume(run=run, dispatch=not opts["in_process"])
        needed = ("batch", "receivers") if opts["replay_human_session"] else ("batch", "receivers", "providers")
        missing = [flag for flag in needed if not opts[flag]]
        if missing:
            raise CommandError("Give " + ", ".join(f"--{m}" for m in missing) + " (or --resume RUN).")
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        return services.bench_run_create(
            batch=batch, receivers=opts["receivers"], providers=opts["providers"] or "", feedback=opts["feedback"],
            rounds=opts["rounds"], lanes=opts["lanes"], provider_sees_ground_truth=opts["provider_sees_ground_truth"],
            regenerate_leaks=not opts["no_regenerate_leaks"], human_session_id=opts["replay_human_session"],
            dispatch=not opts["in_process"])
