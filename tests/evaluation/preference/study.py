"""A small MM-RLHF-style study for the preference tests: three items of three responses by three models, positions
rotated, three raters with ties, disagreements, a skip and a draft, all through the rating service."""

from __future__ import annotations

from annotate.imports.batches import batch_import
from annotate.models import Batch, User
from annotate.queue.services import assignment_next
from annotate.rating.preference.services import preference_save
from annotate.rating.services import conversation_skip
from tests.annotate.rating.fire.fire_data import write_images_dir, write_jsonl
from tests.factories import UserFactory

RECORDS = [
    {"id": "q1", "image": "bars_01.png", "question": "How many bars are there?",
     "responses": ["Three bars.", "Four bars.", "A pie chart."], "models": ["alpha", "beta", "gamma"],
     "source": "mm-rlhf", "split": "dev"},
    {"id": "q2", "image": "shapes_02.png", "question": "Which shape is blue?",
     "responses": ["The circle.", "The square.", "None."], "models": ["beta", "gamma", "alpha"],
     "source": "mm-rlhf", "split": "dev"},
    {"id": "q3", "question": "Is 7 prime?", "responses": ["Yes.", "No, 7 = 1 x 7.", "Yes: only 1 and 7 divide it."],
     "models": ["gamma", "alpha", "beta"], "source": "text", "split": "test"},
]
# rater -> item -> (ranking, [(helpfulness, faithfulness, ethics, reason)] per candidate); "skip": skipped.
PLAN = {
    "r1": {"q1": ("1>2=3", [(5, 5, 5, "Counts right."), (2, 2, 5, "Off by one."), (2, 1, 5, "Wrong chart.")]),
           "q2": ("3>1>2", [(3, 3, 5, "Partly."), (2, 2, 5, "No."), (4, 4, 5, "Honest.")]),
           "q3": ("2>3>1", [(2, 3, 5, "Bare."), (1, 1, 5, "Wrong."), (5, 5, 5, "Explains.")])},
    "r2": {"q1": ("1>2>3", [(5, 4, 5, "Right."), (3, 3, 5, "Close."), (1, 1, 5, "Unrelated.")]),
           "q2": ("1=3>2", [(4, 4, 5, "Fine."), (2, 2, 5, "Wrong shape."), (4, 4, 5, "Fine too.")]),
           "q3": "skip"},
    "r3": {"q1": ("2>1>3", [(4, 4, 5, "Good."), (4, 5, 5, "Better."), (1, 1, 5, "Bad.")]),
           "q2": ("3>1=2", [(3, 3, 5, "Meh."), (3, 3, 5, "Meh."), (5, 5, 5, "Best.")]),
           "q3": ("2=3>1", [(3, 3, 5, "Short."), (4, 4, 5, "Fine."), (4, 4, 5, "Fine.")])},
}


def import_study(tmp_path, records=RECORDS, name: str = "mm-rlhf-pilot") -> Batch:
    report = batch_import(path=write_jsonl(tmp_path / f"{name}.jsonl", records), name=name, kind="preference",
                          settings={"overlap": 3}, options={"images": str(write_images_dir(tmp_path / "images"))})
    assert report.status == "imported", report.render()
    return Batch.objects.get(name=name)


def raters() -> dict[str, User]:
    return {name: UserFactory(username=name, pseudonym=f"ann-{name}") for name in PLAN}


def rate(batch: Batch, people: dict[str, User], plan=PLAN) -> None:
    """Each rater takes the batch's items from the queue and saves, or skips, as planned."""
    for name, rater in people.items():
        while (assignment := assignment_next(annotator=rater, batch=batch)) is not None:
            conversation = assignment.work_item.conversation
            planned = plan[name][conversation.external_id]
            if planned == "skip":
                conversation_skip(annotator=rater, conversation_id=conversation.id, reason="The question is unclear.")
                continue
            ranking, scores = planned
            preference_save(annotator=rater, conversation_id=conversation.id, ranking=ranking, final=True,
                            client_request_id=f"{name}-{conversation.id}",
                            ratings={i: {"helpfulness": h, "faithfulness": f, "ethics": e, "reason": reason}
                                     for i, (h, f, e, reason) in enumerate(scores)})
