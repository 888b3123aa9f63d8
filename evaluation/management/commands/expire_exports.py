"""python manage.py expire_exports [--dry-run]: delete export files past EXPORT_RETENTION_DAYS now (celery beat does
it hourly); the job rows stay, marked expired."""

from django.conf import settings
from django.core.management.base import BaseCommand

from evaluation.exports.jobs import export_files_expire


class Command(BaseCommand):
    help = "Delete the files of export jobs older than EXPORT_RETENTION_DAYS (the job rows stay, marked expired)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")

    def handle(self, *args, dry_run: bool, **options):
        days = settings.EXPORT_RETENTION_DAYS
        if days <= 0:
            self.stdout.write("EXPORT_RETENTION_DAYS is 0: export files are kept forever.")
            return
        expired = export_files_expire(dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(f"{verb} the files of {len(expired)} export job(s) older than {days} days"
                          + (f": {', '.join(map(str, expired))}" if expired else ""))
