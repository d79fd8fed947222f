"""The timing measurement, decided in the trusted process (docs/performance.md).

The student's attention and the reference's each run in a worker process of the same kind
(the reference in a second sandbox that loads the reference's source), interleaved round by
round. Every repetition gets fresh random inputs chosen here (cases.Draw: no seed the worker can
recover); the grader reads its own wall
clock and the kernel's count of the submission's CPU time (its cgroup's: every process it
started) around each round, and checks a sample
of the student's timed outputs against the reference: a cached or wrong answer fails.

What decides (``judge``): the ratio to the reference on each shape; over the budget, how the cost grows from the
shape to one 8 times larger on the looped axis (``GROWTH_TO``), against the reference's growth.
A call's constant work (a mask built on each call, a cast, an allocation) costs the same at both sizes and cancels
out; a Python loop over batches, heads or queries adds its cost per item and does not.
"""

from __future__ import annotations

import contextlib
import secrets
import statistics
from dataclasses import dataclass, field

import torch

from autograder.checks.cases import Draw
from reference import attention as ref

TARGET = "scaled_dot_product_attention"
# Each shape makes one kind of Python loop cost many times the per-op overhead while the honest
# computation stays small: a loop over batches (B), over heads (H), over query positions (T).
# Chosen from bench/timing_reliability.py (figures in docs/performance.md).
# Shapes are (B, H, T_q, T_k, d): few keys keep the honest work small while a loop over queries runs T_q times.
CPU_SHAPES = ((128, 1, 8, 8, 8), (1, 128, 8, 8, 8), (1, 1, 512, 8, 8))
# Each CPU shape's twin 8 times larger on the looped axis: the growth from the shape to it is what a loop adds
# (docs/performance.md). The reference grows by 0.6 to 1.7 ms a call there: far above the noise of a constant that a
# student's call adds (nanoGPT's causal buffer at its block size, 1024 x 1024, built per call: 5 ms, +-0.2 ms).
GROWTH_TO = {
    (128, 1, 8, 8, 8): (1024, 1, 8, 8, 8),
    (1, 128, 8, 8, 8): (1, 1024, 8, 8, 8),
    (1, 1, 512, 8, 8): (1, 1, 4096, 8, 8),
}
GROWTH_REPEAT = 3  # calls per round of the growth's measure: each costs a millisecond or more, a loop's far more
# The reference's growth counts as at least this share of its cost on the large shape: a round in which the
# machine's noise ate its growth does not divide by nearly nothing.
GROWTH_FLOOR = 0.25
# A growth over this many times the budget is no noise: the check fails without measuring it again.
CLEAR_MISS = 2.0
CPU_REPEAT = 10  # calls per round, each with inputs of its own
# calls in a form's warm-up round (never measured, its answers checked like every round's): enough for the first
# call's costs (allocations for the shape, the form's own code path) to be paid before a measured round, and no more:
# with the full 10 each warm-up round cost about as much as a measured one, a fifth of the check's time and CPU
WARM_UP_REPEAT = 2
# On CUDA inputs and results cross to the device inside the timed round, on both sides alike.
GPU_SHAPES = ((4, 8, 512, 512, 64),)
GPU_REPEAT = 5
# The call forms the checks and students use, each timed on every shape: a Python loop in any branch of the
# student's function (only without a mask, say, the commonest call) is timed too. Each form's rounds are
# interleaved with the others'; the slowest form decides.
FORMS = ("without a mask", "with a bool mask", "with is_causal=True")
# The wall clock counts what the CPU count cannot see (work in other processes) but also every
# other process on the machine: it may reach this many times the budget before it decides.
WALL_SLACK = 2.0
_PICKER = secrets.SystemRandom()  # which timed answers are verified


@dataclass
class Measurement:
    """Median student/reference ratios of one shape; ``wrong`` says why a timed answer was refused."""

    shape: tuple
    cpu_ratio: float = 0.0  # the slowest form's median
    wall_ratio: float = 0.0  # the slowest form's median, by the wall clock
    wrong: str = ""
    form: str = ""  # the form (FORMS) whose CPU ratio is cpu_ratio
    large: tuple = ()  # set: the ratios are of the growth from ``shape`` to this shape (``measure_growth``)
    per_form: dict = field(default_factory=dict)  # form -> (its CPU median, its wall median)


def within(found: Measurement, budget: float, device: str = "cpu") -> bool:
    """The decision. On the CPU: CPU time within the budget, and the wall clock within WALL_SLACK times it.
    On CUDA the host's CPU time says nothing of the device's work: the wall clock within the budget."""
    if device != "cpu":
        return found.wall_ratio <= budget
    return found.cpu_ratio <= budget and found.wall_ratio <= WALL_SLACK * budget


@dataclass(frozen=True)
class Bounds:
    """The figures a measurement is compared with (``within``, ``over``, ``judge``'s CLEAR_MISS): a form's median
    CPU ratio against each of ``cpu``, its median wall ratio against each of ``wall``. Once the rounds taken put
    every form's median on its side of every bound whatever the rounds still to come, those rounds could change no
    decision and none is taken (``settled``): an honest attention measured within the budget in its first two rounds
    of three, or a loop over it in both, is not measured a third time."""

    cpu: tuple[float, ...]
    wall: tuple[float, ...]

    @classmethod
    def of(cls, budget: float, device: str = "cpu", *more: float) -> Bounds:
        """``within``'s bounds for ``budget`` on ``device``, and ``more`` for the CPU ratio (on the CPU)."""
        if device != "cpu":
            return cls((), (budget,))
        return cls((budget, *more), (WALL_SLACK * budget,))

    def settled(self, cpu: dict[str, list[float]], wall: dict[str, list[float]], rounds: int) -> bool:
        """Whether each form's median of ``rounds`` ratios is on a known side of every bound, given the rounds
        measured so far (``cpu``, ``wall``: per form): more than half of all its rounds on one side of it."""
        need = rounds // 2 + 1  # then the median of all rounds is on that side, whatever the others are
        return all(
            sum(value <= bound for value in values) >= need or sum(value > bound for value in values) >= need
            for ratios, bounds in ((cpu, self.cpu), (wall, self.wall))
            for values in ratios.values()
            for bound in bounds
        )


def _per_form(rounds: int) -> int:
    """The measured rounds of each form, ``rounds`` shared among the forms."""
    return -(-rounds // len(FORMS))


def timing_inputs(
    draw: Draw, shape: tuple, repeat: int, dtype=torch.float32, form: str = FORMS[1]
) -> list[list[torch.Tensor]]:
    """``repeat`` sets of fresh (Q, K, V) of (B, H, T_q, T_k, d), and with a bool mask a causal one with random
    padding of the keys."""
    B, H, T_q, T_k, d = shape
    lead = (B, H) if H else (B,)  # H = 0: (B, T, d) inputs, without a head axis (``folded``)
    Q = torch.randn(repeat, *lead, T_q, d, generator=draw.generator, dtype=dtype)
    K, V = torch.randn(2, repeat, *lead, T_k, d, generator=draw.generator, dtype=dtype)
    if form != FORMS[1]:
        return [list(inputs) for inputs in zip(Q, K, V)]
    lengths = torch.randint(max(T_k // 2, 1), T_k + 1, (repeat, 1, 1), generator=draw.generator)
    masks = torch.ones(T_q, T_k, dtype=torch.bool).tril() & (torch.arange(T_k) < lengths)  # (repeat, T_q, T_k)
    return [list(inputs) for inputs in zip(Q, K, V, masks)]


def keywords(form: str) -> dict:
    """The keyword arguments of a timed call in ``form``."""
    return {"is_causal": True} if form == FORMS[2] else {}


def folded(shape: tuple) -> tuple:
    """The same work with the heads folded into the batch, as (B * H, T, d) inputs (H = 0 says: no head axis), and
    a batch of at least two: a shape to time a function on when a call on ``shape`` fails on an edge of it (a head
    axis, a batch of one). A loop over queries costs as much there; the ratio to the reference is on it alike."""
    B, H, T_q, T_k, d = shape
    return (max(B * H, 2), 0, T_q, T_k, d)


def _round(runner, inputs, shape, dtype, device, form):
    B, H, T_q, T_k, d = shape
    lead = (B, H) if H else (B,)
    outputs = [((*lead, T_q, d), dtype), ((*lead, T_q, T_k), dtype)]
    return runner.timed(TARGET, inputs, outputs, device=device, kwargs=keywords(form))


def check_outputs(reply, inputs, picks: list[int], tolerance: tuple[float, float], form: str = FORMS[1]) -> str:
    """'' when the sampled repetitions' outputs match the reference (in float64), else what was wrong."""
    atol, rtol = tolerance
    for index in picks:
        Q, K, V, *mask = (t.double() if t.is_floating_point() else t for t in inputs[index])
        expected = ref.scaled_dot_product_attention(Q, K, V, *mask, **keywords(form))
        for got, want, what in zip(reply.outputs[index], expected, ("output", "weights")):
            error = (got.double() - want).abs().nan_to_num(float("inf"))
            if (error > atol + rtol * want.abs()).any():
                return (
                    f"the {what} of timed call {index + 1} ({form}) differs from the expected one by up to"
                    f" {float(error.max()):.3g}"
                )
    return ""


@contextlib.contextmanager
def one_thread():
    """torch on one thread here, as in the workers: beside them, more threads only spin on the CPUs the
    workers need (a batch of 40 took 34 s with two, 19 s with one) and add noise to what is timed."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def measure(
    student,
    reference,
    draw: Draw,
    shape: tuple,
    *,
    rounds: int,
    repeat: int,
    tolerance,
    sample: int = 2,
    device: str = "cpu",
    bounds: Bounds | None = None,
) -> Measurement:
    """Interleaved rounds (student, reference, ...) of every call form, after one warm-up round each (of
    ``WARM_UP_REPEAT`` calls); per form, the median of its per-round ratios (``rounds`` in all, shared among the
    forms); the slowest form is the result. With ``bounds``, no more rounds once they are settled."""
    with one_thread():
        return _measure(student, reference, draw, shape, rounds, repeat, tolerance, sample, device, bounds)


def _samples(student, reference, draw, shapes, rounds, repeat, tolerance, sample, device, settled=None):
    """Interleaved rounds of every form on every shape (student, reference, ...), the first of each form a warm-up;
    per (shape, form), each measured round's (student CPU, reference CPU, student wall, reference wall) seconds, and
    the first wrong answer. With ``settled``, no round after one that leaves ``settled(times)`` true."""
    dtype = torch.float32
    times: dict[tuple, list[tuple[float, float, float, float]]] = {(s, f): [] for s in shapes for f in FORMS}
    wrong = ""
    for index in range(_per_form(rounds) + 1):
        if index > 1 and settled is not None and settled(times):
            break
        calls = repeat if index else min(repeat, WARM_UP_REPEAT)  # the first round of each form warms up
        for form in FORMS:
            for shape in shapes:
                inputs = timing_inputs(draw, shape, calls, dtype, form)
                mine = _round(student, inputs, shape, dtype, device, form)
                theirs = _round(reference, timing_inputs(draw, shape, calls, dtype, form), shape, dtype, device, form)
                # which repetitions are checked is chosen only now, after the answer, by the system's CSPRNG:
                # no seed to recover
                picks = _PICKER.sample(range(calls), min(sample, calls))
                # the first wrong answer is kept, and the timing goes on: the check decides on both (a function
                # whose answers are wrong for a mistake carried forward is timed as it is)
                wrong = wrong or check_outputs(mine, inputs, picks, tolerance, form)
                if index:
                    times[shape, form].append((mine.cpu_seconds, theirs.cpu_seconds, mine.seconds, theirs.seconds))
    return times, wrong


def _slowest(result: Measurement, cpu: dict[str, list[float]], wall: dict[str, list[float]]) -> Measurement:
    """Per form the median of its rounds' ratios; the slowest form is the result."""
    medians = {form: statistics.median(cpu[form]) for form in FORMS}
    result.form = max(medians, key=medians.get)
    result.cpu_ratio = medians[result.form]
    result.wall_ratio = max(statistics.median(wall[form]) for form in FORMS)
    result.per_form = {form: (medians[form], statistics.median(wall[form])) for form in FORMS}
    return result


def over(found: Measurement, budget: float, device: str = "cpu") -> list[str]:
    """The call forms over the budget, in FORMS' order (``within``'s rule, form by form): the feedback names them all,
    so that which of several slow forms measured slowest (the machine's noise) changes no word of it."""
    return [
        form
        for form, (cpu, wall) in found.per_form.items()
        if not within(Measurement(found.shape, cpu_ratio=cpu, wall_ratio=wall), budget, device)
    ] or [found.form]


def _ratios(times, shape) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per form, each measured round's student/reference ratio on ``shape``: by CPU time, by the wall clock."""
    cpu = {form: [s / max(r, 1e-9) for s, r, _, _ in times[shape, form]] for form in FORMS}
    wall = {form: [s / max(r, 1e-9) for _, _, s, r in times[shape, form]] for form in FORMS}
    return cpu, wall


def _measure(student, reference, draw, shape, rounds, repeat, tolerance, sample, device, bounds=None) -> Measurement:
    settled = bounds and (lambda times: bounds.settled(*_ratios(times, shape), _per_form(rounds)))
    times, wrong = _samples(student, reference, draw, [shape], rounds, repeat, tolerance, sample, device, settled)
    return _slowest(Measurement(tuple(shape), wrong=wrong), *_ratios(times, shape))


def measure_growth(
    student,
    reference,
    draw: Draw,
    shape: tuple,
    large: tuple,
    *,
    rounds: int,
    repeat: int,
    tolerance,
    sample: int = 2,
    device: str = "cpu",
    bounds: Bounds | None = None,
) -> Measurement:
    """How much more the student's attention costs on ``large`` than on ``shape``, over how much more the
    reference's does: both shapes in every round, interleaved; per round and form, (student's cost on large - on
    shape) / (reference's, at least GROWTH_FLOOR of its cost on large); per form the median; the slowest form is the
    result. Work a call does whatever the size (a mask built on each call, a cast) cancels out. With ``bounds``, no
    more rounds once they are settled."""
    settled = bounds and (lambda times: bounds.settled(*_growths(times, shape, large), _per_form(rounds)))
    with one_thread():
        times, wrong = _samples(
            student, reference, draw, [shape, large], rounds, repeat, tolerance, sample, device, settled
        )
    return _slowest(Measurement(tuple(shape), wrong=wrong, large=tuple(large)), *_growths(times, shape, large))


def _growths(times, shape, large) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per form, each measured round's growth from ``shape`` to ``large`` over the reference's: by CPU time, by the
    wall clock."""
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for form in FORMS:
        pairs = list(zip(times[shape, form], times[large, form]))
        cpu[form] = [_growth(a[0], b[0], a[1], b[1]) for a, b in pairs]
        wall[form] = [_growth(a[2], b[2], a[3], b[3]) for a, b in pairs]
    return cpu, wall


def _growth(mine_small: float, mine: float, theirs_small: float, theirs: float) -> float:
    return (mine - mine_small) / max(theirs - theirs_small, GROWTH_FLOOR * theirs, 1e-9)


def judge(
    student,
    reference,
    draw: Draw,
    shape: tuple,
    *,
    large: tuple | None,
    budget: float,
    retries: int,
    device: str = "cpu",
    **options,
) -> tuple[bool, Measurement]:
    """Whether the student's attention is within the budget on ``shape``, and the measurement that decided.

    The ratio to the reference on ``shape`` first: within the budget, that is all (the measure an honest
    submission costs). Over it, with a larger twin ``large`` (``GROWTH_TO``), the growth from ``shape`` to
    ``large`` decides, measured up to ``1 + retries`` times with GROWTH_REPEAT calls a round (once, when it misses
    by more than CLEAR_MISS times); without one (the GPU's shape), the ratio is measured again as many times. A
    wrong timed answer seen in any of these measurements is kept on the result. No measurement takes a round that
    could not change what is decided from it (``Bounds``): the verdict is the one all its rounds would give."""
    ratio, growth_bounds = Bounds.of(budget, device), Bounds.of(budget, device, CLEAR_MISS * budget)
    first = measure(student, reference, draw, shape, device=device, bounds=ratio, **options)
    found = first
    if within(first, budget, device):
        return True, first
    for _ in range(retries + 1 if large else retries):
        if large:
            growth = {**options, "repeat": min(options["repeat"], GROWTH_REPEAT)}
            found = measure_growth(
                student, reference, draw, shape, large, device=device, bounds=growth_bounds, **growth
            )
        else:
            found = measure(student, reference, draw, shape, device=device, bounds=ratio, **options)
        found.wrong = found.wrong or first.wrong
        if within(found, budget, device):
            return True, found
        if large and found.cpu_ratio > CLEAR_MISS * budget:
            break
    return False, found
