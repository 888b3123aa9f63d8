from django.apps import AppConfig


class AnnotateConfig(AppConfig):
    name = "annotate"
    verbose_name = "Annotation"

    def ready(self):
        from annotate.config import checks  # noqa: F401  (registers system checks)
        from annotate.crowd import hooks  # noqa: F401  (ends participations after failed attention checks)
