"""Recruiting for a batch: its invite links (create, revoke, how each was used) as a page and an API, over
annotate.crowd's services (the `invite_link` command uses the same)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.crowd import selectors as crowd_selectors
from annotate.crowd import services as crowd_services
from annotate.errors import ApplicationError, NotFound
from annotate.people.access import batch_for_researcher, researcher_required
from annotate.server.api_schema import UrlPathField, errors

ERRORS = errors(400, 403, 404, e403="Not signed in, or not a researcher", e404="No such batch or link, or not a member")


def _int_or_none(value: str | None, name: str) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ApplicationError(gettext("%(field)s must be a whole number.") % {"field": name}, code="bad_number")
    return int(value)


def _float_or_none(value: str | None, name: str) -> float | None:
    value = (value or "").strip()
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ApplicationError(gettext("%(field)s must be a number.") % {"field": name}, code="bad_number") from None


# --- page ---------------------------------------------------------------------------------------------------


@researcher_required
def invite_links_page(request, batch_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    form = {}
    if request.method == "POST":
        form = request.POST
        try:
            link, _ = crowd_services.invite_link_create(
                batch=batch, label=request.POST.get("label", ""),
                expires_in_days=_float_or_none(request.POST.get("expires_days"), gettext("Expiry (days)")),
                items_per_participant=_int_or_none(request.POST.get("items_per_participant"),
                                                   gettext("Items per participant")),
                completion_code=request.POST.get("completion_code"), created_by=request.user)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            messages.success(request, gettext("Invite link created: copy it from the list below."))
            return redirect(f"{request.path}#link-{link.pk}")
    return render(request, "annotate/invites.html", {
        "batch": batch, "links": crowd_selectors.invite_links_usage(batch=batch), "form": form,
        "origin": f"{request.scheme}://{request.get_host()}",
    }, status=400 if form else 200)


@require_POST
@researcher_required
def invite_link_revoke_page(request, batch_id: int, link_id: int):
    batch = batch_for_researcher(request.user, batch_id)
    link = crowd_selectors.invite_link_of_batch(batch=batch, link_id=link_id)
    if link is None:
        raise NotFound(f"No invite link {link_id} in this batch.")
    crowd_services.invite_link_revoke(link=link)
    messages.success(request, gettext("The link is revoked: nobody can join through it any more. The people who "
                                      "joined keep their work."))
    return redirect("research-invites", batch.pk)


# --- API ----------------------------------------------------------------------------------------------------


class InviteLinkSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="link.id")
    label = serializers.CharField(source="link.label")
    state = serializers.ChoiceField(choices=["active", "expired", "revoked"])
    url = UrlPathField(source="path", help_text="The join page (add the site's origin)")
    prolific_url = UrlPathField(source="prolific_path", help_text="The same with Prolific's URL parameters")
    created_at = serializers.DateTimeField(source="link.created_at")
    expires_at = serializers.DateTimeField(source="link.expires_at", allow_null=True)
    revoked_at = serializers.DateTimeField(source="link.revoked_at", allow_null=True)
    joined = serializers.IntegerField(help_text="People who joined through this link")
    items_done = serializers.IntegerField(help_text="Items they finished in this batch")
    finished_share = serializers.IntegerField(
        allow_null=True, help_text="People who finished their share (null: the batch sets no per-participant limit)")


class InviteLinkCreateSerializer(serializers.Serializer):
    label = serializers.CharField(required=False, allow_blank=True, max_length=128)
    expires_days = serializers.FloatField(required=False, allow_null=True, help_text="The link stops after N days")
    items_per_participant = serializers.IntegerField(
        required=False, allow_null=True, help_text="The batch's per-participant item limit (0: none; omitted: kept)")
    completion_code = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=64,
        help_text="The batch's completion code, shown to participants who finish (omitted: kept)")


def _usage(batch, link_id: int):
    row = next((row for row in crowd_selectors.invite_links_usage(batch=batch) if row.link.pk == link_id), None)
    if row is None:
        raise NotFound(f"No invite link {link_id} in this batch.")
    return row


class BatchInviteLinksApi(APIView):
    @extend_schema(responses={200: InviteLinkSerializer(many=True), **ERRORS}, tags=["research"],
                   summary="The batch's invite links, newest first, with how each was used")
    def get(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        return Response(InviteLinkSerializer(crowd_selectors.invite_links_usage(batch=batch), many=True).data)

    @extend_schema(request=InviteLinkCreateSerializer, responses={201: InviteLinkSerializer, **ERRORS},
                   tags=["research"], summary="Create an invite link")
    def post(self, request, batch_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        data = InviteLinkCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = dict(data.validated_data)
        link, _ = crowd_services.invite_link_create(
            batch=batch, created_by=request.user, label=given.get("label", ""),
            expires_in_days=given.get("expires_days"), items_per_participant=given.get("items_per_participant"),
            completion_code=given.get("completion_code"))
        return Response(InviteLinkSerializer(_usage(batch, link.pk)).data, status=status.HTTP_201_CREATED)


class BatchInviteLinkRevokeApi(APIView):
    @extend_schema(request=None, responses={200: InviteLinkSerializer, **ERRORS}, tags=["research"],
                   summary="Revoke an invite link (people who joined keep their work)")
    def post(self, request, batch_id: int, link_id: int):
        batch = batch_for_researcher(request.user, batch_id)
        link = crowd_selectors.invite_link_of_batch(batch=batch, link_id=link_id)
        if link is None:
            raise NotFound(f"No invite link {link_id} in this batch.")
        crowd_services.invite_link_revoke(link=link)
        return Response(InviteLinkSerializer(_usage(batch, link.pk)).data)
