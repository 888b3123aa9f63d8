"""A bench run's worker SIGKILLed mid-run (real worker, real Redis): resume on a new worker finishes the run from
what is stored, with nothing redone or doubled, and the table equals the uninterrupted run's."""

import os
import time

import pytest

from annotate.bench import services
from annotate.models import BenchAnswer, BenchRun, Round, Session
from evaluation.bench.tables import bench_paper_table
from tests import stack
from tests.annotate.bench.test_bench_engine import EXPECTED, bench_batch  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# A queue of this test's own: the suite's shared worker (which consumes "bench") must not take the lane, and a name
# of this run's own: a lane message left in Redis by an interrupted earlier run (its run id is this run's too, the
# test database being made afresh) must not be taken by this run's worker.
QUEUE = f"bench.faults.{os.getpid()}"
ENV = {"BENCH_LANE_LEASE_SECONDS": "3", "BENCH_QUEUE": QUEUE}


def _wait(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_resume_after_the_worker_is_killed_mid_run(bench_batch, redis_url, stack_logs, settings):  # noqa: F811
    settings.BENCH_LANE_LEASE_SECONDS = 3
    settings.BENCH_QUEUE = QUEUE
    from annotate.models import ModelConfig

    ModelConfig.objects.filter(backend="replay").update(backend_settings={"chunk_delay": 0.05})
    first_log = stack_logs / "bench-doomed.log"
    first = stack.start_worker(first_log, name="bench-doomed", concurrency=1, queues=QUEUE, **ENV)
    try:
        stack.wait_worker_ready(first_log)
        run = services.bench_run_create(batch=bench_batch, receivers="r-one,r-two", providers="p-one,p-two",
                                        lanes=1, dispatch=False)
        services.bench_run_dispatch(run.pk)
        # Killed once feedback rounds are being made: round-0 answers and sessions exist, some rounds too.
        _wait(lambda: Round.objects.filter(session__bench_run=run, index__gte=1).exists(), 90, "feedback rounds")
    finally:
        stack.kill_hard(first)
    made = Round.objects.filter(session__bench_run=run).count()
    run.refresh_from_db()
    assert run.status == BenchRun.Status.RUNNING and 0 < made

    time.sleep(3.5)  # the dead lane's lease runs out
    second_log = stack_logs / "bench-second.log"
    second = stack.start_worker(second_log, name="bench-second", concurrency=1, queues=QUEUE, **ENV)
    try:
        stack.wait_worker_ready(second_log)
        services.bench_run_resume(run=run, dispatch=False)
        assert services.bench_run_dispatch(run.pk) == 1
        _wait(lambda: BenchRun.objects.get(pk=run.pk).status == BenchRun.Status.DONE, 120, "the resumed run")
    finally:
        stack.stop(second)
    assert BenchAnswer.objects.count() == 64  # every round-0 answer made once (16 tasks x 4 models)
    assert Session.objects.filter(bench_run=run).count() == 20
    rounds = Round.objects.filter(session__bench_run=run)
    assert rounds.values("session", "index").distinct().count() == rounds.count()
    assert bench_paper_table(run).rows == EXPECTED
