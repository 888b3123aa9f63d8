"""HTTP responses for exports, shared by the researcher pages and the API."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse

from evaluation.exports import Export

STREAM_BATCH = 200  # lines fetched per trip to the worker thread


async def _async_chunks(lines: Iterator[bytes]) -> AsyncIterator[bytes]:
    # Under ASGI, Django would read a synchronous iterator to the end before sending a byte (the whole export
    # in memory). Pulling a few hundred lines at a time in the ORM's thread streams it for real.
    take = sync_to_async(lambda: b"".join(itertools.islice(lines, STREAM_BATCH)), thread_sensitive=True)
    while chunk := await take():
        yield chunk


def export_response(request, export: Export) -> HttpResponse | StreamingHttpResponse:
    if export.stream is None:
        response = HttpResponse(export.content, content_type=export.content_type)
    else:
        asgi = isinstance(getattr(request, "_request", request), ASGIRequest)  # a DRF Request wraps Django's
        content = _async_chunks(export.stream) if asgi else export.stream
        response = StreamingHttpResponse(content, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    response["Cache-Control"] = "private, no-cache"
    return response
