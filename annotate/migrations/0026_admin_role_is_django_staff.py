"""Admin-role accounts made by `users add --role admin`, the People page or the API before this release were not
Django staff, so /admin/ refused them although the README gives admins the Django admin: they become staff and
superuser, as new ones are made."""

from django.db import migrations


def admins_are_django_staff(apps, schema_editor):
    User = apps.get_model("annotate", "User")
    User.objects.filter(role="admin").update(is_staff=True, is_superuser=True)


class Migration(migrations.Migration):

    dependencies = [
        ("annotate", "0025_participant_id_unique_per_batch"),
    ]

    operations = [
        migrations.RunPython(admins_are_django_staff, migrations.RunPython.noop),
    ]
