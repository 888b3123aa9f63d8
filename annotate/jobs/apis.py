"""Any job's status, for whoever may read it (the URL every job-starting API returns)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.jobs.selectors import job_for_user
from annotate.jobs.serializers import JobSerializer
from annotate.server.api_schema import errors


class JobDetailApi(APIView):
    @extend_schema(
        responses={200: JobSerializer, **errors(403, 404, e403="Not a researcher or admin",
                                                      e404="No such job, or not yours")},
        summary="A job's status, progress and result (poll until done)", tags=["jobs"],
    )
    def get(self, request, job_id: int):
        return Response(JobSerializer(job_for_user(request.user, job_id)).data)
