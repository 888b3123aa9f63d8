"""The next-item API: reserve the annotator's next item of any kind (or resume the current one)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import NotFound
from annotate.queue import services as queue_services
from annotate.queue.selectors import assignment_page_url, batch_by_name
from annotate.server.api_schema import UrlPathField, errors


class NextItemApi(APIView):
    class NextItemInputSerializer(serializers.Serializer):
        batch = serializers.CharField(required=False, help_text="Batch name; any open batch when omitted")

    class NextItemOutputSerializer(serializers.Serializer):
        session_id = serializers.IntegerField(allow_null=True, help_text="null for a FIRE conversation")
        conversation_id = serializers.IntegerField(allow_null=True, help_text="set for a FIRE conversation")
        url = UrlPathField(help_text="The page of the item")

    @extend_schema(request=NextItemInputSerializer,
                   responses={200: NextItemOutputSerializer, 204: None,
                              **errors(400, 403, 404, 415, e404="No batch of that name")},
                   summary="Reserve the next item (or resume the current one)")
    def post(self, request):
        data = self.NextItemInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        batch = None
        if data.validated_data.get("batch"):
            batch = batch_by_name(data.validated_data["batch"])
            if batch is None:
                raise NotFound(f"No batch named {data.validated_data['batch']!r}.")
        assignment = queue_services.assignment_next(annotator=request.user, batch=batch)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        conversation_id = assignment.work_item.conversation_id
        session_id = None if conversation_id else assignment.session.id
        return Response({"session_id": session_id, "conversation_id": conversation_id,
                         "url": assignment_page_url(assignment)})
