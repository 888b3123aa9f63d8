"""Nothing on the annotator's page differs with the ground truth before it is revealed: two tasks that differ only
in their answer give the same page and the same snapshot, once the ids, times and tokens are set aside."""

import re

import pytest

from annotate.queue.services import assignment_next
from tests.factories import ModelConfigFactory, UserFactory, attach_image, make_batch

pytestmark = pytest.mark.django_db

VARIABLE = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"'), "CSRF"),
    (re.compile(r'<meta name="csrf-token" content="[^"]+"'), "CSRF"),
    (re.compile(r'data-started-at="[^"]+"'), "STARTED"),
    (re.compile(r"[Ss]ession \d+"), "Session ID"),
    (re.compile(r"sessions/\d+/"), "sessions/ID/"),
    (re.compile(r'data-session-id="\d+"'), "SESSION"),
    (re.compile(r'"id": ?\d+'), '"id": ID'),
    (re.compile(r"reader-\w+"), "ANNOTATOR"),
]


def page_for_answer(client, model, ground_truth: str, **task) -> str:
    annotator = UserFactory(username=f"reader-{abs(hash(ground_truth))}")
    batch = make_batch(models=[model], external_id="same-task", question="Which one is it?",
                       ground_truth=ground_truth, **task)
    attach_image(batch.tasks.get())  # the same picture: its URL is its content's hash
    session = assignment_next(annotator=annotator, batch=batch).session
    client.force_login(annotator)
    text = client.get(f"/annotate/sessions/{session.id}/").content.decode()
    text += client.get(f"/api/sessions/{session.id}/").content.decode()
    for pattern, replacement in VARIABLE:
        text = pattern.sub(replacement, text)
    return text


@pytest.mark.parametrize(("task", "answers"), [
    ({"answer_type": "choice", "options": ["red", "green", "blue"]}, ("A", "C")),
    ({"answer_type": "number"}, ("7", "1234")),
    ({"answer_type": "text"}, ("a cat", "the dog on the left")),
])
def test_the_page_does_not_depend_on_the_answer(client, task, answers):
    model = ModelConfigFactory(name=f"same-model-{task['answer_type']}")
    first, second = (page_for_answer(client, model, answer, **task) for answer in answers)
    assert "Which one is it?" in first
    assert first == second
