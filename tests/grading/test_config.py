"""Settings: defaults, overrides, precedence, and errors that name the bad value and its source."""

from __future__ import annotations

import dataclasses

import pytest

from autograder.assignment.catalogue import catalogue
from autograder.config import DEFAULTS, SECTIONS, ConfigError, load_settings, tomllib
from tests.helpers import BIN, REFERENCE, ROOT, run


def test_defaults_cover_every_check():
    """The shipped defaults give points to every hidden check, and tolerances to every dtype."""
    settings = load_settings(environ={})
    assert settings.source == "defaults"
    assert settings.points["sdpa_matches_torch"] > 0
    assert settings.tolerance("float16") == (3e-2, 3e-2)
    assert settings.tolerance("float64") == (
        1e-5,
        1e-5,
    )  # float32-level rounding of correct math passes (docs/grading.md)


def test_file_overrides_only_what_it_names(tmp_path):
    """A config file changes the keys it sets and keeps the rest."""
    path = tmp_path / "course.toml"
    path.write_text("[points]\nsdpa_gradients = 10\n")
    settings = load_settings(path, environ={})
    assert settings.points["sdpa_gradients"] == 10
    assert settings.points["sdpa_causal"] == 3


def test_points_are_declared_by_the_checks_and_a_file_only_overrides_them(tmp_path):
    """Each check's points are its marker's (assignment/catalogue.py reads them): the shipped [points] holds none, and a
    course's file changes only the checks it names, in the checks' order. The checks of a part turned off (the
    optional blockwise and decoding parts, by default) have none: they are not run."""
    off = load_settings(environ={}).parts.off()
    everything = {entry.check: entry.points for entry in catalogue()}
    declared = {entry.check: entry.points for entry in catalogue() if entry.function not in off}
    assert len(everything) - len(declared) == 8 + 11  # the blockwise part's checks and the decoding part's
    assert tomllib.loads(DEFAULTS.read_text())["points"] == {}
    assert dict(load_settings(environ={}).points) == declared and all(value >= 0 for value in declared.values())
    path = tmp_path / "course.toml"
    path.write_text("[points]\nsdpa_gradients = 10\nscores_shape = 0\n")
    settings = load_settings(path, environ={})
    assert dict(settings.points) == {**declared, "sdpa_gradients": 10, "scores_shape": 0}
    assert list(settings.points) == list(declared)
    path.write_text("[points]\nblockwise_memory = 5\n[parts]\nblockwise_attention = true\n")
    blockwise = {check: worth for check, worth in everything.items() if check in declared or "blockwise" in check}
    assert dict(load_settings(path, environ={}).points) == {**blockwise, "blockwise_memory": 5}


def test_command_line_beats_environment(tmp_path):
    """--config wins over SDPA_GRADE_CONFIG, which wins over the defaults."""
    env_file, cli_file = tmp_path / "env.toml", tmp_path / "cli.toml"
    env_file.write_text("[timing]\nbudget = 7\n")
    cli_file.write_text("[timing]\nbudget = 9\n")
    assert load_settings(None, environ={"SDPA_GRADE_CONFIG": str(env_file)}).timing.budget == 7
    assert load_settings(cli_file, environ={"SDPA_GRADE_CONFIG": str(env_file)}).timing.budget == 9


@pytest.mark.parametrize(
    "text, message",
    [
        ("[limits]\ncall_timeout = '1x'\n", "Invalid limits.call_timeout '1x' from"),
        ("[limits]\ncall_timeout = 0\n", "expected a positive number"),
        ("[points]\nscores_shape = -1\n", "Invalid points.scores_shape -1"),
        ("[points]\nno_such_check = 1\n", "unknown setting points.no_such_check"),
        ("[timing]\nwhen_no_gpu = 'maybe'\n", "expected one of exclude, award, fail"),
        ("[nonsense]\n", "unknown section [nonsense]"),
        ("[points\n", "is not valid TOML"),
        ("[limits]\nmemory_mb = 1.5\n", "Invalid limits.memory_mb 1.5 from"),
        ("[timing]\nrounds = 7.5\n", "Invalid timing.rounds 7.5 from"),
        ("[timing]\nretries = -1\n", "expected a non-negative number"),
        ("[timing]\nbudget = 0.5\n", "Invalid timing.budget 0.5 from"),  # faster than the reference: nobody passes
        ("[limits]\nmemory_mb = 512\n", "expected at least 1024"),
        ("[limits]\nprocesses = 0\n", "Invalid limits.processes 0 from"),
        ("[limits]\ntmp_mb = 0.5\n", "expected a whole number"),
        ("[limits]\nbusy_factor = 0.9\n", "expected at least 1"),
        ("[limits]\nrequire_sandbox = 'yes'\n", "expected true or false"),
        ("[tolerance]\nfloat32_atol = 0\n", "expected a positive number"),
        ("[tolerance]\ngradient_factor = 0.5\n", "expected at least 1"),
        ("[points]\nscores_shape = true\n", "expected a number"),
    ],
)
def test_bad_settings_are_named_with_their_source(tmp_path, text, message):
    """Each bad value is refused, naming the value and the file it came from."""
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_settings(path, environ={})
    assert message in str(error.value)
    assert "bad.toml" in str(error.value)


def test_zero_retries_and_fractional_points_are_settings(tmp_path):
    """retries = 0 (no re-measurement) and half points are accepted; a count set to a whole float is not."""
    path = tmp_path / "course.toml"
    path.write_text("[timing]\nretries = 0\n[points]\nscores_shape = 1.5\n")
    settings = load_settings(path, environ={})
    assert settings.timing.retries == 0 and settings.points["scores_shape"] == 1.5


def test_every_key_is_declared_once_with_its_type_and_help():
    """defaults.toml and the sections' declarations name the same keys; each declared key has a one-line help."""
    from autograder.assignment.deadline import KEYS

    defaults = tomllib.loads(DEFAULTS.read_text())
    assert set(defaults) == {"points", "deadline", *SECTIONS}
    assert set(defaults["deadline"]) == set(KEYS)  # [deadline] is declared and checked in deadline.py
    for name, section in SECTIONS.items():
        fields = {f.name: f for f in dataclasses.fields(section) if not f.metadata.get("table")}
        assert set(fields) == set(defaults[name]), name
        assert all(f.metadata["help"] and "\n" not in f.metadata["help"] for f in fields.values())
    tables = [f.name for section in SECTIONS.values() for f in dataclasses.fields(section) if f.metadata.get("table")]
    assert tables == ["checks"]  # [tolerance.<check>]: a course's own tables, none in the defaults


def test_settings_are_typed_and_frozen(tmp_path):
    """Sections are read as attributes, in their declared types (a float given as 7 is 7.0), and cannot change."""
    path = tmp_path / "course.toml"
    path.write_text("[timing]\nbudget = 7\n")
    settings = load_settings(path, environ={})
    assert isinstance(settings.timing.budget, float) and isinstance(settings.limits.memory_mb, int)
    assert settings.limits.require_sandbox is False and settings.limits.processes == 256
    assert settings.tolerance.variance_rtol == 0.1
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.limits.require_sandbox = True
    with pytest.raises(TypeError):
        settings.points["scores_shape"] = 100


def test_require_sandbox_is_a_setting_a_flag_can_turn_on():
    """require_sandbox is a declared [limits] key; replace() returns new settings and leaves the old ones alone."""
    settings = load_settings(environ={})
    required = settings.replace("limits", require_sandbox=True)
    assert required.limits.require_sandbox is True and settings.limits.require_sandbox is False
    assert required.limits.memory_mb == settings.limits.memory_mb and required.source == settings.source
    with pytest.raises(ConfigError, match="expected true or false"):
        settings.replace("limits", require_sandbox="yes")


def test_cli_refuses_bad_settings_before_running_student_code(tmp_path):
    """sdpa-grade exits 2 with the message, and grades nothing."""
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmemory_mb = 'lots'\n")
    result = run([str(BIN / "sdpa-grade"), "grade", str(REFERENCE), "--config", str(path)])
    assert result.returncode == 2
    assert "Invalid limits.memory_mb 'lots'" in result.stderr
    assert "check" not in result.stdout


def test_the_defaults_comments_are_written_from_the_declarations(tmp_path):
    """Each key's comment in defaults.toml is its declared help (sdpa-build writes it; --check finds it stale): an
    edited comment is put back, an edited value kept, and a declared key without a value named."""
    from autograder.release.settings_file import build_defaults

    text = DEFAULTS.read_text()
    assert build_defaults(ROOT) == text  # the committed file is what a build writes
    assert "# memory cap of the submission's processes, MiB\nmemory_mb = " in text
    (tmp_path / "autograder").mkdir()
    copy = tmp_path / "autograder" / "defaults.toml"
    copy.write_text(text.replace("memory cap of the submission's processes", "memory cap of the worker process"))
    assert build_defaults(tmp_path) == text
    copy.write_text(text.replace("memory_mb = 4096", "memory_mb = 2048"))
    assert build_defaults(tmp_path) == text.replace("memory_mb = 4096", "memory_mb = 2048")
    copy.write_text(text.replace("memory_mb = 4096\n", ""))
    with pytest.raises(ValueError, match=r"no value for \[limits\] memory_mb"):
        build_defaults(tmp_path)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[tolerance.no_such_check]\nfloat32_atol = 1e-4\n",
            "unknown check [tolerance.no_such_check] in {where}: a [tolerance.<check>] table names a check that"
            " compares values within the tolerance; known: ",
        ),
        ("[tolerance.softmax_maskd]\nfloat32_atol = 1e-4\n", "did you mean [tolerance.softmax_masked]?"),
        ("[tolerance.causal_square]\nfloat32_atol = 1e-4\n", "unknown check [tolerance.causal_square] in {where}"),
        (
            "[tolerance.softmax_masked]\natol = 1e-4\n",
            "unknown setting tolerance.softmax_masked.atol in {where}; a check's own tolerance sets float64_atol,",
        ),
        (
            "[tolerance.softmax_masked]\nvariance_rtol = 0.5\n",
            "unknown setting tolerance.softmax_masked.variance_rtol in {where}",
        ),
        (
            "[tolerance.softmax_masked]\nfloat32_atol = -1e-4\n",
            "Invalid tolerance.softmax_masked.float32_atol -0.0001 from {where}: expected a positive number",
        ),
        (
            "[tolerance.softmax_masked]\nfloat64_rtol = 'loose'\n",
            "Invalid tolerance.softmax_masked.float64_rtol 'loose' from {where}: expected a number",
        ),
        (
            "[tolerance.softmax_masked]\nfloat64_rtol = true\n",
            "Invalid tolerance.softmax_masked.float64_rtol True from {where}: expected a number",
        ),
        ("[lesson]\nbatch = 0\n", "Invalid lesson.batch 0 from {where}: expected a positive number"),
        ("[lesson]\nd_k = 6.5\n", "Invalid lesson.d_k 6.5 from {where}: expected a whole number"),
        ("[lesson]\nheads = 8\n", "unknown setting lesson.heads in {where}"),
    ],
)
def test_a_checks_own_tolerance_and_the_lesson_are_validated(tmp_path, text, message):
    """A [tolerance.<check>] table names a check that compares within the tolerance and only its dtypes' atol and
    rtol, each a positive number; [lesson]'s sizes are positive whole numbers; each error names the check (or
    section) and the key, and the file."""
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_settings(path, environ={})
    assert message.format(where=f"{path} (--config)") in str(error.value)


def test_a_checks_own_tolerance_applies_to_that_check_and_changes_the_digest(tmp_path):
    """[tolerance.<check>] replaces the keys it sets for that check alone; the settings digest changes with it, and
    names it in the settings' record; without one, every check reads [tolerance]."""
    from autograder import provenance

    defaults = load_settings(environ={})
    path = tmp_path / "course.toml"
    path.write_text("[tolerance.softmax_masked]\nfloat32_atol = 1e-4\nfloat64_rtol = 2e-5\n")
    settings = load_settings(path, environ={})
    own = settings.for_check("softmax_masked")
    assert own.tolerance("float32") == (1e-4, 1e-5) and own.tolerance("float64") == (1e-5, 2e-5)
    assert own.tolerance("float16") == defaults.tolerance("float16") and own.points == defaults.points
    for entry in catalogue():
        if entry.check != "softmax_masked":
            assert settings.for_check(entry.check).tolerance("float32", scale=3.0) == defaults.tolerance(
                "float32", scale=3.0
            )
    assert defaults.for_check("softmax_masked") is defaults and settings.tolerance("float32") == (1e-5, 1e-5)
    assert provenance.settings_sha256(settings) != provenance.settings_sha256(defaults)
    record = provenance.settings_record(settings)
    assert record["tolerance"]["checks"] == {"softmax_masked": {"float32_atol": 1e-4, "float64_rtol": 2e-5}}
    again = tmp_path / "again.toml"  # the same values, written in another order and form: the same digest
    again.write_text("[tolerance.softmax_masked]\nfloat64_rtol = 2e-5\nfloat32_atol = 0.0001\n")
    assert provenance.settings_sha256(load_settings(again, environ={})) == provenance.settings_sha256(settings)


def test_the_lesson_is_a_setting_in_the_digest(tmp_path):
    """[lesson] holds the lesson's sizes, whole numbers; a file changes the ones it names, and the digest with them."""
    from autograder import provenance

    defaults = load_settings(environ={})
    lesson = defaults.lesson
    assert dataclasses.asdict(lesson) == tomllib.loads(DEFAULTS.read_text())["lesson"]
    assert all(isinstance(size, int) for size in dataclasses.asdict(lesson).values())
    path = tmp_path / "course.toml"
    path.write_text("[lesson]\nbatch = 4\n")
    settings = load_settings(path, environ={})
    assert settings.lesson == dataclasses.replace(lesson, batch=4)
    assert provenance.settings_sha256(settings) != provenance.settings_sha256(defaults)
