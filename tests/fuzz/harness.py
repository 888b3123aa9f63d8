"""Schemathesis against the app's own OpenAPI schema, in-process over WSGI, shared by the fuzz tests and the
benchmark: the schema as served, the checks, real ids swapped into paths, and a tally per persona."""

from __future__ import annotations

import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import hypothesis
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.generation import GenerationMode

from tests.fuzz.world import World

SCHEMA_PATH = "/api/schema/"
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]
# Cases per operation, persona and kind of input (valid, invalid): small enough for the suite's time budget; the
# benchmark raises it and sets a seed (without one, every run sends the same cases).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "4"))
SEED = int(os.environ["FUZZ_SEED"]) if os.environ.get("FUZZ_SEED") else None


def load_schema():
    # NUL bytes in text are answered by the request-body hardening, tested apart from this harness.
    # Credentials come from the persona, never from generated headers or cookies.
    config = SchemathesisConfig.from_dict({"generation": {"allow-x00": False, "with-security-parameters": False}})
    return schemathesis.openapi.from_wsgi(SCHEMA_PATH, get_wsgi_application(), config=config)


def use_real_ids(case, world: World) -> None:
    """Most generated integer ids point at objects of the world, so requests get past the 404s; the rest stay
    random. The choice follows the generated value, so a failing example replays the same request."""
    for name, value in case.path_parameters.items():
        choices = world.ids.get(name)
        if not choices or isinstance(value, bool):
            continue
        if isinstance(value, int) and value % 5:
            case.path_parameters[name] = choices[value % len(choices)]
        elif name == "name" and case.path.startswith("/api/models/") and isinstance(value, str) and len(value) % 2:
            case.path_parameters[name] = choices[0]


@dataclass
class Tally:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)  # failure kind -> count
    reproductions: list[str] = field(default_factory=list)  # curl lines of failing cases

    @property
    def server_errors(self) -> int:
        return self.failures["ServerError"]

    @property
    def schema_violations(self) -> int:
        return sum(n for kind, n in self.failures.items() if kind != "ServerError")


def fuzz_one(case, world: World, persona: str, tally: Tally) -> None:
    """Send the case as the persona and run the checks; failures are tallied (with a curl line), not raised, so
    that one failing operation does not hide the others."""
    use_real_ids(case, world)
    headers = world.headers(persona)
    response = case.call(headers=headers)
    tally.requests += 1
    tally.statuses[response.status_code] += 1
    try:
        case.validate_response(response, checks=CHECKS, headers=headers)
    except FailureGroup as group:
        for failure in group.exceptions:
            tally.failures[type(failure).__name__] += 1
        curl = case.as_curl_command(headers=headers)
        tally.reproductions.append(f"{case.operation.label} -> {response.status_code}: {group.exceptions[0].title}"
                                   f"\n    {curl}")


TALLIES: dict[str, Tally] = {}  # persona -> its tally in this process (read by the benchmark)


def fuzz_persona(schema, world: World, persona: str, *, examples: int = EXAMPLES, seed: int | None = SEED) -> Tally:
    """Every operation of the schema, with valid and with invalid input (``examples`` cases each). Without a seed
    the cases are the same on every run (the suite); with one they differ from seed to seed (the benchmark)."""
    tally = TALLIES[persona] = Tally()
    with connections_kept_open():
        _fuzz_operations(schema, world, persona, tally, examples=examples, seed=seed)
    return tally


@contextmanager
def connections_kept_open():
    """Requests go through Django's WSGI handler, which closes the database connection at the end of each one;
    the test's transaction lives on that connection (Django's test client keeps it open the same way)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _fuzz_operations(schema, world: World, persona: str, tally: Tally, *, examples: int, seed: int | None) -> None:
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            run = hypothesis.given(case=operation.as_strategy(generation_mode=mode))(
                lambda case: fuzz_one(case, world, persona, tally))
            run = hypothesis.settings(
                max_examples=examples, deadline=None, database=None, derandomize=seed is None,
                phases=[hypothesis.Phase.generate], suppress_health_check=list(hypothesis.HealthCheck),
            )(run)
            if seed is not None:
                run = hypothesis.seed(seed)(run)
            try:
                run()
            except hypothesis.errors.Unsatisfiable:
                if mode is GenerationMode.POSITIVE:
                    raise
                # Nothing in this operation can be made invalid (e.g. one integer id in the path).
