"""The scratch folder is deleted whatever a student left in it."""

from __future__ import annotations

import os
import socket

from autograder.sandbox.cleanup import remove_tree


def test_deep_trees_locked_folders_and_odd_files_are_removed(tmp_path):
    """A tree 3000 deep, mode-000 folders, a socket, a fifo and a link out: all gone, the link's target kept."""
    scratch = tmp_path / "scratch"
    deep = scratch
    os.makedirs(scratch)
    fd = os.open(scratch, os.O_RDONLY)
    for _ in range(3000):  # deeper than Python's recursion limit
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(fd)
    locked = scratch / "locked" / "inner"
    locked.mkdir(parents=True)
    (locked / "file").write_text("x")
    locked.chmod(0o000)
    (scratch / "locked").chmod(0o000)
    os.mkfifo(scratch / "fifo")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(scratch / "sock"))
    outside = tmp_path / "keep.txt"
    outside.write_text("kept")
    (scratch / "link").symlink_to(outside)
    tmp_path.chmod(0o755)
    remove_tree(scratch)
    assert not deep.exists() and outside.read_text() == "kept"
    assert tmp_path.stat().st_mode & 0o777 == 0o755  # nothing above the folder is touched
    remove_tree(tmp_path / "missing")  # a folder already gone: no error, and its parent untouched
    assert tmp_path.stat().st_mode & 0o777 == 0o755
