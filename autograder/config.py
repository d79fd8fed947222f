"""Grading settings: declared once in defaults.toml, resolved and validated in one place.

Precedence, highest first: ``--config FILE`` on the command line, the ``SDPA_GRADE_CONFIG``
environment variable, the defaults shipped beside this file. A file may set any subset of
the keys; each value is validated before any student code runs, and an error names the
bad value and where it came from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

DEFAULTS = Path(__file__).with_name("defaults.toml")
ENV_VAR = "SDPA_GRADE_CONFIG"
CHOICES = {("timing", "when_no_gpu"): ("exclude", "award", "fail")}
ZERO_ALLOWED = {("timing", "retries")}  # no re-measurement is a meaningful choice; no time or memory is not


class ConfigError(ValueError):
    """A setting that cannot be used, with the place it came from."""


@dataclass(frozen=True)
class Settings:
    """The resolved settings: section -> key -> value, and where each file came from."""

    values: dict
    source: str

    def __getitem__(self, section: str) -> dict:
        return self.values[section]

    @property
    def points(self) -> dict[str, float]:
        return self.values["points"]

    def tolerance(self, dtype_name: str, gradient: bool = False, scale: float = 0.0) -> tuple[float, float]:
        """(atol, rtol) for a dtype, widened for gradients.

        ``scale`` is the size of the numbers the compared values are computed from (the largest
        |score| a softmax sees, say): rounding in the dtype the contract accepts for the computation
        grows with it, so ``{dtype}_scale_rtol * scale`` joins atol (logits of size 1e4 carry float32
        errors of order 1e4 x 6e-8, whatever size the weights have).
        """
        table = self.values["tolerance"]
        factor = table["gradient_factor"] if gradient else 1.0
        atol = table[f"{dtype_name}_atol"] + table[f"{dtype_name}_scale_rtol"] * scale
        return atol * factor, table[f"{dtype_name}_rtol"] * factor


def _read(path: Path, where: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} from {where} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} from {where} is not valid TOML: {error}") from None


def _validate(overrides: dict, defaults: dict, where: str) -> None:
    for section, table in overrides.items():
        if section not in defaults or not isinstance(table, dict):
            raise ConfigError(f"unknown section [{section}] in {where}; known: {', '.join(defaults)}")
        for key, value in table.items():
            if key not in defaults[section]:
                raise ConfigError(f"unknown setting {section}.{key} in {where}")
            expected = defaults[section][key]
            label = f"Invalid {section}.{key} {value!r} from {where}"
            if isinstance(expected, str):
                choices = CHOICES.get((section, key), ())
                if value not in choices:
                    raise ConfigError(f"{label}: expected one of {', '.join(choices)}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{label}: expected a number")
            elif isinstance(expected, int) and not isinstance(value, int) and section != "points":
                raise ConfigError(f"{label}: expected a whole number")  # a count: 7.5 rounds cannot be run
            elif value < 0 or (value == 0 and section != "points" and (section, key) not in ZERO_ALLOWED):
                kind = "non-negative" if section == "points" or (section, key) in ZERO_ALLOWED else "positive"
                raise ConfigError(f"{label}: expected a {kind} number")

def load_settings(path: str | Path | None = None, environ: dict | None = None) -> Settings:
    """Resolve the settings: command line file > environment file > defaults."""
    environ = os.environ if environ is None else environ
    defaults = _read(DEFAULTS, "the defaults")
    values = {section: dict(table) for section, table in defaults.items()}
    if path is not None:
        where, chosen = "--config", Path(path)
    elif environ.get(ENV_VAR):
        where, chosen = ENV_VAR, Path(environ[ENV_VAR])
    else:
        return Settings(values, "defaults")
    overrides = _read(chosen, where)
    _validate(overrides, defaults, f"{chosen} ({where})")
    for section, table in overrides.items():
        values[section].update(table)
    return Settings(values, f"{chosen} ({where})")
