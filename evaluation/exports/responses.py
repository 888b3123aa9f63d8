"""HTTP responses for exports, shared by the researcher pages and the API, and what the API's downloads declare."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation

from annotate.server.api_schema import errors
from annotate.server.version import stamp
from evaluation.exports.registry import Export

ERRORS = errors(400, 403, 404, e400="Bad filter or format (the message names it)",
                e403="Not signed in, or not a researcher", e404="No such batch, or not a member")


@extend_schema_serializer(component_name="TableDocument")
class TableDocumentSerializer(serializers.Serializer):
    """A table as JSON (the report's tables and the .json downloads)."""

    title = serializers.CharField(allow_blank=True)
    columns = serializers.ListField(child=serializers.CharField(allow_blank=True))
    rows = serializers.ListField(child=serializers.DictField(), help_text="One object per row, keyed by column")
    notes = serializers.ListField(child=serializers.CharField(allow_blank=True))


class FileContentNegotiation(BaseContentNegotiation):
    """Downloads ignore the Accept header (curl, browsers and scripts all get the file; errors are JSON)."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


STREAM_BATCH = 200  # lines fetched per trip to the worker thread
FILE_CHUNK = 256 * 1024  # bytes read per trip when serving a stored export file under ASGI


async def _async_chunks(items: Iterator[bytes], batch: int = STREAM_BATCH, *,
                        thread_sensitive: bool = True) -> AsyncIterator[bytes]:
    # Under ASGI, Django would read a synchronous iterator to the end before sending a byte (the whole export
    # in memory). Pulling a few hundred lines at a time in the ORM's thread streams it for real.
    take = sync_to_async(lambda: b"".join(itertools.islice(items, batch)), thread_sensitive=thread_sensitive)
    try:
        while chunk := await take():
            yield chunk
    finally:
        if hasattr(items, "close"):  # a client that went away: close the file now, not at garbage collection
            await sync_to_async(items.close, thread_sensitive=thread_sensitive)()


def _is_asgi(request) -> bool:
    return isinstance(getattr(request, "_request", request), ASGIRequest)  # a DRF Request wraps Django's


def export_response(request, export: Export) -> HttpResponse | StreamingHttpResponse:
    if export.stream is None:
        response = HttpResponse(export.content, content_type=export.content_type)
    else:
        content = _async_chunks(export.stream) if _is_asgi(request) else export.stream
        response = StreamingHttpResponse(content, content_type=export.content_type)
    response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
    response["Cache-Control"] = "private, no-cache"
    return stamp(response)  # the file's own bytes stay as they are (a CSV has no place for a comment)


def _file_chunks(handle) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(FILE_CHUNK):
            yield chunk


def file_response(request, handle, *, filename: str, content_type: str, size: int | None = None) -> StreamingHttpResponse:
    """A stored export file (an open binary file) as an attachment, streamed without holding it in memory.

    WSGI: FileResponse (sendfile where the server has it). ASGI: an async iterator reading a chunk per trip to
    a thread (Django would otherwise read a synchronous file whole before sending a byte).
    """
    if _is_asgi(request):
        response = StreamingHttpResponse(_async_chunks(_file_chunks(handle), 1, thread_sensitive=False),
                                         content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        if size is not None:
            response["Content-Length"] = str(size)
    else:
        response = FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)
    response["Cache-Control"] = "private, no-cache"
    stamp(response)
    return response
