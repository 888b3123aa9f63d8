"""The Prolific tests' shared pieces: the local fake Prolific server the app is pointed at (its URL in the settings,
its token in the environment variable the settings name), and a batch of 6 items, 2 per participant, with a fixed
bonus and the screened-out and no-consent codes."""

from decimal import Decimal

import pytest

from annotate.models import CrowdStudy
from tests.factories import make_batch
from tests.fake_prolific_server import running


@pytest.fixture
def fake(settings, monkeypatch):
    with running() as server:
        settings.PROLIFIC_API_URL = server.base_url + "/api/v1/"
        monkeypatch.setenv(settings.PROLIFIC_TOKEN_ENV, server.token)
        yield server


@pytest.fixture
def batch(simulated_model, researcher):
    batch = make_batch(models=[simulated_model], tasks=6, members=[researcher])
    batch.items_per_participant, batch.completion_code = 2, "DONE-42"
    batch.save()
    CrowdStudy.objects.create(batch=batch, bonus_rule=CrowdStudy.BonusRule.FIXED, bonus_amount=Decimal("1.50"),
                              screened_out_code="SCREEN-1", no_consent_code="NOCONSENT-1")
    return batch
