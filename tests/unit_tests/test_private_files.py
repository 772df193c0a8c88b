"""Files that hold note text, questions or answers are the user's alone (0700 / 0600).

The tests run as root, whom permission bits do not stop: they assert the mode bits.
"""

from __future__ import annotations

import io
import os
import stat

import pytest

from app.cli.main import main
from app.evaluation.retrieval import merge_folders
from graph.index.paths import cache_folder
from graph.index.private import private_folder
from tests.fakes import FakeModels


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def _permissive_umask():
    """The usual umask (022), which made everything 0755 / 0644 before."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_rag_chat_keeps_its_conversations_and_history_private(
    tmp_path, sample_notes, monkeypatch, capsys
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    data = tmp_path / "xdg-data"  # the conftest's XDG_DATA_HOME: the default index is here
    assert main(["load", "-f", str(sample_notes), "-e", "fake-embed"], models=FakeModels()) == 0
    monkeypatch.setattr("sys.stdin", Tty("How should I prepare for interviews?\n"))
    assert main(["chat", "-t", "work", "--threshold", "0.1"], models=FakeModels()) == 0
    capsys.readouterr()
    assert mode(data / "notes-rag") == 0o700
    assert mode(data / "notes-rag" / "chroma") == 0o700  # the default index: note text
    assert mode(data / "notes-rag" / "chats.sqlite") == 0o600  # questions, answers, notes
    assert mode(tmp_path / "state" / "notes-rag") == 0o700
    assert mode(tmp_path / "state" / "notes-rag" / "chat_history") == 0o600  # the questions


def test_folders_and_files_made_by_earlier_versions_become_private(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    data = tmp_path / "xdg-data" / "notes-rag"
    history = tmp_path / "state" / "notes-rag" / "chat_history"
    for folder in (data, history.parent):
        folder.mkdir(parents=True, mode=0o755)
    (data / "chats.sqlite").touch(mode=0o644)
    history.write_text("an old question\n")
    history.chmod(0o644)
    monkeypatch.setattr("sys.stdin", Tty(""))
    assert main(["chat", "-t", "work"], models=FakeModels()) == 0
    capsys.readouterr()
    assert (mode(data), mode(data / "chats.sqlite")) == (0o700, 0o600)
    assert (mode(history.parent), mode(history)) == (0o700, 0o600)
    assert history.read_text() == "an old question\n"  # kept, only its mode changed


def test_an_index_folder_the_load_creates_is_private(tmp_path, sample_notes):
    index = tmp_path / "new" / "index"
    argv = ["-f", str(sample_notes), "-e", "fake-embed", "--persist-dir", str(index)]
    assert main(["load", *argv], models=FakeModels()) == 0
    assert mode(index) == 0o700 and mode(index.parent) == 0o700
    # the catalog (the notes' words) lives in it
    assert any(path.suffix == ".sqlite3" for path in (index / "catalog").iterdir())


def test_an_existing_index_folder_the_user_named_is_made_private(tmp_path, sample_notes):
    # It holds every chunk's text (test_private_everywhere.py: and its files are 0600).
    index = tmp_path / "shared-index"
    index.mkdir(mode=0o750)
    argv = ["-f", str(sample_notes), "-e", "fake-embed", "--persist-dir", str(index)]
    assert main(["load", *argv], models=FakeModels()) == 0
    assert mode(index) == 0o700


def test_the_cache_holding_copies_of_notes_is_private(tmp_path, sample_notes):
    target = merge_folders([sample_notes], cache_folder() / "eval-notes" / "key")
    assert any(target.rglob("*.md"))
    for folder in (cache_folder(), cache_folder() / "eval-notes", target):
        assert mode(folder) == 0o700, folder


def test_a_private_folder_is_created_0700_whatever_the_umask(tmp_path):
    tmp_path.chmod(0o755)
    os.umask(0)
    made = private_folder(tmp_path / "a" / "b")
    assert mode(made) == 0o700 and mode(made.parent) == 0o700
    assert mode(tmp_path) == 0o755  # an existing folder that is not the project's is left


# --- each piece on its own: private from the moment it exists, and only what is ours ------


def test_a_folder_or_file_is_created_private_not_made_so_afterwards(tmp_path, monkeypatch):
    # With the later chmod and fchmod switched off, the mode at creation is what is left:
    # no moment when another user could open it.
    import graph.index.private as private

    monkeypatch.setattr(private.Path, "chmod", lambda self, mode: None)
    monkeypatch.setattr(private, "_strip", lambda descriptor, status: None)
    folder = private_folder(tmp_path / "a" / "b")
    assert mode(tmp_path / "a") == mode(folder) == 0o700
    assert mode(private.private_file(folder / "marker")) == 0o600
    private.write_private(folder / "text", "x")
    assert mode(folder / "text") == 0o600


def test_text_written_over_a_readable_file_leaves_it_private_and_whole(tmp_path):
    from graph.index.private import write_private

    path = tmp_path / "config.json"
    path.write_text("an older and longer text")
    path.chmod(0o644)
    write_private(path, "Grüße, 20 °C")
    assert mode(path) == 0o600
    assert path.read_bytes() == "Grüße, 20 °C".encode()


def test_an_unset_xdg_folder_means_its_default_under_home(monkeypatch, tmp_path):
    from graph.index.private import app_folder

    monkeypatch.setenv("HOME", str(tmp_path))
    for variable, default in [
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CACHE_HOME", ".cache"),
    ]:
        monkeypatch.delenv(variable, raising=False)
        assert app_folder(variable) == tmp_path / default / "notes-rag"
        monkeypatch.setenv(variable, "  ")
        assert app_folder(variable) == tmp_path / default / "notes-rag"
        monkeypatch.setenv(variable, str(tmp_path / "elsewhere"))
        assert app_folder(variable) == tmp_path / "elsewhere" / "notes-rag"


def test_tightening_what_a_folder_holds_skips_links_and_other_users_entries_only(tmp_path):
    # A link and another user's file sit among the project's files: each is passed over,
    # every other entry is still made private, and the folder itself only when asked.
    from graph.index.private import tighten

    folder = tmp_path / "index"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    for n in range(5):
        (folder / f"a{n}").write_text("x")
    (folder / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "outside").write_text("x")
    (folder / "theirs").write_text("x")
    os.chown(folder / "theirs", 12345, 12345)
    for n in range(5):
        (folder / f"b{n}").write_text("x")
    for entry in [*folder.iterdir(), tmp_path / "outside"]:
        if not entry.is_symlink():
            entry.chmod(0o644)
    tighten(folder)
    assert mode(folder) == 0o755  # not itself
    assert mode(folder / "theirs") == 0o644 and mode(tmp_path / "outside") == 0o644
    assert {mode(folder / f"{p}{n}") for p in "ab" for n in range(5)} == {0o600}
    tighten(folder, itself=True)
    assert mode(folder) == 0o700
