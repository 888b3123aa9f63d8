"""python manage.py dashboard --batch NAME [--json]

The batch's live study dashboard once, from the same snapshot as its page, /api/batches/<id>/dashboard/ and the
WebSocket (annotate.watch.selectors.batch_dashboard): ``--json`` prints that snapshot as the API returns it, the
default a short text summary of the same figures. Run it under ``watch -n 10`` to follow a study from a terminal.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Batch
from annotate.watch.selectors import batch_dashboard

COLUMNS = ("needed", "done", "in_progress", "left")


def _eta(d: dict) -> str:
    if d["capacity"] and d["capacity"]["short"]:
        return "none (the batch cannot be finished)"
    return "no pace yet" if d["eta_seconds"] is None else str(timedelta(seconds=d["eta_seconds"]))


class Command(BaseCommand):
    help = "Print a batch's live study dashboard (progress, pace, ETA, skips, model errors, queue depths)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="batch name")
        parser.add_argument("--json", action="store_true", help="the snapshot as JSON, as the API returns it")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        snapshot = batch_dashboard(batch)
        if opts["json"]:
            self.stdout.write(json.dumps(snapshot, ensure_ascii=False, indent=2))
        else:
            self._text(snapshot)

    def _text(self, d: dict) -> None:
        out = self.stdout.write
        totals = d["totals"]
        out(f"Batch {d['batch']['name']} ({d['batch']['kind']}, {d['batch']['overlap']} per item) at "
            f"{d['generated_at']}")
        out("Progress: " + ", ".join(f"{key.replace('_', ' ')} {totals[key]}" for key in COLUMNS))
        out(f"Pace (last 3 h): {d['pace_per_hour']} per hour of work ({d['pace_hours_worked']} h worked); "
            f"ETA {_eta(d)}; annotators working now: {d['active_annotators']}")
        capacity = d["capacity"]
        if capacity and capacity["short"]:
            out(f"Cannot be finished: each {capacity['unit']} needs {capacity['people_per_unit']} different people, "
                f"{capacity['annotators']} may work on it: {capacity['more_needed']} more needed; "
                f"{capacity['unservable']} left that nobody can be served")
        for title, rows in (("By model", d["by_model"]), ("By category", d["by_category"])):
            out(f"{title}:")
            for row in rows:
                out(f"  {row['name']}\t" + "\t".join(f"{key.replace('_', ' ')} {row[key]}" for key in COLUMNS))
        out(f"Skips: {d['skips_total']}" + "".join(f"\n  {s['reason'] or '-'}\t{s['count']}" for s in d["skips"]))
        out(f"Leak warnings: {d['leak_warnings']}")
        if d["participants"]["joined"]:
            out("Invited participants: " + ", ".join(f"{key.replace('_', ' ')} {n}"
                                                     for key, n in d["participants"].items()))
        out("Failed model calls (last hour / whole batch / failed now): "
            + (", ".join(f"{e['model']} {e['last_hour']}/{e['total']}/{e['failing_now']}" for e in d["model_errors"])
               or "none"))
        out("Queues: " + (", ".join(f"{q['queue']} {'?' if q['depth'] is None else q['depth']} waiting"
                                    for q in d["queues"]) or "none"))
        for u in d["unavailable_models"]:
            out(f"Unavailable since {u['since']}: {u['model']} ({u['reason']})")
