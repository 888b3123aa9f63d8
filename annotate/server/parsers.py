"""The API's JSON parser: DRF's own, with the checks of ``annotate.server.json_limits`` around it.

Deep nesting is refused before ``json`` recurses (a RecursionError would be a 500), and text a database cannot
store (NUL, lone surrogates) is refused with the field that holds it, for every endpoint at once.
"""

from __future__ import annotations

import codecs
import io

from django.conf import settings
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from annotate.server.json_limits import DEPTH_MESSAGE, describe, too_deep, unstorable_text


class CheckedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read()
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        if _too_deep(raw, encoding):
            raise ParseError(DEPTH_MESSAGE)
        data = super().parse(io.BytesIO(raw), media_type, parser_context)
        found = unstorable_text(data)
        if found:
            # Shaped like the API's other errors ({"detail": ...}) plus the field. A DRF exception, not
            # annotate.errors: DRF imports this module while annotate.errors is still importing DRF.
            raise ValidationError({"detail": describe(found), "field": found[0]})
        return data


def _too_deep(raw: bytes, encoding: str) -> bool:
    try:
        if codecs.lookup(encoding).name != "utf-8":
            return too_deep(raw.decode(encoding))  # brackets and quotes are found in the text, not in its bytes
    except (LookupError, UnicodeError):
        return False  # the parser itself refuses the charset or the bytes
    return too_deep(raw)
