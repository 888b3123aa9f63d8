"""Django's makemessages, also collecting the msgids of `annotate.wording` phrases (report tables, FIRE's criteria,
leak-warning descriptions): ``phrase("...")`` like gettext's, ``phrase_in("context", "...")`` like pgettext's.

Customized the way Django's documentation describes ("Customizing the makemessages command"): extra xgettext
options, nothing else.
"""

from __future__ import annotations

from django.core.management.commands import makemessages


class Command(makemessages.Command):
    xgettext_options = [*makemessages.Command.xgettext_options, "--keyword=phrase", "--keyword=phrase_in:1c,2"]
