"""Following a server's error log as it is written: woken by the kernel (inotify) on the log's
own writes, not on its neighbours', through a log created or replaced after the watch began."""

from __future__ import annotations

import os
import threading
import time

from catbench.restart.errorlog import FileWake, LogWatcher

LINE = "2026-12-06 20:00:00 0 [Note] InnoDB: Completed initialization of buffer pool\n"


def test_a_write_to_the_file_wakes_and_a_neighbours_does_not(tmp_path):
    log = tmp_path / "error.log"
    wake = FileWake.of(log)
    assert wake is not None, "inotify not available on this Linux"
    try:
        assert wake.wait(0.05) is False                     # nothing written: the timeout
        (tmp_path / "mysqld.pid").write_text("123\n")       # a neighbour in the same folder
        assert wake.wait(0.05) is False
        log.write_text(LINE)                                # created after the watch began
        assert wake.wait(5) is True
        with open(log, "a") as f:
            f.write(LINE)
        assert wake.wait(5) is True
        assert wake.wait(0.05) is False                     # each write wakes once
        threading.Timer(0.1, wake.interrupt).start()
        t0 = time.monotonic()
        assert wake.wait(30) is True and time.monotonic() - t0 < 10
    finally:
        wake.close()


def test_the_watcher_reads_a_log_created_then_replaced_after_it_started(tmp_path):
    log = tmp_path / "error.log"
    with LogWatcher(log) as w:
        assert w._wake is not None                         # woken by the kernel, not polling
        log.write_text(LINE)
        assert w.wait_for("buffer_pool_init", 10) is not None
        new = tmp_path / "error.log.new"
        new.write_text(LINE.replace("20:00:00", "20:00:01") * 2)
        os.replace(new, log)                                # the file replaced under the watcher
        deadline = time.monotonic() + 10
        while len(w.lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(w.lines) >= 2 and w._wake is None            # the watch closed with the watcher
