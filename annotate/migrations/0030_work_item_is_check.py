"""Work items of gold tasks become attention checks (WorkItem.is_check), served apart from the overlap."""

from django.db import migrations, models
from django.db.models import Q


def mark_checks(apps, schema_editor):
    WorkItem = apps.get_model("annotate", "WorkItem")
    WorkItem.objects.filter(task__is_gold=True).update(is_check=True)


class Migration(migrations.Migration):
    dependencies = [("annotate", "0029_batch_open_to_all_annotators")]

    operations = [
        migrations.AddField(model_name="workitem", name="is_check", field=models.BooleanField(default=False)),
        migrations.AddIndex(
            model_name="workitem",
            index=models.Index(condition=Q(is_check=True), fields=["batch", "id"], name="work_item_checks"),
        ),
        migrations.RunPython(mark_checks, migrations.RunPython.noop),
    ]
