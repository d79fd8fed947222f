"""What the worker said of its own confinement, read before any student code ran: which mechanisms held."""

from __future__ import annotations

import socket
import time

from autograder.sandbox.student_side import wire

MECHANISMS = ("namespaces", "landlock", "seccomp")
LIMITS = "cgroups"  # memory and processes of the whole submission; where missing, per-process limits only


class SandboxMissing(RuntimeError):
    """The sandbox could not be built on this machine, and the settings require it."""


def confinement(conn: socket.socket, timeout: float) -> dict[str, str]:
    """The worker's first message: mechanism -> what held, or ``missing (why)``."""
    conn.settimeout(timeout)
    try:
        message = wire.receive(conn, deadline=time.monotonic() + timeout)  # all of it, not each read
    except (EOFError, OSError, wire.WireError) as error:
        return {name: f"missing (the worker did not report: {error})" for name in MECHANISMS}
    finally:
        conn.settimeout(None)
    report = message.get("sandbox") if isinstance(message, dict) else None
    if not isinstance(report, dict):
        return {name: "missing (no report)" for name in MECHANISMS}
    if "broken" in report:
        raise SandboxMissing(str(report["broken"]))
    return {name: str(report.get(name, "missing (not reported)")) for name in (*MECHANISMS, LIMITS)}


def held(report: dict[str, str]) -> bool:
    """Whether every mechanism held."""
    return all(name in report and not report[name].startswith("missing") for name in MECHANISMS)


def describe(report: dict[str, str]) -> str:
    """One line for the instructor: full sandbox, or which mechanism is missing and why."""
    missing = [f"{name} {report[name]}" for name in MECHANISMS if report.get(name, "missing").startswith("missing")]
    limits = report.get(LIMITS, "missing")
    whole = f"; {limits}" if not limits.startswith("missing") else f"; per-process limits only (cgroups {limits})"
    if not missing:
        return "full sandbox: " + "; ".join(report[name] for name in MECHANISMS) + whole
    return "WEAKER SANDBOX: " + "; ".join(missing) + whole
