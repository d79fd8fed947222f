"""The seccomp filter libseccomp builds decides every system call as the hand-made x86-64 one does.

Both are run, for every system call number and for the arguments the policy looks at, by a small
classic-BPF interpreter written from the kernel's rules (below); the interpreter itself is checked
against the kernel, in a child that installs each filter and makes the refused calls for real.
"""

from __future__ import annotations

import ctypes.util
import errno
import json
import os
import platform
import struct
import subprocess
import sys

import pytest

from autograder.sandbox import seccomp_policy
from autograder.sandbox.processes import NOBODY
from tests.helpers import ROOT

X86_64 = platform.machine() in ("x86_64", "AMD64")
HAS_LIBSECCOMP = ctypes.util.find_library("seccomp") is not None
needs_both = pytest.mark.skipif(not (X86_64 and HAS_LIBSECCOMP), reason="needs x86-64 and libseccomp")

AUDIT_X86_64, AUDIT_I386, AUDIT_AARCH64 = 0xC000003E, 0x40000003, 0xC00000B7
ALLOW, KILL_PROCESS, ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
X32 = 0x40000000


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = (0,) * 6) -> int:
    """What one classic-BPF seccomp program returns for this struct seccomp_data (the kernel's interpreter, for the
    instructions seccomp allows; anything else fails the test)."""
    data = struct.pack("=IIQ6Q", nr & 0xFFFFFFFF, arch, 0, *[a & (1 << 64) - 1 for a in (*args, 0, 0, 0, 0, 0, 0)[:6]])
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    a = x = pc = 0
    memory = [0] * 16
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        kind, source = op & 0x07, op & 0x08
        if op == 0x20:  # ld [k] (a 32-bit word of seccomp_data)
            a = struct.unpack_from("=I", data, k)[0]
        elif op == 0x00:  # ld #k
            a = k
        elif op == 0x01:  # ldx #k
            x = k
        elif op == 0x60:  # ld M[k]
            a = memory[k]
        elif op == 0x61:  # ldx M[k]
            x = memory[k]
        elif op == 0x02:  # st M[k]
            memory[k] = a
        elif op == 0x03:  # stx M[k]
            memory[k] = x
        elif op == 0x07:  # tax
            x = a
        elif op == 0x87:  # txa
            a = x
        elif kind == 0x04:  # alu
            value = x if source else k
            alu = {0x00: a + value, 0x10: a - value, 0x40: a | value, 0x50: a & value, 0xA0: a ^ value}
            alu |= {0x60: a << value if value < 32 else 0, 0x70: a >> value if value < 32 else 0, 0x80: -a}
            a = alu[op & 0xF0] & 0xFFFFFFFF
        elif kind == 0x05:  # jmp
            value = x if source else k
            if op & 0xF0 == 0x00:  # ja
                pc += k
                continue
            taken = {0x10: a == value, 0x20: a > value, 0x30: a >= value, 0x40: bool(a & value)}[op & 0xF0]
            pc += jt if taken else jf
        elif op == 0x06:  # ret #k
            return k
        elif op == 0x16:  # ret a
            return a
        else:
            raise AssertionError(f"instruction {op:#x} at {pc - 1}: not one this interpreter knows")


def decide(programs: tuple[bytes, ...], nr: int, arch: int, args: tuple[int, ...] = (0,) * 6) -> int:
    """Every installed filter runs; the kernel takes the strictest action (the smallest action, as a signed number;
    of two alike, the later filter's)."""
    results = [run_bpf(program, nr, arch, args) for program in reversed(programs)]
    signed = lambda r: struct.unpack("=i", struct.pack("=I", r & 0xFFFF0000))[0]  # noqa: E731
    return min(results, key=signed)


SOCKET_DOMAINS = [0, 1, 2, 10, 16, 40, 46, 1 | 1 << 32, 2 | 1 << 32, 0xFFFFFFFF, 1 << 31 | 1, (1 << 64) - 1]
IOCTL_REQUESTS = [0, 0x5412, 0x541C, 0x5413, 0x5412 | 1 << 32, 0x541C | 0xFFFFFFFF << 32, 0x80045412, 0x5401]
CLONE_FLAGS = [0, 17, 0x10F00 | 17, 1 << 32, 0x00020000 | 1 << 40, *seccomp_policy.NAMESPACE_FLAGS, 0xFFFFFFFF]
ANY_ARGS = [(0,) * 6, ((1 << 64) - 1,) * 6, (1, 0x5412, 2, 3, 4, 5)]


def cases() -> list[tuple[int, int, tuple[int, ...]]]:
    """(number, architecture, arguments): every number of the x86-64 table and beyond, of x86-64's two ABIs and two
    foreign architectures, with the arguments the policy tests for the calls it looks into."""
    found = []
    numbers = [*range(0, 600), 0xFFFFFFFF, 0x7FFFFFFF]
    for arch in (AUDIT_X86_64, AUDIT_I386, AUDIT_AARCH64):
        for nr in numbers:
            found += [(nr, arch, args) for args in ANY_ARGS]
    found += [(X32 | nr, AUDIT_X86_64, (0,) * 6) for nr in range(0, 600)]
    found += [(nr, AUDIT_X86_64, (domain, 2, 0, 0, 0, 0)) for nr in (41, 53) for domain in SOCKET_DOMAINS]
    found += [(16, AUDIT_X86_64, (0, request, 0, 0, 0, 0)) for request in IOCTL_REQUESTS]
    found += [(56, AUDIT_X86_64, (flags, 0, 0, 0, 0, 0)) for flags in CLONE_FLAGS]
    return found


@pytest.fixture(scope="module")
def filters():
    """(libseccomp's programs or None where it is missing, the hand-made program or None off x86-64)."""
    policy = seccomp_policy.with_libseccomp()[0] if HAS_LIBSECCOMP else None
    return policy, (seccomp_policy.hand_made(),) if X86_64 else None


@needs_both
@pytest.mark.timeout(60)
def test_libseccomp_decides_every_call_as_the_hand_made_filter(filters):
    """For every number (native, x32, foreign) and the arguments the policy reads, both filters give one action."""
    policy, hand = filters
    differ = []
    for nr, arch, args in cases():
        ours, theirs = decide(policy, nr, arch, args), decide(hand, nr, arch, args)
        if ours != theirs:
            differ.append(f"nr {nr:#x} arch {arch:#x} args {args[:2]}: libseccomp {ours:#x}, hand-made {theirs:#x}")
    assert not differ, f"{len(differ)} decisions differ, first: {differ[:5]}"


@needs_both
@pytest.mark.timeout(60)
def test_the_policy_refuses_what_it_says(filters):
    """Both filters refuse the list with EPERM, clone3 with ENOSYS, a TCP socket with EAFNOSUPPORT, another
    architecture with a kill; and allow getpid, an AF_UNIX socket, clone with SIGCHLD."""
    table = seccomp_policy._SYSCALLS_X86_64
    for programs in filters:
        for name in seccomp_policy.DENIED:
            assert decide(programs, table[name], AUDIT_X86_64) == ERRNO | errno.EPERM, name
        assert decide(programs, 435, AUDIT_X86_64) == ERRNO | errno.ENOSYS
        assert decide(programs, 41, AUDIT_X86_64, (2, 1, 0, 0, 0, 0)) == ERRNO | errno.EAFNOSUPPORT
        assert decide(programs, 41, AUDIT_X86_64, (1, 1, 0, 0, 0, 0)) == ALLOW
        assert decide(programs, 16, AUDIT_X86_64, (0, 0x5412, 0, 0, 0, 0)) == ERRNO | errno.EPERM
        assert decide(programs, 56, AUDIT_X86_64, (0x10000000 | 17, 0, 0, 0, 0, 0)) == ERRNO | errno.EPERM
        assert decide(programs, 56, AUDIT_X86_64, (17, 0, 0, 0, 0, 0)) == ALLOW
        assert decide(programs, 39, AUDIT_X86_64) == ALLOW
        assert decide(programs, X32 | 39, AUDIT_X86_64) == ERRNO | errno.EPERM
        assert decide(programs, 20, AUDIT_I386) == KILL_PROCESS


@pytest.mark.skipif(not HAS_LIBSECCOMP, reason="no libseccomp here")
@pytest.mark.timeout(30)
def test_every_name_of_the_list_is_known_for_this_architecture():
    """libseccomp (or, for a call newer than it, the kernel's shared numbering) names every call; on x86-64 each
    number is the hand-made table's."""
    lib = seccomp_policy._library()
    for name in (*seccomp_policy.DENIED, *seccomp_policy.NO_SUCH_CALL, "socket", "socketpair", "ioctl", "clone"):
        found = lib.seccomp_syscall_resolve_name(name.encode())
        if found == -1:
            assert name in seccomp_policy.UNIFIED, f"libseccomp does not know {name}, nor does UNIFIED"
            found = seccomp_policy.UNIFIED[name]
        if X86_64:
            assert found == seccomp_policy._SYSCALLS_X86_64[name], name


KERNEL_PROBE = """
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
import seccomp
programs = [bytes.fromhex(p) for p in json.loads(sys.stdin.read())]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
if int(sys.argv[3]) >= 0:  # become this user first (as the worker does, after importing torch)
    os.setgroups([])
    os.setresgid(int(sys.argv[3]), int(sys.argv[3]), int(sys.argv[3]))
    os.setresuid(int(sys.argv[3]), int(sys.argv[3]), int(sys.argv[3]))
seccomp.install(programs)
found = {}
for label, nr, args in json.loads(sys.argv[2]):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a) for a in args])
    found[label] = ctypes.get_errno() if result == -1 else 0
print(json.dumps({**found, "uid": os.getuid()}))
"""

# calls the filters refuse, with arguments that would do nothing harmful were they let through
KERNEL_CALLS = [
    ("execve NULL", 59, [0, 0, 0]),
    ("keyctl", 250, [0xFFFF, 0, 0]),
    ("unshare 0", 272, [0]),
    ("chmod NULL", 90, [0, 0]),
    ("setxattrat -1", 463, [2**64 - 1, 0, 0, 0, 0, 0]),
    ("socket AF_INET", 41, [2, 2, 0]),
    ("socket AF_NETLINK", 41, [16, 2, 0]),
    ("ioctl -1 TIOCSTI", 16, [2**64 - 1, 0x5412, 0]),
    ("clone3 NULL", 435, [0, 0]),
    ("x32 getpid", X32 | 39, []),
    ("no call (-1)", 2**64 - 1, []),
    ("getpid", 39, []),
    ("socket AF_UNIX", 41, [1, 1, 0]),
]


@pytest.mark.skipif(not X86_64, reason="the probe's numbers are x86-64's")
@pytest.mark.parametrize("who", ["grader", "unprivileged"])
@pytest.mark.parametrize("source", ["libseccomp", "hand-made"])
@pytest.mark.timeout(60)
def test_the_interpreter_agrees_with_the_kernel(filters, source, who):
    """A child installs the filter (as the worker does, as the grader's user or as nobody) and makes each call:
    the errno is the interpreter's."""
    if source == "libseccomp" and not HAS_LIBSECCOMP:
        pytest.skip("no libseccomp here")
    if who == "unprivileged" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root: the grader's user is unprivileged already")
    become = str(NOBODY if who == "unprivileged" else -1)
    programs = filters[0] if source == "libseccomp" else filters[1]
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            KERNEL_PROBE,
            str(ROOT / "autograder" / "sandbox" / "student_side"),
            json.dumps(KERNEL_CALLS),
            become,
        ],
        input=json.dumps([p.hex() for p in programs]),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["uid"] == (NOBODY if who == "unprivileged" else os.getuid())
    for label, nr, args in KERNEL_CALLS:
        action = decide(programs, nr & 0xFFFFFFFF, AUDIT_X86_64, tuple(args) + (0,) * (6 - len(args)))
        expected = action & 0xFFFF if action & 0xFFFF0000 == ERRNO else None
        if expected is None:  # allowed: the kernel ran it, and these succeed
            assert found[label] == 0, (label, found[label])
        else:
            assert found[label] == expected, (label, errno.errorcode.get(found[label]), errno.errorcode[expected])


@pytest.mark.timeout(30)
def test_the_fallback_is_used_where_forced_or_where_libseccomp_is_missing(monkeypatch):
    """SDPA_SECCOMP=hand-made, or no libseccomp: the hand-made program (on x86-64; elsewhere none), and the report
    says which and why; another value is refused."""
    monkeypatch.setenv(seccomp_policy.FORCE, "hand-made")
    forced = seccomp_policy.build()
    assert "SDPA_SECCOMP=hand-made" in forced.built
    monkeypatch.delenv(seccomp_policy.FORCE)
    monkeypatch.setattr(seccomp_policy.ctypes.util, "find_library", lambda name: None)
    missing = seccomp_policy.build()
    assert "libseccomp not found" in missing.built
    for chosen in (forced, missing):
        if X86_64:
            assert chosen.programs == (seccomp_policy.hand_made(),) and chosen.built.startswith("hand-made, x86-64")
        else:
            assert chosen.programs == () and "no system call table" in chosen.built
    monkeypatch.setenv(seccomp_policy.FORCE, "handmade")
    with pytest.raises(ValueError, match="SDPA_SECCOMP=handmade: expected hand-made"):
        seccomp_policy.build()


@pytest.mark.skipif(not HAS_LIBSECCOMP, reason="no libseccomp here")
@pytest.mark.timeout(30)
def test_libseccomp_is_used_where_found(monkeypatch):
    """Where libseccomp is found, the filter is its own (two programs: the policy and the architecture guard)."""
    monkeypatch.delenv(seccomp_policy.FORCE, raising=False)
    built = seccomp_policy.build()
    assert built.built.startswith("libseccomp ") and len(built.programs) == 2
