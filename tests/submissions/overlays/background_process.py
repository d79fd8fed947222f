import os
import subprocess
import time


def _linger(name):
    """Stay alive, doing nothing (where no program may be run), named ``name`` where /proc/self/comm may be written
    (the sandbox refuses that, and ctypes' prctl, so there it keeps the worker's name)."""
    try:
        os.write(os.open("/proc/self/comm", os.O_WRONLY), name)
    except OSError:
        pass
    while True:
        time.sleep(1)


# a child in its own session, and a daemon whose parent exits at once: neither may outlive grading
try:
    subprocess.Popen(["sleep", "987654"], start_new_session=True)
except OSError:  # running programs is refused: the same child, forked
    if os.fork() == 0:
        os.setsid()
        _linger(b"sleep987654")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        try:
            os.execvp("sleep", ["sleep", "987655"])
        except OSError:
            _linger(b"sleep987655")
    os._exit(0)
