"""Create the demo users, model configs and batch; print the logins."""

from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from annotate import demo
from annotate.models import User


class Command(BaseCommand):
    help = "Load the demo: users (printed), a simulated model, a tiny transformers model and a small batch."

    def add_arguments(self, parser):
        parser.add_argument("--no-tiny-model", action="store_true", help="Skip building the tiny transformers model")

    def handle(self, *args, no_tiny_model: bool, **options):
        tiny_path = None
        if not no_tiny_model:
            tiny_path = Path(settings.VAR_DIR) / "models" / "tiny-llava"
            call_command("build_tiny_model", str(tiny_path), kind="llava", stdout=self.stdout)
        users = demo.demo_users_create()
        models = demo.demo_models_create(tiny_model_path=tiny_path)
        researchers = list(User.objects.filter(role=User.Role.RESEARCHER))
        batch = demo.demo_batch_create(models=models, researchers=researchers)
        self.stdout.write(self.style.SUCCESS(f"Demo batch {batch.name!r}: {batch.task_count} tasks × "
                                             f"{len(models)} models ({', '.join(m.name for m in models)})"))
        self.stdout.write("Demo users (username / password / role):")
        for username, password, role in users:
            self.stdout.write(f"  {username:<12} {password:<16} {role}")
