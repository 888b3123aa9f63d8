"""Logging filters for the server's own log."""

from __future__ import annotations

import logging


class PlainDenialWithoutTraceback(logging.Filter):
    """A 403 is an expected answer (someone opened a page that is not theirs), not a server fault: Django logs it
    with the PermissionDenied traceback, which buries real errors. Keep the one-line warning, drop the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
