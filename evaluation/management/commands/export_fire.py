"""Export a FIRE batch's ratings from the command line (the same functions the researcher pages and API use).

    python manage.py export_fire --batch NAME --what table-a1 --format md
    python manage.py export_fire --batch NAME --what summary --by source --format csv
    python manage.py export_fire --batch NAME --what agreement|kappa|disagreements --format tex
    python manage.py export_fire --batch NAME --what ratings --format csv --out ratings.csv
    python manage.py export_fire --batch NAME --what conversations --format json --out rated_fire.json
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from annotate.models import Batch
from evaluation.exports.renderers.tables import FORMATS, render
from evaluation.fire import reports as fire_reports

WHAT = (*fire_reports.FIRE_TABLES, "conversations")


class Command(BaseCommand):
    help = "Export FIRE ratings: Table A1, summaries, agreement, disagreements, long format, rated conversations."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="Batch name")
        parser.add_argument("--what", required=True, choices=WHAT)
        parser.add_argument("--format", default="md", help=f"tables: {', '.join(FORMATS)}; conversations: json, jsonl")
        parser.add_argument("--by", default="split", choices=("split", "source", "turn"), help="for --what summary")
        parser.add_argument("--top", type=int, default=20, help="for --what disagreements")
        parser.add_argument("--out", help="Write to this file instead of standard output")

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(name=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch named {opts['batch']!r}.")
        if batch.kind == Batch.Kind.PREFERENCE:
            raise CommandError(
                f"Batch {batch.name!r} is a preference batch, not a FIRE batch. Its judgments: export_tables --batch "
                f"{batch.name} --table preference-responses --format jsonl|csv (per response, every rater's scores, "
                "reasons and ranking) or --table preference-dpo --format jsonl (chosen/rejected pairs); its tables: "
                "--table preference-pairs|preference-agreement|preference-kappa|preference-scores.")
        if batch.kind != Batch.Kind.FIRE:
            raise CommandError(f"Batch {batch.name!r} is a {batch.get_kind_display()} batch, not a FIRE batch.")
        fmt, what = opts["format"], opts["what"]
        try:
            if what == "conversations":
                if fmt not in ("json", "jsonl"):
                    raise CommandError("--what conversations takes --format json or jsonl.")
                records = fire_reports.fire_conversations_export(batch)
                text = (json.dumps(records, ensure_ascii=False, indent=1) + "\n" if fmt == "json"
                        else "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            else:
                if fmt not in FORMATS:
                    raise CommandError(f"--format must be one of {', '.join(FORMATS)} for tables.")
                text = render(fire_reports.FIRE_TABLES[what](batch, by=opts["by"], top=opts["top"]), fmt)
        except ApplicationError as error:
            raise CommandError(error.message) from None
        if opts["out"]:
            Path(opts["out"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {opts['out']}")
        else:
            self.stdout.write(text, ending="")
