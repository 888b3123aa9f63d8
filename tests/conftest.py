import pytest

from annotate.models import User
from tests.factories import ModelConfigFactory, UserFactory
from tests.runtime_fixtures import compile_on_cpu, release_backends, tiny_causal_path, tiny_llava_path  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing():
    """Every test's passwords hashed cheaply (tests/fast_hashing.py); the hasher is not what the tests test."""
    from django.conf import settings
    from django.test.utils import override_settings

    hashers = ["tests.fast_hashing.OneIterationPBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]
    with override_settings(PASSWORD_HASHERS=hashers):  # its signal clears Django's cached hashers
        yield


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


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture(scope="session", autouse=True)
def redis_url():
    """Redis is part of the app (cache, quotas, breaker counts, channel layer): on SQLite the embedded one is
    started for the whole run, as the demo does, not only for the tests that ask."""
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


class SentTasks(list):
    """Tasks queued by name (``annotate.queue_contract.send_task``), recorded instead of sent: (name, args,
    options). Set ``refuse`` to an exception to play an unreachable broker."""

    refuse: BaseException | None = None

    def args_of(self, name: str) -> list:
        return [args for sent_name, args, _ in self if sent_name == name]


@pytest.fixture
def sent_tasks(monkeypatch):
    """The broker is the outside world: what would be queued is recorded; the test runs the task itself."""
    sent = SentTasks()

    def send_task(name, *, args, **options):
        if sent.refuse is not None:
            raise sent.refuse
        sent.append((name, list(args), options))

    monkeypatch.setattr("annotate.queue_contract.send_task", send_task)
    return sent


@pytest.fixture
def fire_batch(db, tmp_path):
    """The two-conversation sample imported with 3 raters per conversation."""
    from annotate.imports.batches import import_fire
    from tests.annotate.rating.fire.fire_data import write_sample

    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire-sample", images=images, overlap=3)
    assert report.status == "imported", report.render()
    from annotate.models import Batch

    return Batch.objects.get(name="fire-sample")


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"rater{i}") for i in range(1, 4)]


@pytest.fixture
def no_dispatch():
    """The broker is the outside world: tests that only look at reservations or run rounds in-process."""
    from unittest import mock

    with mock.patch("annotate.sessions.services.round_generation_queue"):
        yield


@pytest.fixture(autouse=True)
def in_process_defaults():
    """Settings for code run in the test process (tests override them again where they test them):
    - no heartbeat thread: rounds run here in the test's own transaction, which a thread with a connection of its
      own cannot see (workers started by the end-to-end tests are other processes and beat as in production);
    - no job-creation limit: its counts live in the shared Redis cache, across tests.
    Not the ``settings`` fixture: some tests name a parameter ``settings``."""
    from django.test import override_settings

    with override_settings(ROUND_HEARTBEAT_SECONDS=0, JOB_RATE_LIMIT=""):
        yield
