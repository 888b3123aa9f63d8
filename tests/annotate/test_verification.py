import pytest

from annotate.verification import contains_ground_truth, extract_choice, extract_number, verify

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


@pytest.mark.parametrize(
    "answer_type, feedback, truth, leaks",
    [
        ("choice", "The answer is C.", "C", True),
        ("choice", "Pick (C) next time", "C", True),
        ("choice", "Look at the red triangle again", "C", True),  # the option text of C
        ("choice", "Count the corners of the shape again.", "C", False),
        ("number", "It should be 7391, not that.", "7391", True),
        ("number", "Count again, you missed a row.", "7391", False),
        ("text", "It is the Eiffel Tower", "eiffel tower", True),
        ("text", "Look at the landmark again", "eiffel tower", False),
    ],
)
def test_ground_truth_leak_check(answer_type, feedback, truth, leaks):
    assert contains_ground_truth(feedback, answer_type, truth, OPTIONS) is leaks
