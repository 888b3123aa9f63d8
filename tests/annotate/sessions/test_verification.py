import pytest

from annotate.sessions.verification import (
    detect_stated_answers,
    extract_choice,
    extract_number,
    stated_answer_correct,
    stated_answers,
    verify,
)

OPTIONS = ["Circle", "Square", "Triangle", "Star"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: C", "C"),
        ("answer: c", "C"),
        ("I think it is (C).", "C"),
        ("The answer is C.", "C"),
        ("the answer is option B", "B"),
        ("After checking, the answer is: (D)", "D"),
        ("B", "B"),
        ("Looking closely...\nA", "A"),
        ("Answer: C. Triangle", "C"),
        ("The red shape is a triangle.", "C"),  # the option's own text
        ("Answer: Square", "B"),
        ("Option A looks wrong; Answer: D", "D"),  # the Answer line wins
        ("I cannot tell.", ""),
        ("Answer: E", ""),  # not an option letter
    ],
)
def test_extract_choice_phrasings(text, expected):
    assert extract_choice(text, OPTIONS) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: 42", "42"),
        ("There are 3 rows of 4, so 12 in all.\nAnswer: 12", "12"),
        ("The total is 1,234.5 units", "1234.5"),
        ("Answer: -3.25", "-3.25"),
        ("I count 5 then 7", "7"),
        ("no numbers here", ""),
        ("Answer: 2.5e3", "2.5e3"),
    ],
)
def test_extract_number(text, expected):
    assert extract_number(text) == expected


@pytest.mark.parametrize(
    "answer_type, text, truth, verdict",
    [
        ("choice", "Answer: (b)", "B", True),
        ("choice", "Answer: A", "B", False),
        ("choice", "Answer: Triangle", "Triangle", True),  # ground truth given as option text
        ("number", "Answer: 7391", "7391", True),
        ("number", "Answer: 7391.000001", "7391", True),  # within 1e-6 relative
        ("number", "Answer: 7392", "7391", False),
        ("number", "Answer: 0.1", "0.1000000001", True),
        ("number", "Answer: 1,000", "1000", True),
        ("text", "Answer: The Eiffel Tower!", "eiffel tower", True),
        ("text", "Answer:   an  apple ", "Apple", True),
        ("text", "Answer: a pear", "apple", False),
        ("number", "I do not know", "3", False),
    ],
)
def test_verify(answer_type, text, truth, verdict):
    assert verify(answer_type, text, truth, OPTIONS if answer_type == "choice" else ()).verdict is verdict


def test_manual_answers_need_a_human_verdict():
    result = verify("manual", "It is a cat.\nAnswer: a tabby cat", "tabby")
    assert result.verdict is None
    assert result.extracted == "a tabby cat"


def test_unknown_answer_type_is_an_error():
    with pytest.raises(ValueError, match="unknown answer_type"):
        verify("essay", "x", "y")


# --- the leak check: what feedback states as an answer, never reading the ground truth ---------------------------


@pytest.mark.parametrize(
    "answer_type, feedback, detected",
    [
        # choice: option letters in an answer-like context, option texts
        ("choice", "The answer is C.", ["option C"]),
        ("choice", "The answer is D.", ["option D"]),  # a wrong letter is flagged just the same
        ("choice", "Pick (C) next time", ["option C"]),
        ("choice", "Is it C or D?", ["option C", "option D"]),
        ("choice", "I think it's B, not A", ["option B"]),
        ("choice", "A is correct", ["option A"]),
        ("choice", "Answer: b", ["option B"]),
        ("choice", "c.", ["option C"]),  # a lone letter is the whole feedback
        ("choice", "Option A looks wrong", ["option A"]),  # accepted false positive: it names an option to avoid,
        # which still narrows the answer down
        ("choice", "Look at the red triangle again", ["an option's text: 'Triangle'"]),
        ("choice", "the answer is the triangle", ["an option's text: 'Triangle'"]),  # one entry, not two
        ("choice", "Count the corners of the shape again.", []),
        ("choice", "It's not C", []),  # a negation names no answer
        ("choice", "Consider a different shape.", []),  # the article "a" is no option letter
        # number: every number, whatever its value
        ("number", "Is it 6, 7, 8, 9 or 10?", [f"the number {n}" for n in range(6, 11)]),
        ("number", "It should be 7391, not that.", ["the number 7391"]),
        ("number", "There are seven rows", ["the number seven"]),
        ("number", "Look again at row 2", ["the number 2"]),  # accepted false positive: a row number could be
        # the count asked for; the annotator confirms and the round is marked
        ("number", "Count again, you missed a row.", []),
        ("number", "Look again, storm-0: compare row2 with the key", []),  # numbers glued to words are labels
        ("number", "The one on the left has more", []),  # "one" is too common a word to count
        # every kind: "the answer is …", "it's …", "should be …", "is it …?"
        ("text", "It is the Eiffel Tower", ["'It is the Eiffel Tower'"]),
        ("text", "That should be Paris.", ["'That should be Paris'"]),
        ("text", "Is it Paris?", ["'Is it Paris'"]),
        ("text", "It's actually a tabby cat", ["'It's actually a tabby cat'"]),
        ("text", "This is a famous tower in France", ["'This is a famous tower in France'"]),  # accepted false
        # positive: a short description is a hint that close to an answer
        ("text", "Look at the landmark again", []),
        ("text", "It's wrong, look again", []),
        ("text", "It's in the top row", []),
        ("text", "Your answer is wrong: look again", []),  # the model's answer, not the answer
        ("text", "The answer is not right.", []),
        ("manual", "The answer is a tabby cat.", ["'The answer is a tabby cat'"]),
        ("manual", "Count the legs again.", []),
    ],
)
def test_stated_answers(answer_type, feedback, detected):
    assert stated_answers(feedback, answer_type, OPTIONS if answer_type == "choice" else ()) == detected


@pytest.mark.parametrize(
    "answer_type, feedback, truth, correct",
    [
        ("choice", "The answer is C.", "C", True),
        ("choice", "The answer is D.", "C", False),
        ("choice", "Is it B or C?", "C", True),  # any stated value that verifies
        ("choice", "Look at the triangle", "C", True),  # the option's text stands for its letter
        ("choice", "Look at the triangle", "Triangle", True),  # ground truth given as option text
        ("number", "Is it 7389, 7390, 7391 or 7392?", "7391", True),
        ("number", "Is it 7392, 7393, 7394 or 7395?", "7391", False),
        ("number", "Maybe 7,391?", "7391", True),
        ("number", "There are seven rows", "7", True),
        ("text", "It is the Eiffel Tower", "eiffel tower", True),
        ("text", "It is the Louvre", "eiffel tower", False),
        ("manual", "The answer is a tabby cat.", "a tabby cat", True),
        ("manual", "The answer is a black dog.", "a tabby cat", None),  # a judging guide: unknown, not wrong
    ],
)
def test_stated_answer_correct_is_recorded_server_side(answer_type, feedback, truth, correct):
    options = OPTIONS if answer_type == "choice" else ()
    stated = detect_stated_answers(feedback, answer_type, options)
    assert stated and stated_answer_correct(stated, answer_type, truth, options) is correct


def test_the_leak_check_never_reads_the_ground_truth():
    import inspect

    from annotate.sessions import verification

    assert "ground_truth" not in inspect.signature(verification.detect_stated_answers).parameters
    assert not hasattr(verification, "contains_ground_truth")
