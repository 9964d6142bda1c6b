"""dashboard.state.read_upload: an uploaded file is read once, a reading that a page switch
abandoned is taken over, and a file removed and chosen again is read again (issue 21 item 2).

The session state is a plain dict here; tests/e2e/test_upload_interrupted_browser.py runs the
same bookkeeping in Chromium with a real page switch.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from dashboard import state

KEYS = {"tried": "tried", "error": "error", "reading": "reading"}


@pytest.fixture
def ss(monkeypatch):
    session: dict = {}
    monkeypatch.setattr(state.st, "session_state", session)
    return session


def choose(ss, file_id: str | None) -> None:
    """The uploader holds ``file_id`` (None: the file was removed)."""
    ss["upload"] = None if file_id is None else SimpleNamespace(file_id=file_id, name="big.csv")


class Reader:
    """A read that records the files it was given and returns ``result``."""

    def __init__(self, result=("dataset", None)):
        self.result = result
        self.files: list[str] = []

    def __call__(self, upload):
        self.files.append(upload.file_id)
        return self.result


def test_a_file_is_read_once(ss):
    read = Reader()
    choose(ss, "f1")
    assert state.read_upload("upload", read, **KEYS) == "dataset"
    assert state.read_upload("upload", read, **KEYS) is None   # nothing new
    assert read.files == ["f1"]
    assert "reading" not in ss


def test_a_reading_left_by_an_abandoned_run_is_taken_over(ss):
    """The run that began reading was stopped by a page switch: it reads on, off the session
    state; the next run waits for it and stores its result rather than losing the file."""
    choose(ss, "f1")
    left = state.UploadReading("f1")
    ss["reading"] = left
    finish = threading.Timer(0.2, left.run, args=(lambda upload: ("theirs", None), None))
    finish.start()
    read = Reader(("ours", None))
    assert state.read_upload("upload", read, **KEYS) == "theirs"
    finish.join()
    assert read.files == []                     # not read twice
    assert ss["tried"] == "f1" and "reading" not in ss


def test_a_reading_of_another_file_is_not_taken(ss):
    choose(ss, "f2")
    ss["reading"] = state.UploadReading("f1")   # never finishes: must not be waited for
    assert state.read_upload("upload", Reader(), **KEYS) == "dataset"
    assert ss["tried"] == "f2"


def test_a_file_removed_and_chosen_again_is_read_again(ss):
    read = Reader()
    choose(ss, "f1")
    state.read_upload("upload", read, **KEYS)
    choose(ss, None)
    assert state.read_upload("upload", read, **KEYS) is None
    choose(ss, "f1")                            # the same file, even with the same id
    assert state.read_upload("upload", read, **KEYS) == "dataset"
    assert read.files == ["f1", "f1"]


def test_a_failure_is_kept_once_and_cleared_with_the_file(ss):
    read = Reader((None, "Not a table."))
    choose(ss, "f1")
    assert state.read_upload("upload", read, **KEYS) is None
    assert ss["error"] == "Not a table."
    assert state.read_upload("upload", read, **KEYS) is None
    assert read.files == ["f1"]                 # a bad file is not read on every run
    choose(ss, None)
    state.read_upload("upload", read, **KEYS)
    assert "error" not in ss


def test_a_reading_that_raised_leaves_a_message(ss):
    """A reading cut short by an exception the read does not turn into a message: the run
    that waited for it says so, rather than showing nothing."""
    choose(ss, "f1")
    left = state.UploadReading("f1")
    ss["reading"] = left

    def broken(upload):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        left.run(broken, None)
    assert state.read_upload("upload", Reader(), **KEYS) is None
    assert "upload it again" in ss["error"]
