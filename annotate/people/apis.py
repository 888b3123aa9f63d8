"""API for people (admins: create in bulk, list, deactivate, new set-password link) and for each user's own token.

Thin views: role check, serializer for the shape, the service for the rest; the service's problems come back as a
400 naming ``users[i], field``.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.errors import PermissionDenied
from annotate.models import User
from annotate.people import selectors, services
from annotate.people.rows import person_rows_from_data
from annotate.server.api_schema import UrlPathField, errors

TAGS = ["people"]


def _admin_only(request) -> None:
    if not request.user.is_admin_role:
        raise PermissionDenied("Only admins can manage people.")


@extend_schema_serializer(component_name="Person")
class PersonSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.CharField(allow_blank=True)
    role = serializers.ChoiceField(choices=User.Role.choices)
    pseudonym = serializers.CharField()
    is_active = serializers.BooleanField()
    has_password = serializers.BooleanField(source="has_usable_password")
    last_login = serializers.DateTimeField(allow_null=True)


class UsersApi(APIView):
    @extend_schema_serializer(component_name="PeopleCreateInput")
    class InputSerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=User.Role.choices)
        users = serializers.ListField(
            child=serializers.DictField(child=serializers.CharField(allow_blank=True, allow_null=True)),
            allow_empty=False, max_length=services.MAX_ROWS,
            help_text="One object per person: username (required), email, first_name, last_name",
        )

    @extend_schema_serializer(component_name="PersonCreated")
    class CreatedSerializer(PersonSerializer):
        set_password_url = serializers.URLField(help_text="One-time link: works until the password is set")

    @extend_schema(
        parameters=[OpenApiParameter("role", str, enum=User.Role.values), OpenApiParameter("active", bool)],
        responses={200: PersonSerializer(many=True), **errors(403, e403="Not an admin")},
        summary="People (admins)", tags=TAGS,
    )
    def get(self, request):
        _admin_only(request)
        active = request.query_params.get("active")
        users = selectors.users_list(role=request.query_params.get("role") or None,
                                     active=None if active is None else active.lower() in ("1", "true", "yes"))
        return Response(PersonSerializer(users, many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={201: CreatedSerializer(many=True), **errors(400, 403, 415, e403="Not an admin")},
        summary="Create people in bulk, all or none; each gets a one-time set-password link (admins)", tags=TAGS,
    )
    def post(self, request):
        _admin_only(request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        created = services.users_create_bulk(rows=person_rows_from_data(data.validated_data["users"]),
                                             role=data.validated_data["role"])
        body = [{**PersonSerializer(item.user).data,
                 "set_password_url": request.build_absolute_uri(item.set_password_path)} for item in created]
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class UserDetailApi(APIView):
    @extend_schema_serializer(component_name="PersonUpdateInput")
    class InputSerializer(serializers.Serializer):
        is_active = serializers.BooleanField(help_text="false: deactivate (the work is kept); true: reactivate")

    @extend_schema(responses={200: PersonSerializer, **errors(403, 404, e403="Not an admin")},
                   summary="One person (admins)", tags=TAGS)
    def get(self, request, username: str):
        _admin_only(request)
        return Response(PersonSerializer(selectors.user_get(username)).data)

    @extend_schema(request=InputSerializer, responses={200: PersonSerializer, **errors(400, 403, 404, 415)},
                   summary="Deactivate or reactivate a person (admins)", tags=TAGS)
    def patch(self, request, username: str):
        _admin_only(request)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = selectors.user_get(username)
        if data.validated_data["is_active"]:
            services.user_reactivate(user=user)
        else:
            services.user_deactivate(user=user, by=request.user)
        return Response(PersonSerializer(user).data)


class UserLinkApi(APIView):
    @extend_schema_serializer(component_name="SetPasswordLink")
    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField()
        set_password_url = serializers.URLField()

    @extend_schema(request=None, responses={200: OutputSerializer, **errors(400, 403, 404)},
                   summary="A new one-time set-password link (admins)", tags=TAGS)
    def post(self, request, username: str):
        _admin_only(request)
        user = selectors.user_get(username)
        path = services.user_set_password_link(user=user)
        return Response({"username": user.username, "set_password_url": request.build_absolute_uri(path)})


class TokenApi(APIView):
    """Your own API token (any signed-in user)."""

    @extend_schema_serializer(component_name="TokenStatus")
    class StatusSerializer(serializers.Serializer):
        exists = serializers.BooleanField()
        created = serializers.DateTimeField(allow_null=True)

    @extend_schema_serializer(component_name="TokenIssued")
    class IssuedSerializer(serializers.Serializer):
        key = serializers.CharField(help_text="Shown this once: send it as `Authorization: Token <key>`")
        page = UrlPathField()

    @extend_schema(responses={200: StatusSerializer, **errors(403)}, summary="Whether you have an API token",
                   tags=TAGS)
    def get(self, request):
        token = selectors.token_get(request.user)
        return Response({"exists": token is not None, "created": token.created if token else None})

    @extend_schema(request=None, responses={201: IssuedSerializer, **errors(400, 403)},
                   summary="Create your API token (replacing the old one); the key is in this answer only",
                   tags=TAGS)
    def post(self, request):
        key = services.token_issue(user=request.user)
        return Response({"key": key, "page": reverse("api-token-page")}, status=status.HTTP_201_CREATED,
                        headers={"Cache-Control": "no-store"})

    @extend_schema(request=None, responses={204: None, **errors(403)}, summary="Revoke your API token", tags=TAGS)
    def delete(self, request):
        services.token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
