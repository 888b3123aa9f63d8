"""Build a tiny random-weight model locally (no network) for tests and the demo."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Build a tiny LLaVA-style image-text-to-text model (or a text-only causal LM) at PATH."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--kind", choices=["llava", "causal"], default="llava")
        parser.add_argument("--force", action="store_true", help="Rebuild even if PATH already holds a model")

    def handle(self, *args, path: Path, kind: str, force: bool, **options):
        from models_runtime import tiny

        if (path / "config.json").exists() and not force:
            self.stdout.write(f"A model is already at {path} (use --force to rebuild).")
            return
        try:
            builder = tiny.build_tiny_llava if kind == "llava" else tiny.build_tiny_causal_lm
            builder(path)
        except Exception as error:  # surface the builder's reason as a command error
            raise CommandError(f"Could not build the tiny {kind} model at {path}: {error}") from error
        self.stdout.write(self.style.SUCCESS(f"Built tiny {kind} model at {path}"))
