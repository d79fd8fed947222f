"""autograder/checks/expect.py: what a failed comparison says and carries."""

from __future__ import annotations

import json

import pytest
import torch

from autograder.checks.expect import CheckFailure, expect_tensor, precision_loss
from autograder.checks.mistakes import SENTENCES, name_mistake

TOLERANCE = (1e-5, 1e-5)


def failure(actual, expected, **options) -> CheckFailure:
    with pytest.raises(CheckFailure) as caught:
        expect_tensor(actual, expected, what="the output", tolerance=TOLERANCE, **options)
    return caught.value


def test_where_the_output_first_differs():
    """The message and the evidence give the first differing index, expected, got, error and allowed."""
    expected = torch.zeros(2, 3, dtype=torch.float64)
    actual = expected.clone()
    actual[1, 2], actual[0, 1] = 0.5, 0.25
    caught = failure(actual, expected)
    assert "first at index (0, 1) of shape (2, 3): expected 0, got 0.25 (error 0.25, allowed 1e-05)" in str(caught)
    assert caught.evidence == {
        "shape": [2, 3],
        "index": [0, 1],
        "expected": 0.0,
        "got": 0.25,
        "error": 0.25,
        "allowed": 1e-5,
    }


def test_nan_evidence_stays_strict_json():
    """A NaN found where a number was expected travels as text, so results.json stays valid JSON."""
    caught = failure(
        torch.tensor([1.0, float("nan")], dtype=torch.float64), torch.tensor([1.0, 2.0], dtype=torch.float64)
    )
    assert json.loads(json.dumps(caught.evidence, allow_nan=False))["got"] == "nan"


def test_precision_loss_is_named_at_float16_rounding():
    """Correct values rounded to float16 in a float64 check: named as precision loss."""
    expected = torch.rand(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert failure(expected.half().double(), expected).cause.startswith("precision loss")


def test_wrong_math_is_not_called_precision_loss():
    """An error far above any rounding (a wrong scale) claims no cause."""
    expected = torch.rand(4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert failure(expected * 0.9, expected).cause == ""


def test_a_mistake_is_named_only_when_one_variant_matches():
    """Two variants that coincide on the input are no evidence for either."""
    found = torch.ones(1, 3, dtype=torch.bool)
    assert name_mistake(found, {"causal_flipped": found.clone(), "causal_bottom_right": found.clone()}, 0, 0) is None
    assert name_mistake(found, {"causal_flipped": found.clone(), "causal_strict": ~found}, 0, 0) == "causal_flipped"


def test_the_cause_is_a_field_not_wording():
    """A named mistake travels as its key and its sentence; the message holds neither, nor "Likely cause"."""
    expected = torch.tensor([[True, False], [True, True]])
    caught = failure(~expected, expected, variants={"mask_inverted": ~expected})
    assert (caught.mistake, caught.cause) == ("mask_inverted", SENTENCES["mask_inverted"])
    assert str(caught) == caught.message == f"{caught.what}." and "cause" not in str(caught).lower()


def test_float32_rounding_of_large_scores_is_not_called_float16():
    """Weights off by 4e-4 from scores of size 1e4 are float32 rounding of the scores: never named float16."""
    expected = torch.tensor([[0.8, 0.2]], dtype=torch.float64)
    assert precision_loss(4e-4, expected, torch.float64, scale=1e4) is None
    assert "float16" in precision_loss(4e-4, expected, torch.float64, scale=1.0)  # at size 1, 4e-4 is float16's


def test_large_errors_are_not_precision_loss_at_any_scale():
    """An error of 10% of the result is not rounding, however large the inputs."""
    expected = torch.tensor([[0.8, 0.2]], dtype=torch.float64)
    assert precision_loss(0.1, expected, torch.float64, scale=1e4) is None
