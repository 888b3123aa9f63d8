"""Redis restarts under a running worker: the worker stays up, reconnects by itself and runs what is queued after
the restart, with no traceback in its log. A Redis of the test's own, on a free port. (A round queued while the
broker is down shows Retry: tests/annotate/sessions/test_session_protocol.py.)"""

import shutil
import subprocess
import time

import pytest

from annotate import queue_contract
from annotate.config.celery import app as celery_app
from annotate.models import Round, Session
from annotate.queue.services import assignment_next
from tests import stack
from tests.factories import ModelConfigFactory, make_batch

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs the redis-server binary"),
]

QUEUE = "model.redis-restart-test"


class OwnRedis:
    """A throw-away redis-server on a free port that the test stops and starts again."""

    def __init__(self, workdir):
        self.port, self.workdir, self.process = stack.free_port(), workdir, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if redis.Redis.from_url(self.url).ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("the test's redis-server did not start")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def _send_round(url: str, round_id: int) -> None:
    with celery_app.connection_for_write(url) as connection:
        celery_app.send_task(queue_contract.ROUND_GENERATE, args=[round_id], queue=QUEUE, connection=connection)


def _round_done(round_id: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if Round.objects.filter(pk=round_id, generation_status=Round.Generation.DONE).exists():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("pool", ["prefork", "threads"])  # CPU workers, and GPU workers (one model, many rounds)
def test_the_worker_survives_a_redis_restart_and_runs_what_comes_next(annotator, stack_logs, tmp_path,
                                                                     no_dispatch, pool):
    own = OwnRedis(tmp_path)
    own.start()
    model = ModelConfigFactory(queue=QUEUE, backend_settings={"chunk_delay": 0})
    batch = make_batch(models=[model], tasks=2)
    log = stack_logs / f"redis-restart-worker-{pool}.log"
    worker = stack.start_worker(log, name=f"redis-restart-{pool}", concurrency=1, queues=QUEUE, pool=pool,
                                REDIS_URL=own.url, CELERY_BROKER_URL=own.url)
    try:
        stack.wait_worker_ready(log)
        before = assignment_next(annotator=annotator, batch=batch).session.rounds.get()
        _send_round(own.url, before.id)
        assert _round_done(before.id, 60), log.read_text()[-3000:]

        own.stop()
        time.sleep(5)  # the worker notices and retries the connection
        own.start()

        assert worker.poll() is None, "the worker exited when Redis went away:\n" + log.read_text()[-3000:]
        Session.objects.filter(pk=before.session_id).update(status=Session.Status.COMPLETED)
        after = assignment_next(annotator=annotator, batch=batch).session.rounds.get()
        _send_round(own.url, after.id)
        assert _round_done(after.id, 60), "queued after the restart, never run:\n" + log.read_text()[-3000:]
        assert worker.poll() is None
        assert b"Traceback" not in log.read_bytes(), log.read_text()[-3000:]
    finally:
        stack.stop(worker)
        own.stop()
