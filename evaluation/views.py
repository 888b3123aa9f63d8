"""Researcher pages."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from evaluation.selectors import batches_for_researcher


def researcher_required(view):
    @login_required
    def wrapped(request, *args, **kwargs):
        if not request.user.is_researcher_role:
            raise PermissionDenied("Researchers only")
        return view(request, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@researcher_required
def researcher_home(request):
    return render(request, "evaluation/home.html", {"batches": batches_for_researcher(request.user)})
