"""The nbgrader path's pre-convert hook (nbgrader_path/renamed.py): a notebook handed in under another name is graded
under the released name, chosen by the one rule; nothing else in the student's folder changes."""

from __future__ import annotations

from autograder.nbgrader_path.renamed import graded_name


def _folder(tmp_path, student: str, *names: str):
    folder = tmp_path / "submitted" / student / "sdpa"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_text('{"cells": [], "name": "' + name + '"}')
    return folder


def test_a_renamed_notebook_is_copied_under_the_released_name(tmp_path):
    """sdpa (1).ipynb alone: a byte-for-byte copy named sdpa.ipynb beside it, and in the list nbgrader grades."""
    folder = _folder(tmp_path, "bob", "sdpa (1).ipynb")
    notebooks = [str(folder / "sdpa (1).ipynb")]
    graded_name(assignment="sdpa", student="*", notebooks=notebooks)
    assert (folder / "sdpa.ipynb").read_bytes() == (folder / "sdpa (1).ipynb").read_bytes()
    assert notebooks == [str(folder / "sdpa (1).ipynb"), str(folder / "sdpa.ipynb")]


def test_the_released_notebook_or_a_link_is_left_as_it_is(tmp_path):
    """sdpa.ipynb beside a copy: nothing changes (nbgrader grades sdpa.ipynb, as the rule does); a renamed notebook
    that is a symbolic link is not copied (the gate refuses links)."""
    folder = _folder(tmp_path, "carol", "sdpa.ipynb", "sdpa-Copy1.ipynb")
    before = sorted(path.name for path in folder.iterdir())
    graded_name(
        assignment="sdpa", student="*", notebooks=[str(folder / "sdpa-Copy1.ipynb"), str(folder / "sdpa.ipynb")]
    )
    assert sorted(path.name for path in folder.iterdir()) == before
    linked = _folder(tmp_path, "mallory")
    (linked / "sdpa (1).ipynb").symlink_to(folder / "sdpa.ipynb")
    graded_name(assignment="sdpa", student="*", notebooks=[str(linked / "sdpa (1).ipynb")])
    assert not (linked / "sdpa.ipynb").exists()
