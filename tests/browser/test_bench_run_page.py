"""A researcher starts a small InterFeedback-Bench run from the research pages, watches its progress panel move
without reloading, and opens Tables 1/2 (real browser, web server, Celery worker and Redis)."""

import re

import pytest
from playwright.sync_api import expect

from annotate.models import User
from tests.annotate.bench.test_bench_engine import bench_batch  # noqa: F401  (the fixture)
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_start_watch_and_read_a_bench_run(page, asgi_server, celery_worker_process, bench_batch):  # noqa: F811
    from annotate.models import ModelConfig

    ModelConfig.objects.filter(backend="replay").update(backend_settings={"chunk_delay": 0.02})
    researcher = UserFactory(username="rita", role=User.Role.RESEARCHER)
    bench_batch.members.add(researcher)
    login(page, asgi_server, researcher.username)
    page.goto(f"{asgi_server}/research/")
    page.click("#bench-link")
    page.select_option("#id_batch", label=bench_batch.name)
    for name in ("r-one", "r-two"):
        page.locator("#id_receivers").get_by_label(name).check()
    for name in ("p-one", "p-two"):
        page.locator("#id_providers").get_by_label(name).check()
    page.fill("#id_lanes", "1")
    page.click("#bench-start")
    page.wait_for_url(re.compile(r".*/research/bench/\d+/$"))
    # The panel follows the run (polled), then the page shows the tables once it is done.
    expect(page.locator("#run-calls")).not_to_have_text("0", timeout=60_000)
    expect(page.locator("#bench-table")).to_be_visible(timeout=90_000)
    expect(page.locator("#run-status")).to_have_text("Done")
    row = page.locator("#bench-table tbody tr").first
    expect(row).to_contain_text("r-one")
    expect(row).to_contain_text("66.7")
    page.click("#compare-link")
    expect(page.locator("#compare-mcnemar")).to_be_visible()
