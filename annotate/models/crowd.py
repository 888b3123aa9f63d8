"""Invite links as rows: listed, counted and revoked from the researcher's page (the signed token names the row)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class InviteLink(models.Model):
    batch = models.ForeignKey("Batch", on_delete=models.CASCADE, related_name="invite_links")
    label = models.CharField(max_length=128, blank=True, help_text="For the researcher, e.g. 'Prolific pilot'")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"invite link {self.pk} of {self.batch_id}" + (f" ({self.label})" if self.label else "")
