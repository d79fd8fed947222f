"""Settings: defaults, overrides, precedence, and errors that name the bad value and its source."""

from __future__ import annotations

import pytest

from autograder.config import ConfigError, load_settings
from tests.helpers import BIN, REFERENCE, run


def test_defaults_cover_every_check():
    """The shipped defaults give points to every hidden check, and tolerances to every dtype."""
    settings = load_settings(environ={})
    assert settings.source == "defaults"
    assert settings.points["sdpa_matches_torch"] > 0
    assert settings.tolerance("float16") == (3e-2, 3e-2)
    assert settings.tolerance("float64") == (1e-5, 1e-5)  # float32-level rounding of correct math passes (docs/grading.md)


def test_file_overrides_only_what_it_names(tmp_path):
    """A config file changes the keys it sets and keeps the rest."""
    path = tmp_path / "course.toml"
    path.write_text("[points]\nsdpa_gradients = 10\n")
    settings = load_settings(path, environ={})
    assert settings.points["sdpa_gradients"] == 10
    assert settings.points["sdpa_causal"] == 3


def test_command_line_beats_environment(tmp_path):
    """--config wins over SDPA_GRADE_CONFIG, which wins over the defaults."""
    env_file, cli_file = tmp_path / "env.toml", tmp_path / "cli.toml"
    env_file.write_text("[timing]\nbudget = 7\n")
    cli_file.write_text("[timing]\nbudget = 9\n")
    assert load_settings(None, environ={"SDPA_GRADE_CONFIG": str(env_file)})["timing"]["budget"] == 7
    assert load_settings(cli_file, environ={"SDPA_GRADE_CONFIG": str(env_file)})["timing"]["budget"] == 9


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
    assert settings["timing"]["retries"] == 0 and settings.points["scores_shape"] == 1.5


def test_cli_refuses_bad_settings_before_running_student_code(tmp_path):
    """sdpa-grade exits 2 with the message, and grades nothing."""
    path = tmp_path / "bad.toml"
    path.write_text("[limits]\nmemory_mb = 'lots'\n")
    result = run([str(BIN / "sdpa-grade"), str(REFERENCE), "--config", str(path)])
    assert result.returncode == 2
    assert "Invalid limits.memory_mb 'lots'" in result.stderr
    assert "check" not in result.stdout
