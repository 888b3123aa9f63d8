"""python manage.py model add|edit|list|check|retire — the same services as the Models page and /api/models/.

    python manage.py model add gpt-4o --backend openai --display-name "GPT-4o" \\
        --setting base_url=https://api.openai.com/v1 --setting model=gpt-4o --setting api_key_env=OPENAI_API_KEY
    python manage.py model edit gpt-4o --display-name "GPT-4o (2024-08)" --generation max_new_tokens=512
    python manage.py model list [--all]
    python manage.py model check gpt-4o [--no-image] [--wait 60]    # queued on the model's queue, like the page
    python manage.py model retire gpt-4o

``--setting KEY=VALUE`` and ``--generation KEY=VALUE`` read VALUE as JSON when it parses (numbers, true, lists),
else as text; ``--settings-json '{...}'`` gives them all at once.
"""

from __future__ import annotations

import json
import time
from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError

from annotate.errors import ApplicationError, InvalidFields
from annotate.jobs.selectors import job_hint, job_is_finished
from annotate.modelconfigs import services
from annotate.modelconfigs.check import model_config_check
from annotate.modelconfigs.selectors import model_config_get, model_configs_list
from annotate.models import Job, ModelConfig


def _pairs(items: list[str] | None, option: str) -> dict:
    values = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"{option} {item!r}: write KEY=VALUE")
        try:
            values[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            values[key.strip()] = raw
    return values


def _json_object(text: str | None, option: str) -> dict | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(f"{option}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise CommandError(f"{option}: must be a JSON object, got {value!r}")
    return value


class Command(BaseCommand):
    help = "Create, edit, list, test and retire model configs (admins)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="add|edit|list|check|retire")
        for action in ("add", "edit"):
            p = sub.add_parser(action, help=f"{action} a model config")
            p.add_argument("name", help="slug used in URLs, queues and exports (e.g. gpt-4o)")
            p.add_argument("--backend", choices=ModelConfig.Backend.values, required=action == "add")
            p.add_argument("--display-name", help='free name for tables and plots, e.g. "GPT-4o"')
            p.add_argument("--setting", action="append", metavar="KEY=VALUE", help="a backend setting (repeat)")
            p.add_argument("--settings-json", help="all backend settings as one JSON object")
            p.add_argument("--generation", action="append", metavar="KEY=VALUE",
                           help="a generation setting: max_new_tokens, temperature, top_p, seed, stop (repeat)")
            p.add_argument("--queue", help="Celery queue (default model.<backend>)")
            p.add_argument("--soft-time-limit", type=int)
            p.add_argument("--input-price", type=Decimal, help="price per million prompt tokens")
            p.add_argument("--output-price", type=Decimal, help="price per million completion tokens")
            p.add_argument("--time-limit", type=int)
            p.add_argument("--max-concurrent", type=int, help="calls to the model at once, across all workers")
            p.add_argument("--rpm", type=int, help="calls started per minute, across all workers")
            p.add_argument("--tpm", type=int, help="prompt + completion tokens per minute, across all workers")
        p = sub.add_parser("list", help="list model configs")
        p.add_argument("--all", action="store_true", help="retired ones too")
        p = sub.add_parser("check", help="queue the 'test this model' check on the model's queue and wait for it")
        p.add_argument("name")
        p.add_argument("--no-image", action="store_true", help="text-only prompt")
        p.add_argument("--wait", type=float, default=60, help="seconds to wait for a worker (0: do not wait)")
        p = sub.add_parser("retire", help="take a model out of use (its sessions are kept)")
        p.add_argument("name")

    def handle(self, *args, action: str, **opts):
        try:
            getattr(self, f"do_{action}")(opts)
        except InvalidFields as error:
            raise CommandError("\n".join(f"{f}: {m}" if f else m for f, m in error.problems)) from None
        except ApplicationError as error:
            raise CommandError(error.message) from None

    def _fields(self, opts) -> dict:
        fields = {}
        settings = _json_object(opts["settings_json"], "--settings-json")
        if settings is not None or opts["setting"]:
            fields["backend_settings"] = (settings or {}) | _pairs(opts["setting"], "--setting")
        if opts["generation"]:
            fields["generation"] = _pairs(opts["generation"], "--generation")
        for option, key in (("backend", "backend"), ("display_name", "display_name"), ("queue", "queue"),
                            ("soft_time_limit", "soft_time_limit"), ("time_limit", "time_limit"),
                            ("input_price", "input_price_per_million"), ("output_price", "output_price_per_million"),
                            ("max_concurrent", "max_concurrent_requests"), ("rpm", "requests_per_minute"),
                            ("tpm", "tokens_per_minute")):
            if opts[option] is not None:
                fields[key] = opts[option]
        return fields

    def do_add(self, opts):
        config = services.model_create(name=opts["name"], **self._fields(opts))
        self.stdout.write(self.style.SUCCESS(f"Created {config.name} ({config.label}, {config.backend}, "
                                             f"queue {config.queue_name})."))
        self.stdout.write(f"Test it: python manage.py model check {config.name}")

    def do_edit(self, opts):
        fields = self._fields(opts)
        if not fields:
            raise CommandError("Nothing to change: give --display-name, --setting, --generation, ...")
        config = services.model_update(config=model_config_get(opts["name"]), **fields)
        self.stdout.write(self.style.SUCCESS(f"Saved {config.name}: {', '.join(sorted(fields))}."))

    def do_list(self, opts):
        configs = list(model_configs_list(active_only=not opts["all"]))
        if not configs:
            self.stdout.write("No models. Add one: python manage.py model add NAME --backend ...")
            return
        rows = [("NAME", "DISPLAY NAME", "BACKEND", "QUEUE", "STATUS")] + [
            (c.name, c.label, c.backend, c.queue_name, "active" if c.is_active else "retired") for c in configs]
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            self.stdout.write("  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip())

    def do_retire(self, opts):
        config = services.model_retire(config=model_config_get(opts["name"]))
        self.stdout.write(self.style.SUCCESS(f"Retired {config.name}: its sessions and exports are kept."))

    def do_check(self, opts):
        config = model_config_get(opts["name"])
        job = model_config_check(config=config, with_image=not opts["no_image"])
        self.stdout.write(f"Queued check #{job.pk} on {config.queue_name} (GET /api/jobs/{job.pk}/).")
        deadline = time.monotonic() + opts["wait"]
        while not job_is_finished(job) and time.monotonic() < deadline:
            time.sleep(0.5)
            job.refresh_from_db()
        if job.status == Job.Status.SUCCEEDED:
            report = job.report
            self.stdout.write(f"answer: {report.get('answer') or '(empty)'}")
            self.stdout.write(f"time to first token: {report.get('time_to_first_token_ms')} ms; "
                              f"latency: {report.get('latency_ms')} ms; worker {report.get('host')}")
            self.stdout.write(self.style.SUCCESS("OK"))
        elif job.status == Job.Status.FAILED:
            raise CommandError(f"The check failed: {job.error}")
        elif opts["wait"]:
            hint = job_hint(job) or f"Is a worker consuming {config.queue_name!r}?"
            raise CommandError(f"No answer after {opts['wait']:g} s ({job.get_status_display()}). {hint} "
                               f"In-process instead: python manage.py check_model {config.name}")
