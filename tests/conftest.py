import pytest

from annotate.models import User
from tests.factories import ModelConfigFactory, UserFactory


@pytest.fixture
def annotator(db):
    return UserFactory(username="alice", role=User.Role.ANNOTATOR)


@pytest.fixture
def researcher(db):
    return UserFactory(username="rita", role=User.Role.RESEARCHER)


@pytest.fixture
def outsider(db):
    return UserFactory(username="oscar", role=User.Role.ANNOTATOR)


@pytest.fixture
def simulated_model(db):
    return ModelConfigFactory(name="sim-student", backend_settings={"chunk_delay": 0})


@pytest.fixture(scope="session")
def tiny_llava_path(tmp_path_factory) -> str:
    """A tiny LLaVA-style checkpoint built once per test run (random weights, no network)."""
    from models_runtime.tiny import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("models") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_causal_path(tmp_path_factory) -> str:
    from models_runtime.tiny import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-causal")


@pytest.fixture
def release_backends():
    """The test starts and ends with an empty backend registry (closed backends free their memory)."""
    from models_runtime import registry

    registry.release_all()
    yield
    registry.release_all()


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture(scope="session")
def redis_url():
    from tests.stack import ensure_redis

    return ensure_redis()


@pytest.fixture(scope="session")
def stack_logs(tmp_path_factory):
    return tmp_path_factory.mktemp("stack-logs")


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker, redis_url, stack_logs):
    """A real Celery worker process consuming the model queues, on the test database and a real Redis."""
    from tests import stack

    stack.purge_queues()
    log = stack_logs / "worker.log"
    worker = stack.start_worker(log)
    stack.wait_worker_ready(log)
    yield worker
    stack.stop(worker)


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, redis_url, stack_logs):
    """daphne serving the ASGI app (HTTP + WebSockets) on the test database; yields its base URL."""
    from tests import stack

    port = stack.free_port()
    server = stack.start_web(stack_logs / "web.log", port)
    yield f"http://127.0.0.1:{port}"
    stack.stop(server)
