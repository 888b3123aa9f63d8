import pytest

from tests.fake_openai_server import serving


@pytest.fixture(autouse=True)
def in_memory_channel_layer(settings):
    """Service tests look at the database; the live channel layer is exercised by the consumer and e2e tests."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


@pytest.fixture
def session_and_cookie(annotator, simulated_model, no_dispatch):
    """An annotator's fresh session and the login cookie that opens its WebSocket."""
    from django.test import Client

    from annotate.queue.services import assignment_next
    from tests.factories import make_batch

    session = assignment_next(annotator=annotator, batch=make_batch(models=[simulated_model])).session
    client = Client()
    client.force_login(annotator)
    return session, client.cookies["sessionid"].value


@pytest.fixture
def fake():
    """A local OpenAI-compatible server (tests.fake_openai_server), speaking the real protocol."""
    with serving() as server:
        yield server
