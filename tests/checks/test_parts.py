"""Optional parts ([parts]): a function handed out and graded only where the settings turn it on, and nothing of it
where they do not (autograder/assignment/parts.py)."""

from __future__ import annotations

import ast
import json

import nbformat
import pytest

from autograder.assignment.composition import functions
from autograder.assignment.parts import handout_without, teaches, without
from autograder.config import ConfigError, Parts, load_settings
from autograder.nbgrader_path.autograde import GraderFailed, _is_test, _parts_problem
from autograder.release.notebook import build_notebook
from tests.helpers import REFERENCE, ROOT

PART = "blockwise_attention"


@pytest.fixture(scope="module")
def on(tmp_path_factory):
    path = tmp_path_factory.mktemp("parts") / "on.toml"
    path.write_text(f"[parts]\n{PART} = true\n")
    return load_settings(path, environ={})


def test_the_part_is_off_by_default_and_a_bool():
    """Every part is off by default: blockwise_attention, and the decoding part's three functions."""
    assert load_settings(environ={}).parts.off() == {PART, *Parts.functions("decoding")}


def test_a_part_setting_must_be_true_or_false(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(f'[parts]\n{PART} = "yes"\n')
    with pytest.raises(ConfigError, match=f"Invalid parts.{PART} 'yes'.*expected true or false"):
        load_settings(path, environ={})
    path.write_text("[parts]\nflash_attention = true\n")
    with pytest.raises(ConfigError, match="unknown setting parts.flash_attention"):
        load_settings(path, environ={})


def test_without_leaves_the_reference_as_if_it_never_held_the_function():
    """The other functions are untouched, byte for byte, and the file is separated as ruff formats it."""
    source = REFERENCE.read_text()
    kept = without(source, {PART})
    assert PART not in functions(kept) and functions(kept) == [name for name in functions(source) if name != PART]
    assert "\n\n\n\n" not in kept and kept.endswith("\n")
    ast.parse(kept)
    # the same removal of the last definition leaves no trailing blank lines
    last = functions(source)[-1]
    assert without(source, {last}).endswith("    ### END SOLUTION\n")
    assert without(source, set()) == source


def test_handout_without_drops_only_the_parts_sections():
    handout = (ROOT / "docs" / "handout.md").read_text()
    kept = handout_without(handout, {PART})
    sections = handout.split("\n## ")[1:]
    assert [teaches(block) for block in sections].count(PART) == 1
    assert kept.count("\n## ") == len(sections) - 1 and "online softmax" not in kept
    assert kept.endswith("\n") and handout_without(handout, set()) == handout


def _tests_of(notebook_json: str) -> list:
    notebook = nbformat.reads(notebook_json, as_version=4)
    return [cell for cell in notebook.cells if _is_test(cell)]


def test_the_notebook_holds_the_part_only_when_it_is_on(on):
    off_cells = json.dumps(json.loads(build_notebook(ROOT)))
    on_cells = build_notebook(ROOT, on)
    assert PART not in off_cells and "check_blockwise_memory" in on_cells and f"def {PART}(" in on_cells


def test_nbgrader_refuses_a_notebook_built_with_other_parts_than_it_grades(on):
    """A notebook with the part's cells graded with it off (and the reverse): the totals would disagree."""
    default = load_settings(environ={})
    built_on, built_off = _tests_of(build_notebook(ROOT, on)), _tests_of(build_notebook(ROOT))
    _parts_problem(built_on, on)
    _parts_problem(built_off, default)
    with pytest.raises(GraderFailed, match=f"built with the optional part {PART}.*turn it off"):
        _parts_problem(built_on, default)
    with pytest.raises(GraderFailed, match=f"built without the optional part {PART}.*turn it on"):
        _parts_problem(built_off, on)
