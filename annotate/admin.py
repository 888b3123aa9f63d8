from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from annotate.models import (
    Assignment,
    Batch,
    ImageBlob,
    Job,
    ModelConfig,
    Round,
    Session,
    Task,
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
    list_display = ("name", "display_name", "backend", "queue_name", "is_active")
    list_filter = ("backend", "is_active")
    search_fields = ("name", "display_name")


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "status", "task_count", "overlap", "max_rounds", "created_at")
    list_filter = ("kind", "status")
    search_fields = ("name",)
    filter_horizontal = ("models_to_evaluate", "members")
    readonly_fields = ("task_count", "import_report", "created_at")


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


admin.site.register(ImageBlob)
admin.site.register(VerdictOverride)
admin.site.site_header = "Feedback Lab administration"
