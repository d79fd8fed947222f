"""A one-node Slurm cluster for the tests: munged, slurmctld and slurmd of this machine, all state in one folder.

It uses Debian's slurm-wlm and munge (``.ci/install-slurm``) but none of their services or files:
its own munge key and socket, its own ports, spool, logs and pid files, so it starts beside
anything else on the machine and leaves nothing behind. The node is this machine as it is: its
host name, its CPUs and its memory, as slurmd would find them. The daemons run in the
foreground, children of the test process, so that stopping them never depends on a pid file.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo")
FINISHED = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
)


class ClusterError(RuntimeError):
    """The cluster did not start, or a job did not end in time: the test environment's failure, with the logs' tail."""


def missing_programs() -> list[str]:
    """The programs the cluster needs that are not installed (``.ci/install-slurm`` installs them)."""
    return [name for name in DAEMONS if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]


def _program(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for each in sockets:
            each.bind(("127.0.0.1", 0))
        return [each.getsockname()[1] for each in sockets]
    finally:
        for each in sockets:
            each.close()


def _memory_mib() -> int:
    """RealMemory as slurmd measures it (physical pages), so that the node is not drained for 'low RealMemory'."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20


def slurm_conf(folder: Path, host: str, cpus: int, memory_mib: int, ports: list[int]) -> str:
    """A slurm.conf for one node, this machine, with every path in ``folder``: no cgroups, no accounting."""
    return f"""\
ClusterName=sdpa-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder}/munge.socket
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mib} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class Cluster:
    """A running one-node cluster; ``env`` is the environment its commands (sbatch, squeue, ...) need."""

    def __init__(self) -> None:
        # munged wants every folder on its socket's path searchable by all (a pytest tmp folder is not)
        self.folder = Path(tempfile.mkdtemp(prefix="sdpa-slurm-"))
        self.folder.chmod(0o755)
        self.host = socket.gethostname().split(".")[0]
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
        self.env["SLURM_CONF"] = str(self.folder / "slurm.conf")
        self.daemons: list[subprocess.Popen] = []

    def start(self, timeout: float = 60) -> None:
        """Start munged, slurmctld and slurmd, and wait until the node takes jobs (ClusterError if not)."""
        (self.folder / "state").mkdir()
        (self.folder / "spool").mkdir()
        key = self.folder / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (self.folder / "slurm.conf").write_text(
            slurm_conf(self.folder, self.host, os.cpu_count() or 1, _memory_mib(), _free_ports(2))
        )
        socket_path = self.folder / "munge.socket"
        self._daemon(
            "munged",
            "--foreground",
            f"--socket={socket_path}",
            f"--key-file={key}",
            f"--log-file={self.folder}/munged.log",
            f"--pid-file={self.folder}/munged.pid",
            f"--seed-file={self.folder}/munged.seed",
        )
        self.wait_for(lambda: socket_path.exists(), timeout, "munged made no socket")
        self._daemon("slurmctld", "-D")
        self._daemon("slurmd", "-D")
        self.wait_for(lambda: self.node_state() == "idle", timeout, "the node is not idle")

    def _daemon(self, name: str, *args: str) -> None:
        with open(self.folder / f"{name}.out", "wb") as log:
            self.daemons.append(
                subprocess.Popen(
                    [_program(name), *args],
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            )

    def wait_for(self, ready, timeout: float, what: str) -> None:
        """Poll ``ready()`` until it holds; ClusterError (with the logs) after ``timeout`` or when a daemon died."""
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [p.args[0] for p in self.daemons if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise ClusterError(f"{what} after {timeout:.0f} s{f' ({dead} exited)' if dead else ''}:\n{self.logs()}")
            time.sleep(0.2)

    def logs(self, lines: int = 15) -> str:
        """The last lines of every daemon's log, to show why the cluster failed."""
        tails = []
        for path in sorted(self.folder.glob("*.log")) + sorted(self.folder.glob("*.out")):
            tails.append(f"--- {path.name}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(tails)

    def node_state(self) -> str:
        found = self.command("sinfo", "--noheader", "--Node", "--format=%T", check=False)
        return found.stdout.strip()

    def command(
        self, *args: str, cwd: Path | None = None, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess:
        """Run a Slurm command (sbatch, squeue, ...) against this cluster."""
        done = subprocess.run(
            list(args), check=False, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(args)} exited {done.returncode}: {done.stderr}")
        return done

    def jobs(self, job: str) -> dict[str, dict[str, str]]:
        """Every job of ``job`` (an array's tasks too, '<array>_<task>'),
        with scontrol's fields (JobState, Reason, ...)."""
        shown = self.command("scontrol", "--oneliner", "show", "job", job, check=False)
        found = {}
        for line in shown.stdout.splitlines():
            fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
            if "ArrayTaskId" in fields:
                found[f"{fields['ArrayJobId']}_{fields['ArrayTaskId']}"] = fields
            elif "JobId" in fields:
                found[fields["JobId"]] = fields
        return found

    def wait(self, *jobs: str, timeout: float) -> dict[str, dict[str, str]]:
        """Wait until every job of ``jobs`` has ended, or waits for a dependency that can never be met."""
        deadline = time.monotonic() + timeout
        while True:
            found = {name: fields for job in jobs for name, fields in self.jobs(job).items()}
            if found and all(
                fields["JobState"] in FINISHED or fields.get("Reason") == "DependencyNeverSatisfied"
                for fields in found.values()
            ):
                return found
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"jobs {', '.join(jobs)} not done after {timeout:.0f} s: "
                    f"{ {n: f['JobState'] for n, f in found.items()} }\n{self.logs()}"
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 30) -> None:
        """Cancel every job, then stop the daemons (SIGTERM, then SIGKILL) and remove the folder."""
        if self.daemons and all(p.poll() is None for p in self.daemons):
            try:
                self.command("scancel", "--full", f"--user={os.getuid()}", check=False, timeout=timeout)
                deadline = time.monotonic() + timeout
                while self.command("squeue", "--noheader", check=False, timeout=timeout).stdout.strip():
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.5)
            except subprocess.TimeoutExpired:
                pass
        for process in reversed(self.daemons):
            process.terminate()
        for process in reversed(self.daemons):
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        shutil.rmtree(self.folder, ignore_errors=True)
