"""`sdpa-grade grade FILE` and `sdpa-grade batch DIR` fork their worker zygote from their own torch: the zygote holds
nothing of the grading."""

from __future__ import annotations

import json

import pytest

from autograder.cli import forks_zygote
from tests.helpers import BIN, REFERENCE, run

MARKER = "leak-marker-7f3a9c"  # in the grader's environment, its arguments and its settings file

# appended to the reference: at load, in the student's sandbox, look for what the grading process holds; a find makes
# dot_product_variance fail with what was found, so the grade shows it
SEARCH = f'''

def _leaks():
    import ctypes, os, sys
    marker, found = "{MARKER}", []
    grader = [name for name in sys.modules if name.split(".")[0] in ("autograder", "reference", "pytest", "_pytest")
              or name.startswith("__editable__")]  # fmt: skip
    if grader:
        found.append(str(len(grader)) + " modules of the grader's (" + grader[0] + ", ...)")
    if any(marker in key or marker in value for key, value in os.environ.items()):
        found.append("os.environ")
    for extra in ("HOME", "TMPDIR", "PATH", "LANG", "OMP_NUM_THREADS"):  # the sandbox's own (HOME, TMPDIR: its scratch)
        os.environ.pop(extra, None)
    if os.environ:
        found.append("environment " + ",".join(sorted(os.environ)))
    for name in ("environ", "cmdline"):
        if marker.encode() in open("/proc/self/" + name, "rb").read():
            found.append("/proc/self/" + name)
    if marker in repr(sys.argv) + repr(sys.orig_argv):
        found.append("sys.argv")
    frame = sys._getframe().f_back
    while frame is not None:
        if marker in repr(frame.f_locals) or "--json" in repr(frame.f_locals):
            found.append("frame " + frame.f_code.co_name)
        frame = frame.f_back
    stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    start, end = int(stat[45]), int(stat[48])
    if marker.encode() in ctypes.string_at(start, end - start):
        found.append("the kernel's argument and environment area")
    # every anonymous writable mapping (the heap, the stack): where the settings file would be, had it been read. The
    # line is looked for in two halves, so that the search itself never holds it whole
    first, rest = ("# " + marker).encode(), b" settings: a comment"
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps.read().splitlines():
            fields = line.split()
            if fields[1].startswith("rw") and (len(fields) < 6 or fields[5] in ("[heap]", "[stack]")):
                low, high = (int(part, 16) for part in fields[0].split("-"))
                for chunk in range(low, high, 1 << 24):
                    try:
                        mem.seek(chunk)
                        data = mem.read(min(high - chunk, (1 << 24) + 64))
                    except (OSError, OverflowError, ValueError):
                        continue
                    at = data.find(first)
                    while at >= 0:
                        if data[at + len(first) : at + len(first) + len(rest)] == rest:
                            found.append("memory " + fields[0])
                        at = data.find(first, at + 1)
    return found


_FOUND = _leaks()
_variance = dot_product_variance


def dot_product_variance(d_k, num_samples=10000, generator=None):
    if _FOUND:
        raise RuntimeError("found: " + "; ".join(_FOUND))
    return _variance(d_k, num_samples, generator)
'''


@pytest.mark.slow  # one cold sdpa-grade: 15 s on idle cores
@pytest.mark.timeout(120)
@pytest.mark.parametrize("verb", ["grade", "batch"])
def test_forked_zygote_holds_nothing_of_the_grading(tmp_path, verb):
    """The zygote forked at the start of `sdpa-grade grade FILE` or `sdpa-grade batch DIR` leaves the student no
    module of the grader, no environment variable, argument or frame of the grading process, and no byte of its
    settings file (read after the fork)."""
    submission = tmp_path / "class" / "alice" / "attention.py"
    submission.parent.mkdir(parents=True)
    submission.write_text(REFERENCE.read_text() + SEARCH)
    config = tmp_path / "settings.toml"
    config.write_text(f"# {MARKER} settings: a comment, read only by the grading process\n")
    out = tmp_path / MARKER
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "SDPA_LEAK": MARKER}
    if verb == "grade":
        command = ["grade", str(submission), "--json", str(out / "alice.json")]
    else:
        command = ["batch", str(submission.parent.parent), "--json-dir", str(out)]
    result = run([str(BIN / "sdpa-grade"), *command, "--config", str(config)], env=env)
    assert result.returncode == 0, result.stderr
    results = json.loads((out / "alice.json").read_text())
    variance = [test for test in results["tests"] if "dot_product_variance" in test["tags"]]
    # (the static scan flags sys.modules and _getframe, for the instructor: the integrity checks' points go)
    assert variance and all(test["score"] == test["max_score"] for test in variance), [t["output"] for t in variance]


def test_only_a_fresh_grading_forks_its_zygote(tmp_path, monkeypatch):
    """A diff, help, a seed on the command line, or a process with a grading loaded start the zygote afresh (the
    older forms: tests/grading/test_older_forms.py); a submission or class folder that is not there starts none (it is
    told at once)."""
    fresh = {"autograder.cli": None}
    monkeypatch.chdir(tmp_path)
    assert not forks_zygote(["grade", "attention.py", "--json", "out.json"], fresh)
    assert not forks_zygote(["batch", "class"], fresh)
    (tmp_path / "attention.py").touch()
    (tmp_path / "a.py").touch()
    (tmp_path / "class").mkdir()
    assert forks_zygote(["grade", "attention.py", "--json", "out.json", "--config", "c.toml"], fresh)
    assert forks_zygote(["batch", "class", "--jobs", "2"], fresh)
    for argv in (["-h"], ["--help"], ["batch", "-h"], ["summary", "class"],
                 ["diff", "a", "b"], ["grade", "a.py", "--seed", "3"], ["grade", "-h"], ["grade", "a.py", "--help"],
                 ["grade", "a.py", "--jobs", "2"], ["grade"]):  # fmt: skip
        assert not forks_zygote(argv, fresh), argv
    for loaded in ("pytest", "reference", "autograder.grade"):
        assert not forks_zygote(["grade", "attention.py"], {**fresh, loaded: None}), loaded
