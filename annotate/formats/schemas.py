"""One JSON Schema (draft 2020-12) per record format. The limits come from the importers' own constants; the field
lists are written out here and a test compares them with what each importer accepts, so a field added to an
importer without its documentation fails it."""

from __future__ import annotations

from typing import Any

from annotate.crowd.attention import GOLD_CHECK_TYPES
from annotate.crowd.questions import MAX_OPTION, MAX_OPTIONS, MAX_QUESTIONS, MAX_TEXT, QUESTION_TYPES
from annotate.crowd.study import MAX_CONSENT_CHARS, MAX_TIME_LIMIT_MINUTES
from annotate.importkit.fields import MAX_RECORDED_KEY
from annotate.models import CrowdStudy, Task
from annotate.people.services import FIELD_LIMITS
from annotate.rating.fire.records import MAX_TURNS
from annotate.rating.preference.importer import MAX_CANDIDATES, MIN_CANDIDATES
from annotate.sessions.importers.taskrecords import MAX_IMAGES_PER_TASK, MAX_QUESTION_CHARS
from annotate.sessions.importers.taskrecords import MAX_OPTIONS as MAX_TASK_OPTIONS

DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE = "/api/schema/formats/"
Schema = dict[str, Any]

_TEXT: Schema = {"type": "string", "minLength": 1, "pattern": r"\S"}
_ID: Schema = {"type": ["string", "number"], "maxLength": 200,
               "description": "The record's id in your file; a number is read as its text."}
_CODE: Schema = {"type": "string", "pattern": r"^[A-Za-z0-9_-]{0,64}$"}


def _schema(name: str, title: str, description: str, properties: dict[str, Schema], *, required: tuple[str, ...] = (),
            extra: bool = False, **more: Any) -> Schema:
    return {"$schema": DIALECT, "$id": f"{BASE}{name}.json", "title": title, "description": description,
            "type": "object", "properties": properties, "required": list(required), "additionalProperties": extra,
            **more}


def _recorded_answers(entry: str, max_items: int | None = None) -> Schema:
    answers: Schema = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    if max_items is not None:
        answers["maxItems"] = max_items
    return {"type": "object", "propertyNames": {"minLength": 1, "maxLength": MAX_RECORDED_KEY, "pattern": r"\S"},
            "additionalProperties": answers,
            "description": f"What a replay model plays back: a model name -> a list of answers ({entry})."}


# --- what a user writes ----------------------------------------------------------------------------------------

TASK = _schema(
    "interfeedback-task", "InterFeedback task",
    "One line of tasks.jsonl (JSON Lines, alone or in a zip with images/). Unknown fields are ignored with one "
    "warning per field name.",
    {
        "id": _ID,
        "category": {**_TEXT, "maxLength": 100, "description": "The report's column (e.g. Visual Logic)."},
        "question": {**_TEXT, "maxLength": MAX_QUESTION_CHARS, "description": "Shown to the annotator and the model."},
        "options": {"type": "array", "maxItems": MAX_TASK_OPTIONS, "items": _TEXT, "default": [],
                    "description": "Choice tasks: the options, lettered A, B, C... in this order."},
        "answer_type": {"enum": list(Task.AnswerType.values),
                        "description": "How a model's answer is checked: choice (a letter), number, text, or "
                                       "manual (the annotator judges it)."},
        "answer": {"type": ["string", "number"], "minLength": 1, "pattern": r"\S",
                   "description": "The ground truth: an option letter for choice, a number (42, -3.5, 1,000) for "
                                  "number, any text otherwise."},
        "images": {"type": "array", "maxItems": MAX_IMAGES_PER_TASK, "default": [],
                   "items": {"type": "string", "minLength": 1},
                   "description": "Paths inside the zip (images/x.png), data:image/...;base64 URLs, or http(s) URLs "
                                  "when remote images are allowed."},
        "source": {"type": "string", "maxLength": 200, "default": "", "description": "Where the task comes from."},
        "recorded_answers": _recorded_answers("entry k is the answer in round k; at most max_rounds + 1 entries"),
        "meta": {"type": "object", "default": {}, "description": "Kept with the task; the keys below are read.",
                 "properties": {
                     "gold_check_type": {"enum": list(GOLD_CHECK_TYPES),
                                         "description": "A gold manual task: how the annotator's verdict is "
                                                        "checked against the answer."},
                     "gold_feedback_terms": {"type": "array", "items": {"type": "string"},
                                             "description": "A gold task of an automatically checked answer type: "
                                                            "the check passes when the first feedback names one "
                                                            "of these words or phrases."}}},
        "gold": {"type": "boolean", "default": False,
                 "description": "An attention check (gold item): served like any other item of the batch."},
    },
    required=("id", "category", "question", "answer_type", "answer"),
    allOf=[{"if": {"properties": {"answer_type": {"const": "choice"}}, "required": ["answer_type"]},
            "then": {"required": ["options"], "properties": {"options": {"minItems": 1},
                                                              "answer": {"type": "string", "pattern": "^[A-Za-z]$"}}}}],
)

_WRAPPED: Schema = {"oneOf": [{"type": ["string", "number"]},
                              {"type": "object", "required": ["value"],
                               "properties": {"role": {"type": "string"}, "value": {"type": ["string", "number"]}}}],
                    "description": "Text, or FIRE's wrapping {\"role\": \"user\", \"value\": text}."}
_IMAGE: Schema = {"type": "string", "maxLength": 500,
                  "description": "The image's name in the zip or folder (also looked up under images/), or a URL."}
_IMG_PATH: Schema = {"type": "string", "maxLength": 500,
                     "description": "FIRE's second name for the image, used when image is empty or not found."}
_SOURCE: Schema = {"type": "string", "maxLength": 200, "default": ""}
_SPLIT: Schema = {"type": "string", "maxLength": 100, "default": ""}
_RECORD_ID: Schema = {**_ID, "description": "The conversation's id; default: <kind>-<record number>, so re-importing "
                                            "the same file finds the same conversations."}

FIRE = _schema(
    "fire-record", "FIRE conversation",
    "One conversation of a FIRE file (a JSON list as released, or JSON Lines; alone or in a zip with its images). "
    "Fields not named here are kept in the conversation's metadata, with one warning per field name.",
    {
        "id": _RECORD_ID, "image": _IMAGE, "img_path": _IMG_PATH,
        "question": _WRAPPED, "groundtruth": _WRAPPED,
        "conversations": {"type": "array", "minItems": 1, "maxItems": MAX_TURNS, "items": {
            "type": "object", "required": ["role", "value"],
            "properties": {"role": {"enum": ["student", "teacher"]},
                           "type": {"enum": ["response", "feedback"],
                                    "description": "response for a student, feedback for a teacher"},
                           "value": _TEXT}},
            "description": "The turns in order. Every teacher turn and every student turn after the first is rated."},
        "source": _SOURCE, "split": _SPLIT,
        "round": {"type": "integer", "minimum": 0, "maximum": 1000},
        "score": {"type": "array", "items": {"type": "number"},
                  "description": "The teacher's scores, one per teacher turn (a warning when the counts differ)."},
        "recorded_answers": _recorded_answers("a student's responses or a teacher's feedback, turn by turn",
                                              MAX_TURNS),
    },
    required=("question", "groundtruth", "conversations"), extra=True,
)

PREFERENCE = _schema(
    "preference-record", "Preference item",
    "One item to compare: a question, an optional image and 2 to 10 candidate responses (JSON Lines or a JSON "
    "list; alone or in a zip with its images). Fields not named here are kept in the item's metadata, with one "
    "warning per field name.",
    {
        "id": _RECORD_ID, "image": _IMAGE, "img_path": _IMG_PATH, "question": _WRAPPED,
        "responses": {"type": "array", "minItems": MIN_CANDIDATES, "maxItems": MAX_CANDIDATES, "items": {
            "oneOf": [_TEXT, {"type": "object", "required": ["value"], "properties": {"value": _TEXT}}]},
            "description": "The candidates, shown as Response 1, 2, ... in this order."},
        "models": {"type": "array", "items": _TEXT,
                   "description": "Which model wrote each response, one per response (the report's labels)."},
        "groundtruth": {**_WRAPPED, "description": "A reference answer, when there is one."},
        "source": _SOURCE, "split": _SPLIT,
    },
    required=("question", "responses"), extra=True,
)

ROW = _schema(
    "benchmark-row", "Benchmark row",
    "One row of a benchmark file (JSON Lines, CSV or Parquet; alone or in a zip with images), its columns named like "
    "these fields or mapped onto them with the column map (field=column,...). Other scalar columns are kept in the "
    "task's metadata.",
    {
        "id": {**_ID, "description": "Default: row-<row number>."},
        "question": {"type": "string", "description": "A column named question, or mapped onto it."},
        "answer": {"type": ["string", "number"],
                   "description": "For choice rows the option's text is turned into its letter."},
        "options": {"type": ["array", "string"], "items": {"type": "string"},
                    "description": "A list, or text holding a JSON or Python list."},
        "image": {"type": ["array", "string", "object"],
                  "description": "A path, a data: URL, raw bytes (Parquet) or the {bytes, path} image struct; or a "
                                 "list of them. A column named images is taken too."},
        "category": {"type": "string", "description": "Default: the import's category option, else Uncategorized."},
        "answer_type": {"enum": list(Task.AnswerType.values),
                        "description": "Default: choice with options, number for a numeric answer, else text."},
        "source": {"type": "string", "default": ""},
        "gold": {"type": ["boolean", "string"], "description": "true/false, or 1/0, yes/no in a CSV."},
    },
    required=("question", "answer"), extra=True,
)

_SCREENING_QUESTION: Schema = {
    "type": "object", "additionalProperties": False, "required": ["text", "options", "answer"],
    "properties": {"id": {"type": "string", "pattern": r"^[A-Za-z0-9_-]{1,64}$", "description": "Default: q1, q2..."},
                   "text": {**_TEXT, "maxLength": MAX_TEXT},
                   "options": {"type": "array", "minItems": 2, "maxItems": MAX_OPTIONS, "uniqueItems": True,
                               "items": {**_TEXT, "maxLength": MAX_OPTION}},
                   "answer": {"type": "string", "description": "One of the options, written the same way."},
                   "explanation": {"type": "string", "maxLength": MAX_TEXT,
                                   "description": "Shown once the question is done with (right, or wrong twice)."}}}
_SURVEY_QUESTION: Schema = {
    "type": "object", "required": ["type", "text"],
    "properties": {"id": {"type": "string", "pattern": r"^[A-Za-z0-9_-]{1,64}$"},
                   "type": {"enum": list(QUESTION_TYPES)},
                   "text": {**_TEXT, "maxLength": MAX_TEXT},
                   "required": {"type": "boolean", "default": True},
                   "scale": {"type": "integer", "minimum": 2, "maximum": 11, "default": 5},
                   "labels": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
                   "options": {"type": "array", "minItems": 2, "maxItems": MAX_OPTIONS,
                               "items": {**_TEXT, "maxLength": MAX_OPTION}},
                   "min": {"type": "number"}, "max": {"type": "number"},
                   "max_length": {"type": "integer", "minimum": 1, "maximum": 20_000, "default": 2000}},
    "description": "likert: scale, labels; single/multiple: options; number: min, max; text: max_length."}
_SURVEY: Schema = {"type": "array", "maxItems": MAX_QUESTIONS, "items": _SURVEY_QUESTION, "default": []}

STUDY = _schema(
    "study-settings", "Study settings",
    "What a batch asks of invited participants besides its items, and how they are paid: the import's study "
    "setting, the study page's document and GET/PUT /api/batches/<id>/study/. Keys left out keep their value.",
    {
        "consent": {"type": "string", "maxLength": MAX_CONSENT_CHARS, "default": "",
                    "description": "Markdown accepted before the first item; empty: none. A new text is a new "
                                   "version."},
        "consent_version": {"type": ["integer", "null"], "readOnly": True},
        "no_consent_code": {**_CODE, "default": ""},
        "screening": {"type": "array", "maxItems": MAX_QUESTIONS, "items": _SCREENING_QUESTION, "default": []},
        "screening_pass_mark": {"type": ["integer", "null"], "minimum": 0, "maximum": 100,
                                "description": "Questions to get right; default: all of them."},
        "screened_out_code": {**_CODE, "default": ""},
        "attention_rate": {"type": "number", "minimum": 0, "maximum": 1,
                           "description": "The share of each person's items that are attention checks (the batch's "
                                          "gold rate)."},
        "max_attention_failures": {"type": ["integer", "null"], "minimum": 1, "maximum": 100, "default": None},
        "pre_survey": _SURVEY, "post_survey": _SURVEY,
        "time_limit_minutes": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_TIME_LIMIT_MINUTES,
                               "default": None},
        "bonus_rule": {"enum": list(CrowdStudy.BonusRule.values), "default": "none"},
        "bonus_amount": {"type": ["string", "number"], "default": "0.00",
                         "description": "0 to 10000, the platform's currency; per unit, or the fixed amount."},
        "attention_checks": {"type": "object", "readOnly": True,
                             "description": "Whether the gold items give every participant their planned checks."},
    },
)

PERSON = _schema(
    "people-row", "Person (a row of the people CSV)",
    "One line of the people CSV after its header line (which names the columns), or one object of POST /api/users/.",
    {"username": {**_TEXT, "maxLength": FIELD_LIMITS["username"]},
     "email": {"type": "string", "maxLength": FIELD_LIMITS["email"], "default": ""},
     "first_name": {"type": "string", "maxLength": FIELD_LIMITS["first_name"], "default": ""},
     "last_name": {"type": "string", "maxLength": FIELD_LIMITS["last_name"], "default": ""}},
    required=("username",),
)

# --- what a user reads (exports) -------------------------------------------------------------------------------

_WHEN: Schema = {"type": ["string", "null"], "format": "date-time"}
_INT_OR_NULL: Schema = {"type": ["integer", "null"]}
_VERDICT: Schema = {"type": ["boolean", "null"]}
_ROUND: Schema = {"type": "object", "additionalProperties": False, "properties": {
    "index": {"type": "integer", "description": "0: the first answer; k: the answer after the k-th feedback"},
    "feedback_kind": {"type": ["string", "null"]}, "feedback_text": {"type": "string"},
    "feedback_to_model": {"type": "string", "description": "What the model was sent (round 3 adds the answer)"},
    "leak_flagged": {"type": "boolean", "description": "Sent despite the warning that it states an answer"},
    "stated_answer": {"type": ["string", "null"]}, "stated_answer_correct": _VERDICT,
    "answer_text": {"type": "string"}, "extracted_answer": {"type": ["string", "null"]},
    "auto_verdict": _VERDICT, "final_verdict": _VERDICT, "verdict_source": {"type": ["string", "null"]},
    "generation_status": {"type": "string"}, "typing_ms": _INT_OR_NULL, "first_token_ms": _INT_OR_NULL,
    "latency_ms": _INT_OR_NULL, "prompt_tokens": _INT_OR_NULL, "completion_tokens": _INT_OR_NULL,
    "created_at": _WHEN, "started_at": _WHEN, "finished_at": _WHEN}}

SESSION = _schema(
    "session-record", "Session (sessions export, JSON Lines)", "One InterFeedback session: the task, the model, "
    "the annotator's pseudonym and every round.",
    {"session_id": {"type": "integer"}, "batch_id": {"type": "integer"},
     "task": {"type": "object", "additionalProperties": False, "properties": {
         "id": {"type": "string", "description": "The task's id in your import file"},
         "category": {"type": "string"}, "question": {"type": "string"},
         "options": {"type": "array", "items": {"type": "string"}}, "answer_type": {"type": "string"},
         "ground_truth": {"type": "string"}, "images": {"type": "array", "items": {"type": "string"},
                                                         "description": "images/<sha256>"},
         "attention_check": {"type": "boolean", "description": "A gold item served as an attention check"}}},
     "model": {"type": "string"}, "annotator": {"type": ["string", "null"], "description": "A pseudonym"},
     "status": {"type": "string"}, "corrected_round": _INT_OR_NULL, "started_at": _WHEN, "completed_at": _WHEN,
     "follows_reveal": {"type": ["boolean", "null"]},
     "sequence_position": {**_INT_OR_NULL, "description": "1: the first item served to this annotator"},
     "rounds": {"type": "array", "items": _ROUND}},
    required=("session_id", "batch_id", "task", "model", "status", "rounds"),
)

FIRE_EXPORT = _schema(
    "fire-conversation-export", "Session as a FIRE conversation (sessions export, fire format)",
    "The model is the student, the human the teacher; the FIRE importer reads it back (its extra fields are kept "
    "in the metadata).",
    {"id": {"type": "string"}, "image": {"type": ["string", "null"]},
     "question": {"type": "object", "properties": {"value": {"type": "string"}}},
     "groundtruth": {"type": "object", "properties": {"value": {"type": "string"}}},
     "conversations": FIRE["properties"]["conversations"], "source": {"type": "string"},
     "round": {"type": "integer"}, "score": {"type": "array", "items": {"enum": [1, 10]},
                                             "description": "10 for a right answer, 1 for a wrong one"},
     "split": {"const": "human"}, "verdicts": {"type": "array", "items": _VERDICT}, "model": {"type": "string"},
     "annotator": {"type": ["string", "null"]}, "category": {"type": "string"},
     "follows_reveal": {"type": ["boolean", "null"]}, "sequence_position": _INT_OR_NULL},
    required=("id", "question", "groundtruth", "conversations"),
)

_SCORE: Schema = {"type": ["integer", "null"], "minimum": 1, "maximum": 5}
_SCORES: Schema = {"type": "object", "additionalProperties": False,
                   "properties": {"helpfulness": _SCORE, "faithfulness": _SCORE, "ethics": _SCORE}}

PREFERENCE_RESPONSE = _schema(
    "preference-response", "Judged response (preference-responses export, JSON Lines)",
    "One candidate response of an item with every rater's final judgment of it.",
    {"item": {"type": "string"}, "question": {"type": "string"}, "image": {"type": ["string", "null"]},
     "image_name": {"type": ["string", "null"]}, "source": {"type": "string"}, "split": {"type": "string"},
     "candidate": {"type": "integer", "minimum": 1}, "model": {"type": ["string", "null"]},
     "response": {"type": "string"},
     "ratings": {"type": "array", "items": {"type": "object", "additionalProperties": False, "properties": {
         "rater": {"type": "string"}, **_SCORES["properties"], "reason": {"type": "string"},
         "place": _INT_OR_NULL, "ranking": {"type": ["string", "null"]}}}}},
    required=("item", "candidate", "response", "ratings"),
)

_MESSAGES: Schema = {"type": "array", "items": {"type": "object", "properties": {
    "role": {"enum": ["user", "assistant"]}, "content": {"type": "array", "items": {"type": "object"}}}}}

PREFERENCE_PAIR = _schema(
    "preference-pair", "Preferred pair (preference-dpo export, JSON Lines)",
    "One rater's strict preference between two candidates of one item, in the conversational preference shape "
    "Hugging Face datasets load (prompt, chosen, rejected, images).",
    {"prompt": _MESSAGES, "chosen": _MESSAGES, "rejected": _MESSAGES,
     "images": {"type": "array", "items": {"type": "string"}}, "item": {"type": "string"},
     "rater": {"type": "string"}, "ranking": {"type": ["string", "null"]},
     "chosen_candidate": {"type": "integer"}, "rejected_candidate": {"type": "integer"},
     "chosen_model": {"type": ["string", "null"]}, "rejected_model": {"type": ["string", "null"]},
     "chosen_scores": _SCORES, "rejected_scores": _SCORES, "chosen_reason": {"type": "string"},
     "rejected_reason": {"type": "string"}, "votes_chosen": {"type": "integer"},
     "votes_rejected": {"type": "integer"}, "votes_tied": {"type": "integer"}},
    required=("prompt", "chosen", "rejected", "images", "item", "rater"),
)

# name -> schema, in the order of the reference's index
SCHEMAS: dict[str, Schema] = {schema["$id"].removeprefix(BASE).removesuffix(".json"): schema for schema in (
    TASK, FIRE, PREFERENCE, ROW, STUDY, PERSON, SESSION, FIRE_EXPORT, PREFERENCE_RESPONSE, PREFERENCE_PAIR)}
WRITTEN = ("interfeedback-task", "fire-record", "preference-record", "benchmark-row", "study-settings", "people-row")
