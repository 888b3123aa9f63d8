from django.db import migrations
from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce


def backfill_revealed_at(apps, schema_editor):
    """Sessions that reached the last round (or wait for its feedback) had their ground truth shown: when the
    round before the last finished (else when the last was sent, else when the session started)."""
    Batch, Session, Round = apps.get_model("annotate", "Batch"), apps.get_model("annotate", "Session"), \
        apps.get_model("annotate", "Round")
    for batch_id, max_rounds in Batch.objects.values_list("id", "max_rounds"):
        reveal_round = Round.objects.filter(session=OuterRef("pk"), index=max_rounds - 1).order_by()
        last_round = Round.objects.filter(session=OuterRef("pk"), index=max_rounds).order_by()
        revealed = Exists(last_round) | (Q(status="awaiting_feedback") & Exists(reveal_round))
        Session.objects.filter(revealed, batch_id=batch_id, revealed_at__isnull=True).update(revealed_at=Coalesce(
            Subquery(reveal_round.values("finished_at")[:1]),
            Subquery(last_round.values("created_at")[:1]),
            F("started_at"),
        ))


class Migration(migrations.Migration):

    dependencies = [
        ('annotate', '0007_integrity_fields'),
    ]

    operations = [
        migrations.RunPython(backfill_revealed_at, migrations.RunPython.noop, elidable=True),
    ]
