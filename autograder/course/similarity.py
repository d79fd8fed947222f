"""Evidence that two submissions of a class may share their code, for the instructor's review (never a deduction).

Two kinds of evidence per pair, each scored against the class's own pairs, since SDPA solutions are short and
converge on the same few lines:

- **code**: the share of winnowed k-gram fingerprints (Schleimer, Wilkerson and Aiken 2003, as MOSS and
  copydetect use them) the two files have in common, after normalising what a copier changes: the tokens of
  ``tokenize``, each name as Python reads it (NFKC), with every name the file binds renamed to one placeholder,
  comments, docstrings and layout dropped, the top-level functions and classes sorted, and every fingerprint of the
  code the course hands out (the student template, the notebook's given cells and nbgrader's stubs) removed. Each
  shared fingerprint keeps its lines in both files, so that the dashboard can mark them.
- **behaviour**: what the two results say alike, from their structured fields: per scored check, the answer
  (passed, or the outcome, the named mistake and the feedback's wording with its numbers masked, since every
  grading draws its own inputs). Agreeing answers weigh by how rare they are in the class (``-ln(share)``), so a
  wrong answer two students share where the class disagrees counts far more than a correct one everybody gives.

A pair is flagged when it stands far above the class's typical pair on both (a robust z-score against the median
and MAD of every pair) and passes an absolute floor on both, so a class of identical correct solutions flags no one.
Nothing here prints or words anything: render/similarity.py writes the sentences, the CSV and the dashboard section.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import io
import keyword
import math
import re
import statistics
import tokenize
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autograder.assignment.paths import NOTEBOOK, TEMPLATE
from autograder.config import Limits
from autograder.read import bounded
from autograder.read.handed_in import HandedIn
from autograder.read.submission import code_cells, is_notebook
from autograder.record import Result
from autograder.release.build import find_root, template_of
from autograder.release.template import solution_regions
from autograder.status import Status, earned

K = 12  # tokens per k-gram: shorter than the shortest body worth comparing, longer than an idiom (`Q @ K.mT`)
WINDOW = 4  # winnowing window: any match of K + WINDOW - 1 tokens is certain to leave a shared fingerprint
MAX_TOKENS = 20_000  # a file with more tokens than this is not compared (about 10x an honest submission)
MAX_NESTING = 60  # brackets nested deeper than this are set aside, not parsed (an honest file nests about 5)
# A pair is flagged when it stands this many robust standard deviations above the class's typical pair on each kind
# of evidence, and passes each floor. Code must stand out further: behaviour is the guard against convergent code,
# and a copy of a file with one common mistake shares only that one wrong answer (about 2 nats for 1 in 8).
CODE_Z, BEHAVIOUR_Z = 3.5, 2.0
CODE_FLOOR = 0.6  # at least 60% of the two files' own fingerprints shared (corpus: copies 0.86 and up, others 0.53)
BEHAVIOUR_FLOOR = 2.0  # at least one answer as rare as 1 in 7 of the class, shared (in nats: -ln(1/7) = 1.95)
CODE_SCALE, BEHAVIOUR_SCALE = 0.05, 1.0  # the smallest spread a z-score divides by (a class that all agrees)
FEEDBACK_CHARS = 500  # how much of a failed check's first line of feedback makes its answer (what it found, its cause)
PLACEHOLDER = "N"
NBGRADER_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}


@dataclass(frozen=True)
class Code:
    """One file's fingerprints after normalising: hash -> the (first, last) lines of each k-gram that gave it."""

    fingerprints: dict[str, list[tuple[int, int]]]
    skipped: str = ""  # why this file gives no code evidence ("" when it does): a field, worded at the edge


@dataclass(frozen=True)
class Agreement:
    """A check both students answered alike, where few of the class did."""

    check: str
    mistake: str  # the named mistake both showed there ("" for none)
    passed: bool  # a shared correct answer (it counts when few passed)
    shared_by: int  # how many of the class gave this answer
    weight: float  # -ln(shared_by / class)


@dataclass(frozen=True)
class Pair:
    """Two students' evidence, and whether it stands out from the class."""

    a: str
    b: str
    code: float  # shared fingerprints / the two files' own fingerprints (0 to 1; 0 where either was skipped)
    behaviour: float  # the summed weights of the agreeing answers (nats)
    code_z: float
    behaviour_z: float
    flagged: bool
    a_lines: tuple[tuple[int, int], ...] = ()  # a flagged pair's matching regions, merged, in a's file (else empty)
    b_lines: tuple[tuple[int, int], ...] = ()
    agreements: tuple[Agreement, ...] = ()  # the agreeing answers that weigh, heaviest first
    skipped: tuple[tuple[str, str], ...] = ()  # (student, why) for a file with no code evidence


@dataclass(frozen=True)
class Similarity:
    """Every pair of the class, in the roster's order, with the class's typical pair."""

    pairs: list[Pair]
    code_median: float
    behaviour_median: float
    sources: dict[str, str] = field(default_factory=dict)  # student -> the text compared (for the side-by-side)
    not_compared: dict[str, str] = field(default_factory=dict)  # student -> why their file gave no code evidence
    kept: dict[str, frozenset[int]] = field(default_factory=dict)  # a flagged pair's student -> code_lines of the text

    @property
    def flagged(self) -> list[Pair]:
        return [p for p in self.pairs if p.flagged]


# --- code -----------------------------------------------------------------------------------------------------


Span = tuple[tuple[int, int], tuple[int, int]]  # (row, column) of a stretch's start and of its end


def _bounded(tokens: Iterable[tokenize.TokenInfo]) -> Iterator[tokenize.TokenInfo]:
    for count, token in enumerate(tokens, 1):
        if count > MAX_TOKENS:
            raise ValueError(f"more than {MAX_TOKENS} tokens")
        yield token


def _names(tokens: Iterable[tokenize.TokenInfo]) -> Iterator[tokenize.TokenInfo]:
    """Each name as Python reads it: the pieces ``tokenize`` splits one name into (``a·b``: a middle dot continues a
    name, but is no ``\\w``) joined, and every name folded by NFKC (``ｘ`` is ``x``), in one pass."""
    run: list[tokenize.TokenInfo] = []
    for token in tokens:
        piece = token.type in (tokenize.NAME, tokenize.ERRORTOKEN, tokenize.NUMBER)
        if run and piece and token.start == run[-1].end and ("a" + token.string).isidentifier():
            run.append(token)  # checked piece by piece: the name is joined once, when it ends
            continue
        if run:
            yield _joined(run)
            run = []
        if token.type == tokenize.NAME or (token.type == tokenize.ERRORTOKEN and token.string.isidentifier()):
            run = [token]
        else:
            yield token
    if run:
        yield _joined(run)


def _joined(run: list[tokenize.TokenInfo]) -> tokenize.TokenInfo:
    name = "".join(token.string for token in run)
    name = name if name.isascii() else unicodedata.normalize("NFKC", name)
    return tokenize.TokenInfo(tokenize.NAME, name, run[0].start, run[-1].end, run[0].line)


def _tokens(text: str) -> tuple[list[tokenize.TokenInfo], list[Span]]:
    """The file's tokens (names as Python reads them), refused (ValueError) past MAX_TOKENS before anything parses
    it. Brackets nested past MAX_NESTING are set aside, not refused: their tokens are left out, and the inside of
    each bracket at MAX_NESTING that holds them is returned, for the parser to be spared it too."""
    found, deep, depth = [], [], 0
    inside: tokenize.TokenInfo | None = None  # the bracket at MAX_NESTING now open
    nested = False  # whether it holds a deeper one
    for token in _names(_bounded(tokenize.generate_tokens(io.StringIO(text).readline))):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
            inside, nested = (token, False) if depth == MAX_NESTING else (inside, nested or depth > MAX_NESTING)
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
            if depth == MAX_NESTING - 1 and inside is not None and nested:
                deep.append((inside.end, token.start))
            if depth < MAX_NESTING:
                inside = None
            if depth >= MAX_NESTING:
                continue
        if depth <= MAX_NESTING:
            found.append(token)
    return found, deep


def _shallow(text: str, deep: list[Span]) -> str:
    """The text with the inside of each bracket in ``deep`` written as ``0`` (an expression wherever an inside
    stands: ``(0)``, ``[0]``, ``f(0)``, ``x[0]``, ``{0}``), every line kept with its number: one pass over the lines."""
    lines = io.StringIO(text).readlines()
    cuts: dict[int, list[tuple[int, int, str]]] = {}
    for (row, column), (end_row, end_column) in deep:
        for r in range(row, end_row + 1):
            stop = end_column if r == end_row else len(lines[r - 1])
            cuts.setdefault(r, []).append((column if r == row else 0, stop, "0" if r == row else ""))
    for r, spans in cuts.items():
        line, kept, at = lines[r - 1], [], 0
        for first, stop, lead in spans:  # in order along the line, apart
            blank = "".join("\n" if c == "\n" else " " for c in line[first:stop])
            blank = lead + (blank[1:] if lead and blank[:1] == " " else blank)  # "0" on a space, or before the "\n"
            kept += [line[at:first], blank]
            at = stop
        lines[r - 1] = "".join(kept) + line[at:]
    return "".join(lines)


def _names_and_docstrings(tree: ast.AST) -> tuple[set[str], set[int]]:
    """Every name the file binds itself (variables, parameters, its functions and classes; imports are kept), and
    the lines of its docstrings: one walk."""
    names, lines = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not isinstance(node, ast.Module):
                names.add(node.name)
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return names, lines


def normalised(text: str) -> list[tuple[str, int]]:
    """The file as (token, line) pairs a copier's changes leave alone: names it binds renamed, comments, docstrings
    and layout dropped, top-level functions and classes sorted by their normalised text. Raises ValueError or
    SyntaxError for a file that cannot be read so. A file whose tree ``ast`` refuses to build for its depth (a line of
    3,000 unary minuses: Python's own bound) is read from its tokens alone (``_read_without_tree``)."""
    tokens, deep = _tokens(text)
    try:
        tree = ast.parse(_shallow(text, deep) if deep else text)
    except (RecursionError, MemoryError):  # the parser's own bounds on depth, reached without brackets
        return _chunked(tokens, *_read_without_tree(tokens))
    bound, docstrings = _names_and_docstrings(tree)
    spans = [(node.lineno if not getattr(node, "decorator_list", None) else min(d.lineno for d in node.decorator_list),
              node.end_lineno, isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
             for node in tree.body]  # fmt: skip
    renamed = {i for i, token in enumerate(tokens) if token.type == tokenize.NAME and token.string in bound}
    return _chunked(tokens, renamed, docstrings, spans)


def _chunked(tokens: list[tokenize.TokenInfo], renamed: set[int], docstrings: set[int],
             spans: list[tuple[int, int, bool]]) -> list[tuple[str, int]]:  # fmt: skip
    """The tokens normalised: those in ``renamed`` (but attributes and keywords) as the placeholder, docstrings,
    comments and layout dropped, each top-level statement (``spans``: first line, last line, a definition) a chunk,
    the definitions sorted after the rest."""
    chunks: list[list[tuple[str, int]]] = [[] for _ in spans]
    owners: dict[int, int] = {line: i for i, (first, last, _) in enumerate(spans) for line in range(first, last + 1)}
    previous = ""
    for i, token in enumerate(tokens):
        if token.type in _SKIP or (token.type == tokenize.STRING and token.start[0] in docstrings):
            continue
        line = token.start[0]
        if i in renamed and previous != "." and not keyword.iskeyword(token.string):
            word = PLACEHOLDER
        elif token.type == tokenize.NEWLINE:
            word = ";"
        else:
            word = token.string
        previous = token.string
        owner = owners.get(line)
        if owner is not None and not (word == ";" and (not chunks[owner] or chunks[owner][-1][0] == ";")):
            chunks[owner].append((word, line))  # one ";" between statements: a dropped docstring leaves none
    kept = [chunk for chunk, (_, _, definition) in zip(chunks, spans) if not definition]
    definitions = sorted((chunk for chunk, (_, _, d) in zip(chunks, spans) if d), key=lambda c: [w for w, _ in c])
    return [token for chunk in kept + definitions for token in chunk]


_BUILTINS = frozenset(dir(builtins))
_DEFINES = {"def", "class", "async", "@"}


def _read_without_tree(tokens: list[tokenize.TokenInfo]) -> tuple[set[int], set[int], list[tuple[int, int, bool]]]:
    """What ``normalised`` takes from the tree, read from the tokens alone, in two passes: every name renamed but
    builtins, imported names and a call's keyword arguments (the tree renames the names the file binds: the same in an
    honest file, but for a builtin it rebinds); a statement of strings alone as a docstring; each statement that
    starts at the left margin a top-level span, a decorator's joined to what it decorates. Linear in the tokens."""
    imported, parameters = set(), set()
    statement: list[tokenize.TokenInfo] = []
    for token, inside in zip(tokens, _in_parameters(tokens)):
        if token.type == tokenize.NEWLINE:
            if statement and statement[0].string in ("import", "from"):
                imported |= {t.string for t in statement if t.type == tokenize.NAME}
            statement = []
        elif token.type not in _SKIP:
            statement.append(token)
        if inside and token.type == tokenize.NAME:
            parameters.add(token.string)
    renamed, docstrings, spans = set(), set(), []
    level, depth, first, strings_only, decorator = 0, 0, None, True, False
    significant = [i for i, token in enumerate(tokens) if token.type not in _SKIP]
    following = dict(zip(significant, significant[1:]))
    for i, (token, inside) in enumerate(zip(tokens, _in_parameters(tokens))):
        if token.type == tokenize.INDENT:
            level += 1
        elif token.type == tokenize.DEDENT:
            level -= 1
        if token.type in _SKIP:
            continue
        if first is None:  # a statement starts
            first, strings_only = token, True
            if level == 0 and not (spans and decorator):  # after a decorator, what it decorates: the same span
                spans.append((token.start[0], token.end[0], token.string in _DEFINES))
            if level == 0:
                decorator = token.string == "@"
        if token.type == tokenize.NEWLINE:
            if strings_only and first.type == tokenize.STRING:
                docstrings.update(range(first.start[0], token.start[0] + 1))
            first = None
        elif token.type != tokenize.STRING:
            strings_only = False
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        if spans:
            spans[-1] = (spans[-1][0], token.end[0], spans[-1][2])
        if token.type != tokenize.NAME or token.string in _BUILTINS or token.string in imported:
            continue
        argument = depth > 0 and not inside and tokens[following.get(i, i)].string == "="  # f(dim=...)
        if not argument or token.string in parameters:  # a keyword the file's own functions take: a name it binds
            renamed.add(i)
    return renamed, docstrings, spans


def _in_parameters(tokens: list[tokenize.TokenInfo]) -> Iterator[bool]:
    """For each token, whether it stands in a ``def``'s parameter list."""
    depth, opened = 0, None  # the depth of the parameter list's own bracket, while in one
    for i, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
            if opened is None and token.string == "(" and i >= 2 and tokens[i - 2].string == "def":
                opened = depth
        elif token.type == tokenize.OP and token.string in ")]}":
            if depth == opened:
                opened = None
            depth -= 1
        yield opened is not None


def _kgrams(tokens: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """Every k-gram's hash with its first and last line."""
    words = [word for word, _ in tokens]
    return [
        (hashlib.blake2b("\x00".join(words[i : i + K]).encode(), digest_size=8).hexdigest(), tokens[i][1],
         tokens[i + K - 1][1])
        for i in range(len(tokens) - K + 1)
    ]  # fmt: skip


def winnow(grams: list[tuple[str, int, int]]) -> dict[str, list[tuple[int, int]]]:
    """Winnowing (Schleimer et al. 2003): in every window of WINDOW consecutive k-grams, keep the smallest hash
    (the rightmost of equals); the kept hashes are the fingerprints, each with the lines of the k-grams it came from."""
    chosen: dict[int, tuple[str, int, int]] = {}
    for start in range(max(len(grams) - WINDOW + 1, 1 if grams else 0)):
        window = grams[start : start + WINDOW]
        low = min(h for h, _, _ in window)
        position = start + max(i for i, (h, _, _) in enumerate(window) if h == low)
        chosen[position] = grams[position]
    prints: dict[str, list[tuple[int, int]]] = {}
    for _, (digest, first, last) in sorted(chosen.items()):
        prints.setdefault(digest, []).append((first, last))
    return prints


def given_code(root: Path | None = None, off: Collection[str] | None = None) -> list[str]:
    """The code the course hands out, whose fingerprints no pair is credited with: the student template, and each
    code cell of the notebook that is not a test cell, its solution regions replaced by nbgrader's stub. Without the
    project folder, the template is made from the packaged reference without the optional parts in ``off`` (the
    grading settings' parts.off(); the default settings' when None)."""
    import reference

    try:
        root = root or find_root()
    except FileNotFoundError:
        root = None
    if root is None or not (root / TEMPLATE).is_file():  # installed from a wheel: the template made afresh, no notebook
        from autograder.assignment.parts import without
        from autograder.config import load_settings

        settings = load_settings()
        off = settings.parts.off() if off is None else off
        handed_out = without(Path(reference.__file__).with_name("attention.py").read_text(), off)
        return [template_of(handed_out, settings.lesson)]
    texts = [(root / TEMPLATE).read_text()]
    if not (root / NOTEBOOK).is_file():
        return texts
    notebook = bounded.load_json((root / NOTEBOOK).read_text(), 64, 100_000)
    for cell in bounded.notebook_cells(notebook):
        nbgrader = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] != "code" or (nbgrader.get("grade") and not nbgrader.get("solution")):
            continue
        source = cell.get("source", "")
        lines = ("".join(source) if isinstance(source, list) else source).splitlines()
        for begin, end in reversed(solution_regions("\n".join(lines))):
            indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
            lines[begin : end + 1] = [indent + stub for stub in NBGRADER_STUB.splitlines()]
        texts.append("\n".join(lines))
    return texts


def given_fingerprints(texts: list[str]) -> set[str]:
    """Every k-gram hash of the handed-out code (all of them, not only the winnowed: removal must be thorough)."""
    found: set[str] = set()
    for text in texts:
        try:
            found |= {digest for digest, _, _ in _kgrams(normalised(text))}
        except (SyntaxError, ValueError):
            continue  # a cell that is not Python on its own (a fragment) gives nothing to remove
    return found


def code_of(text: str | None, given: set[str], skipped: str = "") -> Code:
    """One file's fingerprints, less the handed-out code's; a file that cannot be tokenised or parsed within its
    bounds gives no code evidence, and says why (``skipped``)."""
    if text is None:
        return Code({}, skipped or "not compared: no source")
    try:
        prints = winnow(_kgrams(normalised(text)))
    except (SyntaxError, ValueError, tokenize.TokenError, RecursionError, MemoryError) as error:
        return Code({}, f"not compared: {type(error).__name__}: {str(error)[:120]}")
    return Code({digest: lines for digest, lines in prints.items() if digest not in given})


def _merged(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[list[int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return tuple((a, b) for a, b in out)


def code_similarity(a: Code, b: Code) -> float:
    """The share of the two files' own fingerprints they have in common: shared / union (0 where either has none)."""
    if not a.fingerprints or not b.fingerprints:
        return 0.0
    shared = len(a.fingerprints.keys() & b.fingerprints.keys())
    return shared / (len(a.fingerprints) + len(b.fingerprints) - shared)


def matching_lines(a: Code, b: Code) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """The lines of the fingerprints the two files share, merged into regions, in each file."""
    shared = a.fingerprints.keys() & b.fingerprints.keys()
    return (_merged([r for digest in shared for r in a.fingerprints[digest]]),
            _merged([r for digest in shared for r in b.fingerprints[digest]]))  # fmt: skip


# --- behaviour --------------------------------------------------------------------------------------------------


def answers(result: dict | None) -> dict[str, tuple[str, str, bool]]:
    """A result's answer per scored check: (the answer's key, its named mistake, passed). The key is "passed", or
    the outcome, the mistake and the feedback's first line (what was found, the likely cause) with its numbers
    masked (each grading draws its own inputs, so the numbers differ between two gradings of one file). A result
    that graded nothing gives no answers."""
    record = Result.of(result)
    if not result or record.ungradable or record.grader_error:
        return {}
    found = {}
    for test in record.tests:
        if not test.scored or test.outcome == Status.NOT_RUN:
            continue
        verdict = earned(test)  # points kept by carry-forward: the cause is elsewhere
        first_line = test.output[: 4 * FEEDBACK_CHARS].split("\n", 1)[0]
        feedback = _NUMBER.sub("#", first_line)[:FEEDBACK_CHARS]  # masked first, then cut: the same for a copy
        key = Status.PASSED.value if verdict else f"{test.outcome}|{test.mistake}|{feedback}"
        found[test.name] = (key, test.mistake, verdict)
    return found


def agreements(a: dict, b: dict, counts: dict[str, Counter], size: int) -> tuple[Agreement, ...]:
    """The checks a and b answered alike, each weighed by how rare that answer is in the class, heaviest first."""
    found = []
    for check, (key, mistake, verdict) in a.items():
        if check in b and b[check][0] == key:
            shared_by = counts[check][key]
            weight = -math.log(shared_by / size)
            if weight > 0:
                found.append(Agreement(check, mistake, verdict, shared_by, weight))
    return tuple(sorted(found, key=lambda g: (-g.weight, g.check)))


# --- the class --------------------------------------------------------------------------------------------------


def _z(value: float, median: float, mad: float, scale: float) -> float:
    return (value - median) / max(1.4826 * mad, scale)


def _spread(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    median = statistics.median(values)
    return median, statistics.median(abs(v - median) for v in values)


def similarity(results: dict[str, dict | None], sources: dict[str, str | None], given: set[str],
               skipped: dict[str, str] | None = None) -> Similarity:  # fmt: skip
    """Every pair of the class (``results``: student -> result, in the roster's order; ``sources``: student -> the
    graded file's text, or None with the reason in ``skipped``), scored against the class."""
    skipped = skipped or {}
    names = list(results)
    codes = {name: code_of(sources.get(name), given, skipped.get(name, "")) for name in names}
    given_answers = {name: answers(results[name]) for name in names}
    counted = [name for name in names if given_answers[name]]
    counts: dict[str, Counter] = {}
    for name in counted:
        for check, (key, _, _) in given_answers[name].items():
            counts.setdefault(check, Counter())[key] += 1
    raw = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            code = code_similarity(codes[a], codes[b])
            agreed = agreements(given_answers[a], given_answers[b], counts, len(counted))
            raw.append((a, b, code, sum(g.weight for g in agreed), agreed))
    code_median, code_mad = _spread([r[2] for r in raw])
    behaviour_median, behaviour_mad = _spread([r[3] for r in raw])
    pairs = []
    for a, b, code, behaviour, agreed in raw:
        code_z = _z(code, code_median, code_mad, CODE_SCALE)
        behaviour_z = _z(behaviour, behaviour_median, behaviour_mad, BEHAVIOUR_SCALE)
        flagged = (
            code_z >= CODE_Z and behaviour_z >= BEHAVIOUR_Z and code >= CODE_FLOOR and behaviour >= BEHAVIOUR_FLOOR
        )
        why_skipped = tuple((n, codes[n].skipped) for n in (a, b) if codes[n].skipped)
        lines_a, lines_b = matching_lines(codes[a], codes[b]) if flagged else ((), ())
        pairs.append(Pair(a, b, code, behaviour, code_z, behaviour_z, flagged, lines_a, lines_b, agreed, why_skipped))
    shown = {name: text for name, text in sources.items() if text is not None}
    not_compared = {name: codes[name].skipped for name in names if codes[name].skipped}
    kept = {name: code_lines(shown.get(name, "")) for pair in pairs if pair.flagged for name in (pair.a, pair.b)}
    return Similarity(pairs, code_median, behaviour_median, shown, not_compared, kept)


def code_lines(text: str) -> frozenset[int]:
    """The lines that hold a token the comparison kept (``normalised``); every line where the file cannot be read so
    (it was, to be compared: a flagged pair's files were). The side-by-side highlights only these."""
    try:
        return frozenset(line for _, line in normalised(text))
    except (SyntaxError, ValueError, tokenize.TokenError, RecursionError, MemoryError):
        return frozenset(range(1, text.count("\n") + 2))


def read_source(handed: HandedIn, result: dict | None, limits: Limits) -> tuple[str | None, str]:
    """The graded file's code, from the gate's record (handed_in.take or listing: the bytes it read once; nothing
    here opens a student's folder or file), as the grader read it (a notebook: its code cells, not its test cells), or
    None and why not: refused at the gate (no such file, a link, not a regular file, over its size bound), not UTF-8,
    or changed since it was graded (its SHA-256)."""
    if handed.data is None:
        return None, f"not compared: {handed.refused}"
    graded = Result.of(result).provenance.get("sha256")
    if graded and graded != handed.sha256:
        return None, "not compared: the file changed since it was graded"
    try:
        text = handed.data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        if is_notebook(handed.file):
            text = "\n\n".join(code for _, code in code_cells(text, limits))
    except (UnicodeDecodeError, bounded.Refused) as error:
        return None, f"not compared: {error}"
    return text, ""
