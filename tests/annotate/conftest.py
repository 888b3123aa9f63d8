from unittest import mock

import pytest


@pytest.fixture(autouse=True)
def in_memory_channel_layer(settings):
    """Service tests look at the database; the live channel layer is exercised by the consumer and e2e tests."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def no_dispatch():
    """The broker is the outside world: tests that only look at reservations or run rounds in-process."""
    with mock.patch("annotate.services.sessions.round_generation_queue"):
        yield
