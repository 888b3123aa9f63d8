"""python manage.py export_tables --batch NAME --table accuracy --format md [--out FILE] [filters]
python manage.py export_tables --run ID --table bench|fire-fixed|fire-free --format md   (one run's tables)"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError
from annotate.models import BenchRun
from evaluation.bench.registration import RUN_EXPORTS, build_run_export
from evaluation.exports import registry as exports
from evaluation.exports.filters import parse_filters
from evaluation.interfeedback import selectors

ALL_FORMATS = sorted({fmt for formats in exports.EXPORTS.values() for fmt in formats})


class Command(BaseCommand):
    help = (
        "Export a batch's Table 3 (accuracy), Table 4 (correction), Fig. 4/5 (fig4, fig5), FIRE rating tables (fire-*), "
        "runs, costs or sessions. Reads the outcome counters (recount first with recompute_outcomes if in doubt)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch", help="Batch name (optional with --run: the run's batch)")
        parser.add_argument("--run", type=int, help="bench, fire-fixed, fire-free: this finished run's tables "
                                                    "(default: the batch's latest finished run)")
        parser.add_argument("--table", required=True, choices=list(exports.EXPORTS), help="What to export")
        parser.add_argument("--format", required=True, choices=ALL_FORMATS, dest="fmt",
                            help="csv|md|tex|json (tables), png|svg (tables and figures), jsonl|fire (sessions), "
                                 "parquet|zip (preference data with their images)")
        parser.add_argument("--out", help="Output file (default: standard output; required for png)")
        parser.add_argument("--model", default="", help="Only this model (name)")
        parser.add_argument("--category", default="", help="Only this category")
        parser.add_argument("--annotator", default="", help="Only this annotator (pseudonym)")
        parser.add_argument("--date-from", default="", help="Completed on or after (YYYY-MM-DD, UTC)")
        parser.add_argument("--date-to", default="", help="Completed on or before (YYYY-MM-DD, UTC)")
        parser.add_argument("--outcome", default="", help="Sessions only: 0|1|2|3|never")
        parser.add_argument("--test-fraction", default="", help="preference-dpo, preference-responses: a train/test "
                                                                "split by item, this share of the items in test")
        parser.add_argument("--split-seed", default="", help="The split's seed (default 0)")

    def handle(self, *args, batch: str | None, run: int | None, table: str, fmt: str, out: str | None, **options):
        if fmt in ("png", "parquet", "zip") and not out:
            raise CommandError(f"{fmt.upper()} is binary: give --out FILE.")
        if run is not None and table not in RUN_EXPORTS:
            raise CommandError(f"--run is for the run tables ({', '.join(RUN_EXPORTS)}), not {table}.")
        chosen = BenchRun.objects.select_related("batch").filter(pk=run).first() if run is not None else None
        if run is not None and chosen is None:
            raise CommandError(f"No run {run}.")
        if batch is None and chosen is None:
            raise CommandError("Give --batch NAME (or --run ID for a run's tables).")
        try:
            exports.check_export(table, fmt)
            filters = parse_filters({key: options[key] for key in
                                     ("model", "category", "annotator", "date_from", "date_to", "outcome",
                                      "test_fraction", "split_seed")})
            the_batch = selectors.batch_by_name(batch) if batch is not None else chosen.batch
            export = (build_run_export(the_batch, table, fmt, chosen) if chosen is not None
                      else exports.build_export(the_batch, table, fmt, filters))
            chunks = [export.content] if export.content is not None else export.stream
            if out:
                with open(out, "wb") as handle:
                    for chunk in chunks:
                        handle.write(chunk)
                self.stderr.write(f"Wrote {out}")
            else:
                for chunk in chunks:  # every format but PNG, Parquet and zip is text
                    self.stdout.write(chunk.decode(), ending="")
        except ApplicationError as error:
            raise CommandError(error.message) from None
