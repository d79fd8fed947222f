"""docs/scale.md's Slurm scripts and Kubernetes manifests are files of the repository, shown byte for byte, and the
manifests are valid Kubernetes objects whose sdpa-grade commands the grader accepts (no cluster runs them here)."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest

from autograder.cli import parser
from tests.helpers import ROOT

DOCS = ROOT / "docs"
FILES = sorted([*DOCS.glob("slurm/*"), *DOCS.glob("kubernetes/*")])
MANIFESTS = sorted(DOCS.glob("kubernetes/*.yaml"))
KUBERNETES = "1.30.0"  # backoffLimitPerIndex is there (beta since 1.29)


def listings() -> dict[str, str]:
    """docs/scale.md's listings that follow a link to a file: file (relative to docs/) -> the listing's text."""
    text = (DOCS / "scale.md").read_text()
    found = re.findall(r"\[`docs/([^`]+)`\]\(([^)]+)\):?\n\n```[a-z]*\n(.*?)```", text, re.DOTALL)
    assert all(name == link for name, link, _ in found), [(name, link) for name, link, _ in found]
    return {name: listing for name, _, listing in found}


def test_every_script_and_manifest_is_shown_in_scale_md_byte_for_byte():
    """Each file of docs/slurm and docs/kubernetes is listed in docs/scale.md under its name, exactly as it is."""
    shown = listings()
    assert sorted(shown) == sorted(str(path.relative_to(DOCS)) for path in FILES)
    for path in FILES:
        assert shown[str(path.relative_to(DOCS))] == path.read_text(), f"docs/scale.md's listing of {path.name} differs"


@pytest.mark.parametrize("script", sorted(DOCS.glob("slurm/*.sbatch")), ids=lambda path: path.name)
def test_slurm_scripts_are_bash_that_parses(script):
    """The sbatch scripts are bash without a syntax error, and executable as submitted."""
    assert subprocess.run(["bash", "-n", str(script)], check=False, capture_output=True, text=True).returncode == 0
    assert script.read_text().startswith("#!/bin/bash\n")


def manifest(path) -> dict:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with kubernetes-validate (the dev extra)")
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_kubernetes_manifests_are_valid_against_the_api_schemas(path):
    """Each manifest is a valid object of the Kubernetes API (offline schemas, strict: no unknown field)."""
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (pip install -e '.[dev]' installs it)"
    )
    kubernetes_validate.validate(manifest(path), KUBERNETES, strict=True)


def test_the_schema_check_finds_a_wrong_field():
    """The validation can fail: a misspelt field and a count of the wrong type are refused."""
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate is not installed (pip install -e '.[dev]' installs it)"
    )
    job = manifest(DOCS / "kubernetes" / "grade-job.yaml")
    job["spec"]["completion"] = job["spec"].pop("completions")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)
    job = manifest(DOCS / "kubernetes" / "grade-job.yaml")
    job["spec"]["parallelism"] = "8"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)


def command(container: dict) -> list[str]:
    """The sdpa-grade command a container runs, as words (through ``sh -c`` where it uses one)."""
    words = [*container["command"], *container.get("args", [])]
    if words[:2] == ["/bin/sh", "-c"]:
        words = shlex.split(words[2].replace("$JOB_COMPLETION_INDEX", "0"))
    assert words[0] == "/autograder/venv/bin/sdpa-grade", words  # where the bundle's setup.sh installs it
    return words[1:]


def test_the_indexed_job_grades_shard_k_of_its_completions():
    """The grading Job is indexed, and --shard's N is its number of completions: every shard is graded once."""
    job = manifest(DOCS / "kubernetes" / "grade-job.yaml")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    args = parser().parse_args(command(spec["template"]["spec"]["containers"][0]))
    assert args.shard == (0, spec["completions"]) and args.batch and args.json_dir


def test_the_merge_job_merges_what_the_grading_job_wrote():
    """The merge Job runs `sdpa-grade summary` on the grading Job's folders, once (a missing student fails it)."""
    grade = manifest(DOCS / "kubernetes" / "grade-job.yaml")["spec"]["template"]["spec"]["containers"][0]
    merge = manifest(DOCS / "kubernetes" / "merge-job.yaml")
    graded = parser().parse_args(command(grade))
    merged = parser().parse_args(command(merge["spec"]["template"]["spec"]["containers"][0]))
    assert merged.verb == "summary" and merged.csv and not merged.partial and merge["spec"]["backoffLimit"] == 0
    assert (merged.batch, merged.json_dir) == (graded.batch, graded.json_dir)
