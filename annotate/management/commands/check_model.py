"""Run the "Test this model" check in this process (a shell on a GPU box), without a broker or a worker."""

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import NotFound
from annotate.modelconfigs.check import model_check_execute
from annotate.modelconfigs.selectors import model_config_get
from models_runtime import ModelError


class Command(BaseCommand):
    help = ("Send one short prompt with a small generated image to the model config NAME, in this process, "
            "and print the answer, device/dtype and compiled decoding with its warm-up (transformers), time to "
            "first token and latency.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="ModelConfig name")
        parser.add_argument("--no-image", action="store_true", help="Text-only prompt (for text-only checkpoints)")

    def handle(self, *args, name: str, no_image: bool, **options):
        try:
            config = model_config_get(name)
        except NotFound as error:
            raise CommandError(error.message) from error
        self.stdout.write(f"Checking {config.label} ({config.backend}) in this process...")
        try:
            report = model_check_execute(config=config, with_image=not no_image)
        except ModelError as error:
            raise CommandError(f"{type(error).__name__}: {error}") from error
        lines = [
            ("prompt", report["prompt"] + (" [+ test image]" if report["with_image"] else "")),
            ("answer", report["answer"] or "(empty)"),
        ]
        if "device" in report:
            lines.append(("device / dtype", f"{report['device']} / {report.get('dtype', '?')}"))
        if "compiled_decoding" in report:
            lines.append(("compiled decoding", report["compiled_decoding"]))
        lines += [
            ("load", f"{report['load_ms']} ms"),
            ("time to first token", f"{_value(report['time_to_first_token_ms'])} ms"),
            ("latency", f"{report['latency_ms']} ms"),
            ("tokens", f"{_value(report['prompt_tokens'])} prompt / {_value(report['completion_tokens'])} completion"),
        ]
        width = max(len(label) for label, _ in lines)
        for label, value in lines:
            self.stdout.write(f"{label.rjust(width)}: {value}")
        self.stdout.write(self.style.SUCCESS("OK"))


def _value(value) -> str:
    return "?" if value is None else str(value)
