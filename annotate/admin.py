from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from annotate.models import (
    Assignment,
    Batch,
    Conversation,
    ImageBlob,
    Job,
    LeakWarning,
    ModelConfig,
    Rating,
    Round,
    Session,
    Task,
    Turn,
    User,
    VerdictOverride,
    WorkItem,
)


@admin.register(User)
class FeedbackLabUserAdmin(UserAdmin):
    list_display = ("username", "role", "pseudonym", "is_active", "last_login")
    list_filter = ("role", "is_active", "is_staff")
    fieldsets = UserAdmin.fieldsets + (("Feedback Lab", {"fields": ("role", "pseudonym", "external_id")}),)
    add_fieldsets = UserAdmin.add_fieldsets + (("Feedback Lab", {"fields": ("role",)}),)


@admin.register(ModelConfig)
class ModelConfigAdmin(admin.ModelAdmin):
    """Model configs, with "Test this model": an action and a button that queue a check on the model's queue
    (annotate.modelconfigs.check) and show its result page, which reloads until the job is done."""

    list_display = ("name", "display_name", "backend", "queue_name", "is_active")
    list_filter = ("backend", "is_active")
    search_fields = ("name", "display_name")
    actions = ["test_model"]
    change_form_template = "admin/annotate/modelconfig/change_form.html"
    check_result_template = "admin/annotate/modelconfig/check_result.html"

    def get_urls(self):
        from django.urls import path

        view = self.admin_site.admin_view
        return [
            path("<int:object_id>/check/", view(self.check_view), name="annotate_modelconfig_check"),
            path("checks/<int:job_id>/", view(self.check_result_view), name="annotate_modelconfig_check_result"),
        ] + super().get_urls()

    @admin.action(description="Test this model (one short prompt with an image)", permissions=["change"])
    def test_model(self, request, queryset):
        from django.shortcuts import redirect
        from django.urls import reverse
        from django.utils.html import format_html, format_html_join

        from annotate.modelconfigs.check import model_config_check

        jobs = [(config, model_config_check(config=config, created_by=request.user)) for config in queryset]
        if len(jobs) == 1:
            return redirect(reverse("admin:annotate_modelconfig_check_result", args=[jobs[0][1].pk]))
        links = format_html_join(
            ", ", '<a href="{}">{}</a>',
            ((reverse("admin:annotate_modelconfig_check_result", args=[job.pk]), config.name) for config, job in jobs),
        )
        self.message_user(request, format_html("Queued {} model checks: {}", len(jobs), links))
        return None

    def check_view(self, request, object_id: int):
        """POST from the change page's button: queue the check (a write, so never on GET)."""
        from django.core.exceptions import PermissionDenied
        from django.shortcuts import get_object_or_404, redirect
        from django.urls import reverse

        from annotate.modelconfigs.check import model_config_check

        config = get_object_or_404(ModelConfig, pk=object_id)
        if request.method != "POST":
            return redirect(reverse("admin:annotate_modelconfig_change", args=[config.pk]))
        if not self.has_change_permission(request, config):
            raise PermissionDenied
        job = model_config_check(config=config, created_by=request.user, with_image=request.POST.get("image") != "0")
        return redirect(reverse("admin:annotate_modelconfig_check_result", args=[job.pk]))

    def check_result_view(self, request, job_id: int):
        from django.core.exceptions import PermissionDenied
        from django.shortcuts import get_object_or_404
        from django.template.response import TemplateResponse

        from annotate.jobs.selectors import job_hint, job_is_finished

        if not self.has_view_permission(request):
            raise PermissionDenied
        job = get_object_or_404(Job, pk=job_id, kind=Job.Kind.MODEL_CHECK)
        config = ModelConfig.objects.filter(pk=job.params.get("model_config_id")).first()
        context = {
            **self.admin_site.each_context(request),
            "title": f"Model check: {job.params.get('model', '?')}",
            "opts": self.model._meta,
            "job": job,
            "config": config,
            "report": job.report or {},
            "done": job_is_finished(job),
            "hint": job_hint(job),
        }
        return TemplateResponse(request, self.check_result_template, context)


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "status", "task_count", "overlap", "max_rounds", "allow_repeat_tasks",
                    "created_at")
    list_filter = ("kind", "status", "allow_repeat_tasks", "open_to_all_annotators")
    search_fields = ("name",)
    filter_horizontal = ("models_to_evaluate", "members")
    # Annotators are set by the import's settings (`--annotators`), which keeps annotators_named in step; the serving
    # order is drawn once from the seed (set at import) and kept, so a study can be run again the same way.
    readonly_fields = ("task_count", "import_report", "created_at", "annotators", "annotators_named", "serving_seed",
                       "serving_models", "annotators_started")


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("external_id", "batch", "category", "answer_type", "is_gold")
    list_filter = ("batch", "category", "answer_type", "is_gold")
    search_fields = ("external_id", "question")
    list_select_related = ("batch",)


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0
    fields = ("index", "feedback_text", "answer_text", "extracted_answer", "final_verdict", "verdict_source",
              "generation_status", "latency_ms", "error")
    readonly_fields = fields
    can_delete = False


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("id", "batch", "task", "model_config", "annotator", "status", "corrected_round", "started_at")
    list_filter = ("status", "batch", "model_config")
    list_select_related = ("batch", "task", "model_config", "annotator")
    raw_id_fields = ("task", "assignment", "annotator")
    inlines = [RoundInline]


@admin.register(WorkItem)
class WorkItemAdmin(admin.ModelAdmin):
    list_display = ("id", "batch", "task", "model_config", "completed_count", "active_count", "pinned_to")
    list_filter = ("batch",)
    raw_id_fields = ("task", "pinned_to")
    list_select_related = ("batch", "task", "model_config", "pinned_to")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("id", "work_item", "annotator", "status", "lease_expires_at", "skip_reason")
    list_filter = ("status",)
    raw_id_fields = ("work_item", "annotator")


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "batch", "progress", "message", "created_at", "finished_at")
    list_filter = ("kind", "status")
    readonly_fields = [f.name for f in Job._meta.fields]


@admin.register(LeakWarning)
class LeakWarningAdmin(admin.ModelAdmin):
    """A record of what annotators were warned about: read-only (the quality page counts these)."""

    list_display = ("id", "session", "annotator", "round_index", "stated_answer", "stated_answer_correct",
                    "created_at")
    list_filter = ("stated_answer_correct",)
    list_select_related = ("session", "annotator")
    raw_id_fields = ("session", "annotator")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


admin.site.register(ImageBlob)
admin.site.register(VerdictOverride)
admin.site.site_header = "Feedback Lab administration"


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    fields = ("index", "role", "kind", "text", "is_rateable")
    readonly_fields = fields
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("external_id", "batch", "split", "source")
    list_filter = ("batch", "split")
    search_fields = ("external_id", "question")
    list_select_related = ("batch",)
    raw_id_fields = ("image",)
    inlines = [TurnInline]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ("id", "turn", "annotator", "score", "is_final")
    list_filter = ("is_final", "score")
    raw_id_fields = ("turn", "annotator")
    list_select_related = ("turn", "annotator")
