"""Schemathesis over every operation of /api/schema/ as four personas, with valid and invalid input: no server
errors, and every response (status, content type, body) as the schema documents it."""

import pytest

from tests.fuzz.harness import fuzz_persona
from tests.fuzz.world import PERSONAS

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]


@pytest.mark.parametrize("persona", PERSONAS)
def test_api_as(persona, fuzz_schema, fuzz_world):
    tally = fuzz_persona(fuzz_schema, fuzz_world, persona)
    assert tally.requests > 0
    assert not tally.failures, f"{dict(tally.failures)}\n" + "\n".join(tally.reproductions[:20])
