import os
import subprocess

# a child in its own session, and a daemon whose parent exits at once: neither may outlive grading
subprocess.Popen(["sleep", "987654"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "987655"])
    os._exit(0)
