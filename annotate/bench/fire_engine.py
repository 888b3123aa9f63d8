"""FIRE's evaluations run by the app (FIRE §3.4.1): fixed dialogues (students and teachers, each on the recorded
history of an imported FIRE test set) and free dialogues (a student and a teacher converse).

Same lanes, leases, cancel and resume as InterFeedback-Bench (annotate.bench.lanes): a lane owns the conversations
whose id falls in it, writes its turns chunk by chunk, and skips the turns that exist, so a resumed run never redoes
one. Replay models play back ``conversation.metadata["recorded_answers"][model name]``: a student's responses, or a
teacher's "Score: N / Feedback: ..." texts, one per turn.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.db import transaction
from django.db.models import F

from annotate.bench.fire_parsing import feedback_for_student, fixed_dialogue_reading, official_score
from annotate.bench.lanes import LaneFailed, LeasedLane, ModelReply
from annotate.bench.selectors import run_providers, run_receivers
from annotate.errors import ApplicationError
from annotate.models import BenchRun, Conversation, FireRunTurn, ModelConfig, Turn
from models_runtime import GenerationSettings, ImagePart, Message, ModelError, TaskContext

CHUNK = 200  # conversations per transaction

FIRE_TEMPLATES = {
    "student": "{question}\nThink step by step, then give your answer.",
    "student_retry": "Your teacher's feedback: {feedback}\nPlease answer the question again.",
    "teacher": (
        "You are a teacher. A student answered this question about the image.\n"
        "Question: {question}\nCorrect answer: {answer}\nThe student's latest response:\n{response}\n"
        "Rate it on a scale of 1 to 10 and help the student without stating the answer. Reply exactly as:\n"
        "Score: <1-10>\nFeedback: <your feedback>"
    ),
}


def fire_run_prompts(students: list[ModelConfig], teachers: list[ModelConfig]) -> dict:
    """What a FIRE run stores as its prompts: the templates, and each model's generation settings as the run
    starts (defaults filled in, as the backend receives them), so prompts.json says how every turn was made
    even after a model's settings are edited."""

    def settings(model: ModelConfig) -> dict:
        try:
            return asdict(GenerationSettings.from_dict(model.generation))
        except ModelError as error:  # refused now rather than failing at the run's first call
            raise ApplicationError(f"Model {model.name!r}: {error}", code="bench_models") from None

    return {"fire": dict(FIRE_TEMPLATES),
            "generation": {"students": {m.name: settings(m) for m in students},
                           "teachers": {m.name: settings(m) for m in teachers}}}


@dataclass(frozen=True)
class RecordedTurns:
    """A recorded conversation as the fixed dialogues use it (FIRE's ``eval_feedback_student`` and
    ``eval_feedback_teacher``): every student turn with the (response, feedback) pairs before it, and every
    (student response, teacher turn judging it) pair."""

    students: list[tuple[list[tuple[str, str]], str]]
    pairs: list[tuple[str, str]]


def recorded_turns(conversation: Conversation) -> RecordedTurns:
    """Every recorded student turn counts, the last one too when no teacher turn follows it; a teacher turn counts
    when a student response precedes it."""
    students: list[tuple[list[tuple[str, str]], str]] = []
    pairs: list[tuple[str, str]] = []
    response = None
    for turn in sorted(conversation.turns.all(), key=lambda t: t.index):
        if turn.role == Turn.Role.STUDENT:
            students.append((list(pairs), turn.text))
            response = turn.text
        elif turn.role == Turn.Role.TEACHER and response is not None:
            pairs.append((response, turn.text))
            response = None
    return RecordedTurns(students, pairs)


def dialogue_ended(scores: list[float | None], *, threshold: int, n_max: int) -> bool:
    """After a teacher turn, FIRE's free-dialogue runner (``model_fire_chat_loader.py``) stops at a score >= 8
    (the run's threshold), at a score of 0 or one it cannot read (it sets that to 0), or at a score that does not
    rise above the previous one; n_max (FIRE §3.4.1) bounds the rest."""
    if not scores:
        return False
    last = scores[-1]
    if len(scores) >= n_max or last is None or last == 0 or last >= threshold:
        return True
    previous = scores[-2] if len(scores) >= 2 else None
    return previous is not None and last <= previous


class FireLane(LeasedLane):
    def __init__(self, run: BenchRun, lane: int, token: str, deadline: float | None = None):
        super().__init__(run, lane, token, deadline)
        self.students = run_receivers(run)
        self.teachers = run_providers(run)
        self.templates = {**FIRE_TEMPLATES, **(run.prompts.get("fire") or {})}
        self.conversations = list(
            Conversation.objects.filter(batch=run.batch).annotate(lane=F("id") % run.lanes).filter(lane=lane)
            .select_related("image").prefetch_related("turns").order_by("pk"))

    def work(self) -> None:
        if self.run.protocol == BenchRun.Protocol.FIRE_FIXED:
            self.fixed_dialogues()
        else:
            self.free_dialogues()

    # --- calls ---------------------------------------------------------------------------------------------------

    def _image(self, conversation: Conversation) -> tuple[ImagePart, ...]:
        return (ImagePart(conversation.image.file.open("rb").read()),) if conversation.image_id else ()

    def _context(self, conversation: Conversation, model: ModelConfig, index: int,
                 partner: ModelConfig | None = None) -> TaskContext:
        """Replay: the model's recorded turns, or its turns with this partner ("teacher@student") when given."""
        recorded_by_model = (conversation.metadata or {}).get("recorded_answers", {})
        recorded = (partner and recorded_by_model.get(f"{model.name}@{partner.name}")) \
            or recorded_by_model.get(model.name) or []
        return TaskContext(task_id=conversation.external_id, round_index=index, answer_type="text",
                           ground_truth=conversation.ground_truth, recorded_answers=tuple(recorded))

    def student_turn(self, student: ModelConfig, conversation: Conversation,
                     history: list[tuple[str, str]]) -> ModelReply:
        """The student's response after ``history`` ((its response, the teacher's feedback) pairs)."""
        images = self._image(conversation)
        first = self.templates["student"].format(question=conversation.question.strip())
        messages = [Message(role="user", content=(*images, first) if images else (first,))]
        for response, feedback in history:
            messages.append(Message(role="assistant", content=(response,)))
            messages.append(Message(role="user", content=(self.templates["student_retry"].format(
                feedback=feedback_for_student(feedback)),)))
        return self._checked(self.call(student, tuple(messages), self._context(conversation, student, len(history))),
                             student, conversation)

    def teacher_turn(self, teacher: ModelConfig, conversation: Conversation, response: str, index: int,
                     student: ModelConfig | None = None) -> ModelReply:
        prompt = self.templates["teacher"].format(question=conversation.question.strip(),
                                                  answer=conversation.ground_truth, response=response.strip())
        images = self._image(conversation)
        return self._checked(self.call(teacher, (Message(role="user", content=(*images, prompt) if images else (prompt,)),),
                                  self._context(conversation, teacher, index, student)), teacher, conversation)

    @staticmethod
    def _checked(reply: ModelReply, model: ModelConfig, conversation: Conversation) -> ModelReply:
        if reply.error:
            raise LaneFailed(f"{model.label} failed on conversation {conversation.external_id}: {reply.error}")
        return reply

    def _save(self, turns: list[FireRunTurn], calls: int, *, pause: bool = True) -> None:
        with transaction.atomic():
            FireRunTurn.objects.bulk_create(turns, ignore_conflicts=True)
            self.renew(calls=calls, pause=False)  # a pause raised in here would roll the chunk back
        if pause:
            self.pause_if_due()

    def _chunks(self, make) -> None:
        """``make(conversation, made)`` appends the turns it writes; a chunk is saved as one transaction, and what
        was made before a failed call is saved too, so a resume starts from there."""
        for start in range(0, len(self.conversations), CHUNK):
            made: list[FireRunTurn] = []
            try:
                for conversation in self.conversations[start:start + CHUNK]:
                    make(conversation, made)
            except LaneFailed:
                self._save(made, calls=len(made), pause=False)
                raise
            self._save(made, calls=len(made), pause=bool(made))  # a chunk already done is no step to pause on

    # --- fixed dialogues -----------------------------------------------------------------------------------------

    def fixed_dialogues(self) -> None:
        """Every student at every recorded student turn (given the recorded turns before it), every teacher at
        every recorded teacher turn (given the recorded response it judges); the recorded turn is the reference.
        Teacher turns and references are read as FIRE's ``eval_feedback_teacher`` reads them (fire_parsing)."""
        done = set(FireRunTurn.objects.filter(run=self.run, conversation__in=self.conversations)
                   .values_list("conversation_id", "pair", "number", "role"))

        def make(conversation: Conversation, made: list[FireRunTurn]) -> None:
            recorded = recorded_turns(conversation)
            for student in self.students:
                pair = f"{student.pk}:"
                for number, (history, response) in enumerate(recorded.students, start=1):
                    if (conversation.pk, pair, number, "student") in done:
                        continue
                    reply = self.student_turn(student, conversation, history)
                    made.append(FireRunTurn(run=self.run, conversation=conversation, student=student, pair=pair,
                                            number=number, role="student", text=reply.text,
                                            reference_text=response, prompt_tokens=reply.prompt_tokens,
                                            completion_tokens=reply.completion_tokens))
            for teacher in self.teachers:
                pair = f":{teacher.pk}"
                for number, (response, feedback) in enumerate(recorded.pairs, start=1):
                    if (conversation.pk, pair, number, "teacher") in done:
                        continue
                    reply = self.teacher_turn(teacher, conversation, response, number - 1)
                    made.append(FireRunTurn(run=self.run, conversation=conversation, teacher=teacher, pair=pair,
                                            number=number, role="teacher", text=reply.text,
                                            score=fixed_dialogue_reading(reply.text).score,
                                            reference_text=feedback,
                                            reference_score=fixed_dialogue_reading(feedback).score,
                                            prompt_tokens=reply.prompt_tokens,
                                            completion_tokens=reply.completion_tokens))

        self._chunks(make)

    # --- free dialogues ------------------------------------------------------------------------------------------

    def free_dialogues(self) -> None:
        """A student answers, the teacher scores and gives feedback, the student answers again, ... until the
        dialogue ends (``dialogue_ended``: FIRE's runner and §3.4.1)."""
        written: dict[tuple[int, str], list[FireRunTurn]] = {}
        for turn in FireRunTurn.objects.filter(run=self.run, conversation__in=self.conversations).order_by(
                "number", "role"):
            written.setdefault((turn.conversation_id, turn.pair), []).append(turn)

        def make(conversation: Conversation, made: list[FireRunTurn]) -> None:
            for student in self.students:
                for teacher in self.teachers:
                    pair = f"{student.pk}:{teacher.pk}"
                    self._dialogue(conversation, student, teacher, pair, written.get((conversation.pk, pair), []),
                                   made)

        self._chunks(make)

    def _dialogue(self, conversation: Conversation, student: ModelConfig, teacher: ModelConfig, pair: str,
                  before: list[FireRunTurn], made: list[FireRunTurn]) -> None:
        """The rest of one dialogue, after the turns a previous attempt already wrote."""
        history: list[tuple[str, str]] = []
        scores: list[float | None] = []
        response = None
        for turn in before:  # student then teacher, turn by turn
            if turn.role == "student":
                response = turn.text
            else:
                history.append((response or "", turn.text))
                scores.append(turn.score)
                response = None

        while not dialogue_ended(scores, threshold=self.run.threshold, n_max=self.run.n_max):
            number = len(history) + 1
            if response is None:
                reply = self.student_turn(student, conversation, history)
                response = reply.text
                made.append(FireRunTurn(run=self.run, conversation=conversation, student=student, teacher=teacher,
                                        pair=pair, number=number, role="student", text=response,
                                        prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens))
            judged = self.teacher_turn(teacher, conversation, response, number - 1, student)
            score = official_score(judged.text)  # the score alone, as FIRE's runner reads it
            made.append(FireRunTurn(run=self.run, conversation=conversation, student=student, teacher=teacher,
                                    pair=pair, number=number, role="teacher", text=judged.text, score=score,
                                    prompt_tokens=judged.prompt_tokens, completion_tokens=judged.completion_tokens))
            history.append((response, judged.text))
            scores.append(score)
            response = None
