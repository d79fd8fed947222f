"""docs/slurm's array job and merge, submitted with sbatch as docs/scale.md says, on a real one-node Slurm cluster.

The cluster (tests/slurm_cluster.py) is this machine: its CPUs are shared by the shards that run at
once, as on a node that runs several tasks of an array. Each run is compared, student by student and
check by check, with one unsharded batch of the same class. Without slurm-wlm and munge
(.ci/install-slurm) or root, the tests skip with the reason; in CI they must run, so there they fail.
"""

from __future__ import annotations

import os
import shutil

import pytest

from autograder.course.shard import select
from tests.helpers import BIN, ROOT, csv_rows, outcomes, run, total, write_class
from tests.slurm_cluster import Cluster, ClusterError, missing_programs

SCRIPTS = ROOT / "docs" / "slurm"
SHARDS = 4  # on 2 cores, each task with one: two shards grade side by side, two wait
# what docs/scale.md tells an instructor whose nodes are smaller than the scripts' #SBATCH lines
SMALL_NODE = ["--cpus-per-task=1", "--mem=1G"]
CLASS = {  # student -> submission: a class of 9, honest, wrong, hostile and ungradable; every shard grades someone
    "ada": "correct",  # shard 2
    "bo": "correct_einsum",  # shard 3
    "chen": "mistake_divide_by_dk",  # shard 0
    "eun": "mistake_mask_inverted",  # shard 0
    "femi": "fake_results",  # shard 0
    "gus": "syntax_error",  # shard 1
    "hana": "correct_stable_softmax",  # shard 3
    "jun": "mistake_query_axis",  # shard 0
    "lea": "mistake_nan_rows",  # shard 2
}
KILLED = 0  # the shard whose task is killed: it grades 4 students (chen, eun, femi, jun)


def unavailable(reason: str):
    """Skip where Slurm cannot run; in CI (CI set), fail: there the cluster test must run."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"the Slurm test must run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm():
    """A one-node Slurm cluster, started once for the session and always stopped."""
    missing = missing_programs()
    if missing:
        unavailable(f"no {', '.join(missing)} here (Debian's slurm-wlm and munge; .ci/install-slurm installs them)")
    if os.geteuid() != 0:
        unavailable("slurmd runs as root, and these tests start their own")
    cluster = Cluster()
    try:  # stopped however the session ends: a failed start, a failed test, Ctrl-C
        try:
            cluster.start(timeout=60)
        except ClusterError as error:
            unavailable(f"the Slurm cluster did not start: {error}")
        yield cluster
    finally:
        cluster.stop()


def make_course(folder):
    """A course folder as docs/scale.md describes it: venv/, submitted/, the two scripts copied in, and logs/."""
    folder.mkdir()
    write_class(folder / "submitted", CLASS)
    (folder / "venv").symlink_to(BIN.parent)
    for script in ("grade.sbatch", "merge.sbatch"):
        shutil.copyfile(SCRIPTS / script, folder / script)
    (folder / "logs").mkdir()
    return folder


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The class graded by one unsharded batch, what the cluster must equal: (results folder, CSV rows, summary)."""
    folder = tmp_path_factory.mktemp("whole")
    write_class(folder / "submitted", CLASS)
    graded = run(
        [
            str(BIN / "sdpa-grade"),
            "batch",
            str(folder / "submitted"),
            "--json-dir",
            str(folder / "grades"),
            "--csv",
            str(folder / "grades.csv"),
            "--jobs",
            "2",
        ],
        timeout=120,
    )
    assert graded.returncode == 0, graded.stderr[-3000:]
    return folder / "grades", csv_rows(folder / "grades.csv"), without_times(graded.stdout)


def without_times(summary: str) -> str:
    """A class summary less its grading times, which differ from run to run; everything else may not."""
    return "\n".join(line for line in summary.splitlines() if not line.startswith("Grading time per submission"))


def submit_array(slurm, course, tasks: str) -> str:
    """grade.sbatch as documented: `sbatch --parsable --array=... [smaller node] grade.sbatch N`,
    from the course folder."""
    return slurm.command(
        "sbatch", "--parsable", f"--array={tasks}", *SMALL_NODE, "grade.sbatch", str(SHARDS), cwd=course
    ).stdout.strip()


def submit_merge(slurm, course, after: str) -> str:
    return slurm.command(
        "sbatch", "--parsable", f"--dependency=afterok:{after}", "merge.sbatch", cwd=course
    ).stdout.strip()


def log(course, job: str) -> str:
    """What a job wrote (grade-<array>_<task>.out, merge-<job>.out); an array's tasks all together."""
    paths = [*(course / "logs").glob(f"*-{job}.out"), *(course / "logs").glob(f"*-{job}_*.out")]
    return "\n".join(path.read_text(errors="replace") for path in sorted(paths))


def assert_equals_one_batch(course, whole, merge: str) -> None:
    """Every student's checks, the CSV and the merge's class summary are the batch's."""
    results, class_rows, summary = whole
    assert outcomes(course / "grades") == outcomes(results)
    assert csv_rows(course / "grades.csv") == class_rows
    assert summary in without_times(log(course, merge))
    assert (
        outcomes(results)["ada"][0] == total() and outcomes(results)["chen"][0] < total()
    )  # a real grading, not all zeros


@pytest.mark.slow
def test_the_documented_array_and_merge_grade_the_class_as_one_batch(slurm, tmp_path, whole):
    """4 array tasks sharing the node, then the afterok merge: every student's checks and the CSV equal one batch's."""
    course = make_course(tmp_path / "course")
    array = submit_array(slurm, course, f"0-{SHARDS - 1}")
    merge = submit_merge(slurm, course, array)
    jobs = slurm.wait(array, merge, timeout=120)
    assert {name: fields["JobState"] for name, fields in jobs.items()} == {
        **{f"{array}_{k}": "COMPLETED" for k in range(SHARDS)},
        merge: "COMPLETED",
    }, log(course, array)

    counts = [int(log(course, f"{array}_{k}").split(f"shard {k}/{SHARDS}: ")[1].split()[0]) for k in range(SHARDS)]
    assert counts == [len(select(CLASS, (k, SHARDS))) for k in range(SHARDS)] and all(counts), counts
    spans = sorted((jobs[f"{array}_{k}"]["StartTime"], jobs[f"{array}_{k}"]["EndTime"]) for k in range(SHARDS))
    assert spans[1][0] < spans[0][1], spans  # two shards graded side by side on the node (ISO times sort as text)
    assert_equals_one_batch(course, whole, merge)


@pytest.mark.slow
def test_a_killed_shard_is_graded_again_and_the_merge_then_completes(slurm, tmp_path, whole):
    """A task killed mid-grading holds the merge back; a merge run meanwhile names the missing students and writes
    no CSV; the documented rerun of that shard, then the merge, give one batch's grades."""
    course = make_course(tmp_path / "course")
    array = submit_array(slurm, course, f"0-{SHARDS - 1}")
    merge = submit_merge(slurm, course, array)
    killed = f"{array}_{KILLED}"
    slurm.wait_for(lambda: f"shard {KILLED}/{SHARDS}: " in log(course, killed), timeout=120, what=f"{killed} started")
    slurm.command("scancel", "--signal=KILL", "--full", killed)
    jobs = slurm.wait(array, merge, timeout=120)
    assert jobs[killed]["JobState"] in ("FAILED", "CANCELLED"), jobs[killed]
    assert all(jobs[f"{array}_{k}"]["JobState"] == "COMPLETED" for k in range(SHARDS) if k != KILLED), jobs
    assert jobs[merge]["JobState"] == "PENDING" and jobs[merge]["Reason"] == "DependencyNeverSatisfied", jobs[merge]
    assert not (course / "grades.csv").exists()

    graded = {path.stem for path in (course / "grades").glob("*.json")}
    missing = [name for name in CLASS if name not in graded]
    assert missing, "the killed task had graded its whole shard"
    early = slurm.command("sbatch", "--parsable", "--wait", "merge.sbatch", cwd=course, check=False, timeout=120)
    assert early.returncode == 1, log(course, early.stdout.strip())
    said = log(course, early.stdout.strip())
    assert f"{len(missing)} of {len(CLASS)} students have no result yet: {', '.join(missing)}" in said
    assert "Class summary" not in said and not (course / "grades.csv").exists()

    slurm.command("scancel", merge)  # the documented recovery: the stuck merge goes, the shard again, then the merge
    rerun = submit_array(slurm, course, str(KILLED))
    merged = submit_merge(slurm, course, rerun)
    jobs = slurm.wait(rerun, merged, timeout=120)
    assert {fields["JobState"] for fields in jobs.values()} == {"COMPLETED"}, jobs
    shard = len(select(CLASS, (KILLED, SHARDS)))
    assert f"{shard} students, {shard - len(missing)} already graded, {len(missing)} to grade" in log(course, rerun)
    assert_equals_one_batch(course, whole, merged)
