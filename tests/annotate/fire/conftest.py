import pytest

from annotate.importers.fire import import_fire
from tests.annotate.fire.fire_data import write_sample
from tests.factories import UserFactory


@pytest.fixture
def fire_batch(db, tmp_path):
    """The two-conversation sample imported with 3 raters per conversation."""
    path, images = write_sample(tmp_path)
    report = import_fire(path, name="fire-sample", images=images, overlap=3)
    assert report.status == "imported", report.render()
    from annotate.models import Batch

    return Batch.objects.get(name="fire-sample")


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"rater{i}") for i in range(1, 4)]
