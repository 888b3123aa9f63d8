"""English text that a page can show in its reader's language: report tables' titles, columns and notes, FIRE's
criteria and scale, what a leak warning detected.

A `Phrase` *is* its English text (a `str`): it is stored, exported (csv, json, LaTeX, Markdown), compared, hashed,
pickled and cached as English, whatever language a request has active, so a paper's table stays byte for byte
the same. It also remembers its msgid, context and parameters, so a page translates it when it shows it:
``shown(text)`` gives the active language's text of a Phrase, and any other value unchanged.

``phrase(msgid, **params)`` and ``phrase_in(context, msgid, **params)`` make one; `makemessages` (this project's,
annotate.management.commands.makemessages) collects their msgids into the catalogs like gettext's. Parameters
fill ``%(name)s`` placeholders (a literal percent sign is ``%%`` once there are parameters); a parameter that is
itself a Phrase is translated with it.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, pgettext


class Phrase(str):
    """English text that knows its msgid, context and parameters (see the module's docstring)."""

    msgid: str
    context: str
    params: dict[str, Any]

    def __new__(cls, msgid: str, context: str = "", params: dict[str, Any] | None = None) -> Phrase:
        params = dict(params or {})
        text = super().__new__(cls, msgid % params if params else msgid)
        text.msgid, text.context, text.params = msgid, context, params
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Phrase, (self.msgid, self.context, self.params))

    def shown(self) -> str:
        """The text in the active language (English where the catalog has no translation)."""
        text = pgettext(self.context, self.msgid) if self.context else gettext(self.msgid)
        if not self.params:
            return text
        return text % {name: shown(value) for name, value in self.params.items()}


def phrase(msgid: str, /, **params: Any) -> Phrase:
    return Phrase(msgid, "", params)


def phrase_in(context: str, msgid: str, /, **params: Any) -> Phrase:
    """A phrase whose msgid alone is ambiguous ("Split" of a dataset, not the verb): translated in its context."""
    return Phrase(msgid, context, params)


def shown(value: Any) -> Any:
    """A Phrase in the active language; any other value as it is."""
    return value.shown() if isinstance(value, Phrase) else value
