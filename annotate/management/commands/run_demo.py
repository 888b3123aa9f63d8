"""Run the whole demo: embedded Redis, one Celery worker and the ASGI web server. Ctrl-C stops everything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from annotate.config.celery import WORKER_OPTIONS
from annotate.server import embedded_redis

MODEL_QUEUES = ["model.simulated", "model.replay", "model.transformers", "model.openai"]


class Command(BaseCommand):
    help = "Start embedded Redis (unless REDIS_URL is set), a Celery worker and daphne on 127.0.0.1:PORT."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args, port: int, host: str, **options):
        if settings.EMBEDDED_REDIS:
            embedded_redis.ensure_running(settings.VAR_DIR)
            self.stdout.write(f"Embedded Redis on {settings.REDIS_URL}")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        python = sys.executable
        queues = ",".join(["default", *MODEL_QUEUES, settings.BENCH_QUEUE])  # bench runs started from the pages too
        children = [
            subprocess.Popen([python, "-m", "celery", "-A", "annotate", "worker", "-Q", queues, "-c", "2",
                              "--loglevel", "WARNING", "-n", "demo@%h", *WORKER_OPTIONS], env=env),  # quiet: beat runs a task every 5 s
            # Periodic work: stalled rounds are failed with Retry, old export files expire.
            subprocess.Popen([python, "-m", "celery", "-A", "annotate", "beat", "--loglevel", "WARNING",
                              "-s", str(settings.VAR_DIR / "celerybeat-schedule")], env=env),
            subprocess.Popen([python, "-m", "daphne", "-b", host, "-p", str(port), "annotate.config.asgi:application"],
                             env=env),
        ]
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            url = f"http://{host}:{port}/login/"
            self._wait_for(url, children)
            self.stdout.write(self.style.SUCCESS(f"\nFeedback Lab is running: http://{host}:{port}/  (Ctrl-C stops)\n"))
            while not stopping:
                for child in children:
                    if child.poll() is not None:
                        raise CommandError(f"{child.args[2]} exited with code {child.returncode}")
                time.sleep(0.5)
        finally:
            self.stdout.write("Stopping…")
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
            if settings.EMBEDDED_REDIS:
                embedded_redis.stop(settings.VAR_DIR)
            self.stdout.write("Stopped.")

    def _wait_for(self, url: str, children) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if any(child.poll() is not None for child in children):
                raise CommandError("a demo process exited during start-up; see the log above")
            try:
                with urllib.request.urlopen(url, timeout=2):
                    return
            except OSError:
                time.sleep(0.5)
        raise CommandError(f"the web server did not answer at {url} within 120 s")
