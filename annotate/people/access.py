"""Who may open what, once for every page: the role rules as page decorators, and the batches a researcher reads.

A page behind one of the decorators answers the domain's errors as the API does (annotate.errors): NotFound is a
404 and PermissionDenied a 403, each with its message on the styled error page, whatever raised it (the view, a
selector, a service). Anyone not signed in is sent to the login page first.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Protocol, cast, overload

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as PageDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponseBase

from annotate.errors import NotFound, PermissionDenied
from annotate.models import Batch, User

View = Callable[..., HttpResponseBase]


def signed_in(view: View) -> View:
    """Any signed-in person; the domain's NotFound and PermissionDenied become the 404 and 403 pages."""

    @login_required
    @wraps(view)
    def page(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return view(request, *args, **kwargs)
        except NotFound as error:
            raise Http404(error.message) from None
        except PermissionDenied as error:
            raise PageDenied(error.message) from None

    return page


class RoleRequired(Protocol):
    """``@rule`` on a view, or ``@rule(message="...")`` to say why others are refused."""

    @overload
    def __call__(self, view: View, /) -> View: ...

    @overload
    def __call__(self, view: None = None, /, *, message: str = ...) -> Callable[[View], View]: ...


def _role_required(allowed: Callable[[User], bool], default_message: str) -> RoleRequired:
    def decorator(view: View | None = None, *, message: str = default_message) -> View | Callable[[View], View]:
        def wrap(view: View) -> View:
            @wraps(view)
            def page(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
                user = request.user  # signed in: login_required ran first
                if not (isinstance(user, User) and allowed(user)):
                    raise PermissionDenied(message)
                return view(request, *args, **kwargs)

            return signed_in(page)

        return wrap(view) if view is not None else wrap

    return cast(RoleRequired, decorator)


# `@researcher_required` or `@admin_required(message="Only admins may import batches.")`
researcher_required = _role_required(lambda user: user.is_researcher_role,
                                     "Only researchers and admins may open this page.")
admin_required = _role_required(lambda user: user.is_admin_role, "Only admins may open this page.")


def researcher_batches(user: User, batches: QuerySet[Batch] | None = None) -> QuerySet[Batch]:
    """The batches (of ``batches``, else all) a researcher reads: all for admins, those they are a member of
    otherwise."""
    batches = Batch.objects.all() if batches is None else batches
    return batches if user.is_admin_role else batches.filter(members=user)


def batch_for_researcher(user: User, batch_id: int, batches: QuerySet[Batch] | None = None) -> Batch:
    """The batch if the user may read it (admins; researchers who are members); ``batches`` may add
    select_related or annotations to the query.

    Anyone else who is not a researcher gets PermissionDenied; a missing batch and one the researcher is not a
    member of get the same NotFound, so ids cannot be probed.
    """
    if not user.is_authenticated or not user.is_researcher_role:
        raise PermissionDenied("Only researchers and admins can read batches.")
    batch = researcher_batches(user, batches).filter(pk=batch_id).first()
    if batch is None:
        raise NotFound(f"Batch {batch_id} does not exist or you are not a member of it.")
    return batch
