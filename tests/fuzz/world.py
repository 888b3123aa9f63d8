"""The data the fuzz run talks about: four personas with API tokens, and real objects behind every path id.

An InterFeedback batch (one session awaiting feedback, completed sessions with rounds, a recount, a finished
sessions export with its file), a FIRE batch with a conversation reserved by the annotator, and an import job.
Nothing is sent to a broker: the services dispatch on commit, and the fuzz tests run inside one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.authtoken.models import Token

from annotate.imports.batches import import_fire
from annotate.imports.jobs import import_job_create
from annotate.models import Assignment, Batch, Round, User
from annotate.queue.services import assignment_next
from evaluation.exports import jobs as export_jobs
from evaluation.exports.filters import parse_filters
from evaluation.interfeedback import services
from tests.annotate.helpers import run_pending_round
from tests.annotate.rating.fire.fire_data import write_sample
from tests.evaluation.builders import sessions_from_counts
from tests.factories import ModelConfigFactory, UserFactory, make_batch

PERSONAS = ("anonymous", "annotator", "researcher", "admin")


@dataclass
class World:
    tokens: dict[str, str]  # persona -> API token key (none for anonymous)
    ids: dict[str, list] = field(default_factory=dict)  # path parameter -> values of real objects

    def headers(self, persona: str) -> dict[str, str]:
        token = self.tokens.get(persona)
        return {"Authorization": f"Token {token}"} if token else {}


def build_world(tmp_path: Path) -> World:
    annotator = UserFactory(username="fuzz-annotator", role=User.Role.ANNOTATOR)
    researcher = UserFactory(username="fuzz-researcher", role=User.Role.RESEARCHER)
    admin = UserFactory(username="fuzz-admin", role=User.Role.ADMIN)
    model = ModelConfigFactory(name="fuzz-sim")

    batch = make_batch(models=[model], tasks=3, overlap=2, members=[researcher])
    session = assignment_next(annotator=annotator, batch=batch).session
    run_pending_round(session)  # round 0 answered: the session awaits feedback
    done = sessions_from_counts(batch, model, "Visual Logic", (1, 1, 0, 0), 4, annotators=(annotator,),
                                with_rounds=True)
    services.outcome_recompute(batch_id=batch.id)
    recount = services.recompute_job_create(batch=batch, user=researcher)
    export = export_jobs.sessions_export_job_create(batch=batch, user=researcher, filters=parse_filters({}))
    export_jobs.sessions_export_job_run(job_id=export.id)

    records, images = write_sample(tmp_path)
    import_fire(records, name="fuzz-fire", images=images, overlap=3)
    fire = Batch.objects.get(name="fuzz-fire")
    fire.members.add(researcher)
    # One item at a time: the session's lease runs out (it stays theirs, awaiting feedback) so a conversation comes.
    Assignment.objects.filter(session=session).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    conversation = assignment_next(annotator=annotator, batch=fire).work_item.conversation

    upload = SimpleUploadedFile("fire.json", records.read_bytes(), content_type="application/json")
    imported = import_job_create(upload=upload, name="fuzz-import", kind="fire", created_by=admin)

    rounds = list(Round.objects.filter(session__in=[session, *done]).values_list("id", flat=True)[:4])
    return World(
        tokens={persona: Token.objects.create(user=user).key
                for persona, user in (("annotator", annotator), ("researcher", researcher), ("admin", admin))},
        ids={
            "session_id": [session.id, done[0].id],
            "conversation_id": [conversation.id],
            "batch_id": [batch.id, fire.id],
            "job_id": [recount.id, export.id, imported.id],
            "round_id": rounds,
            "name": [model.name],
        },
    )
