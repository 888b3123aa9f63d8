from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    name = "evaluation"
    verbose_name = "Evaluation"

    def ready(self):
        from annotate.sessions.completion import on_session_completed
        from evaluation import kinds
        from evaluation.interfeedback.hooks import count_session_outcome

        on_session_completed(count_session_outcome)
        kinds.autodiscover()  # each package's registration: its batch kind and its exports
