import pytest

from tests.evaluation.preference.study import import_study, rate, raters


@pytest.fixture
def study(tmp_path, researcher):
    """The small MM-RLHF-style study of study.py, rated, read by the researcher."""
    batch = import_study(tmp_path)
    batch.members.add(researcher)
    rate(batch, raters())
    return batch
