"""The next-item API: reserve the annotator's next item of any kind (or resume the current one)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.participation import items_held_back
from annotate.queue import services as queue_services
from annotate.queue.selectors import assignment_page_url, batch_named
from annotate.server.api_schema import UrlPathField, errors


class NextItemApi(APIView):
    class NextItemInputSerializer(serializers.Serializer):
        batch = serializers.CharField(required=False, help_text="Batch name; any open batch when omitted")

    class NextItemOutputSerializer(serializers.Serializer):
        state = serializers.ChoiceField(
            choices=["item", "done", "wait", "study"],
            help_text="item: here is your next item; done: you have finished your share; wait: items are left but "
                      "held by others or blocked for now, ask again after retry_after seconds; study (an invited "
                      "participant): your study asks something first (consent, screening, a questionnaire) or "
                      "your participation has ended: see url (GET /api/study/ says which)")
        session_id = serializers.IntegerField(required=False, allow_null=True, help_text="null for a FIRE conversation")
        conversation_id = serializers.IntegerField(required=False, allow_null=True,
                                                   help_text="set for a FIRE conversation")
        url = UrlPathField(required=False, help_text="item: the page of the item; done, for an invited participant: "
                                                     "the completion page (their code once their share is done); "
                                                     "study: the page of their study's step")
        retry_after = serializers.IntegerField(required=False, help_text="wait only: seconds (also the Retry-After "
                                                                         "header)")

    @extend_schema(request=NextItemInputSerializer,
                   responses={200: NextItemOutputSerializer,
                              **errors(400, 403, 404, 415, e403="Researchers and admins are not served items",
                                       e404="No batch of that name")},
                   summary="Reserve the next item (or resume the current one)")
    def post(self, request):
        data = self.NextItemInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data.get("batch")
        assignment = queue_services.assignment_next(annotator=request.user, batch_name=name)
        user = request.user
        if assignment is None and user.crowd_batch_id and items_held_back(user, user.crowd_batch):
            return Response({"state": "study", "url": reverse("crowd-study")})
        if assignment is None:
            batch = None if name is None else batch_named(name)  # renamed or deleted since: NotFound
            empty = queue_services.nothing_to_serve(annotator=request.user, batch=batch)
            if empty.state == "wait":
                return Response({"state": "wait", "retry_after": empty.retry_after},
                                headers={"Retry-After": str(empty.retry_after)})
            if request.user.crowd_batch_id:
                return Response({"state": "done", "url": reverse("crowd-done")})
            return Response({"state": "done"})
        conversation_id = assignment.work_item.conversation_id
        session_id = None if conversation_id else assignment.session.id
        return Response({"state": "item", "session_id": session_id, "conversation_id": conversation_id,
                         "url": assignment_page_url(assignment)})
