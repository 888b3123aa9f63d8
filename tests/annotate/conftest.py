import pytest


@pytest.fixture(autouse=True)
def in_memory_channel_layer(settings):
    """Service tests look at the database; the live channel layer is exercised by the consumer and e2e tests."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
