"""Private files wherever they are: 0600 files and 0700 folders in any folder, whatever the umask.

Everything the index, the catalog, locks, question sets and ``.langgraph_api/`` write holds
note text, questions or answers. The tests run as root, whom permission bits do not stop:
they assert the mode bits. Each runs with the usual umask (022), which made the files 0644.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from app.cli.main import main
from app.evaluation import questions
from app.serving import dev
from graph.errors import ConfigError
from graph.index.ingest import LoadOptions, load_notes
from graph.index.locks import file_lock
from graph.index.private import private_umask
from graph.index.vectorstore import forget_clients, make_index_private, mark_written
from tests.fakes import FakeModels


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def loose(folder: Path, *, but: tuple[Path, ...] = ()) -> list[str]:
    """What in ``folder`` (itself included) others may read: a folder not 0700, a file not 0600."""
    found = []
    for path in [folder, *folder.rglob("*")]:
        if path in but or path.is_symlink():
            continue
        wanted = 0o700 if path.is_dir() else 0o600
        if mode(path) != wanted:
            found.append(f"{path.relative_to(folder)} {oct(mode(path))}")
    return found


@pytest.fixture(autouse=True)
def _permissive_umask():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def load(notes, *flags) -> None:
    argv = ["load", "-f", str(notes), "-e", "fake-embed", *flags]
    assert main(argv, models=FakeModels()) == 0


@pytest.mark.parametrize("named", [True, False], ids=["shared-folder-named", "default-folder"])
def test_an_index_is_private_in_a_shared_folder_the_user_names_and_in_the_default(
    tmp_path, sample_notes, capsys, named
):
    if named:
        index = tmp_path / "shared"
        index.mkdir(mode=0o755)  # a folder others may list and read in
        load(sample_notes, "--persist-dir", str(index))
    else:
        load(sample_notes)
        index = tmp_path / "xdg-data" / "notes-rag" / "chroma"
    names = {p.name for p in index.iterdir()}
    assert {"chroma.sqlite3", "catalog", ".open.lock", ".notes.lock", ".written"} <= names
    assert any(p.is_dir() and len(p.name) == 36 for p in index.iterdir())  # a segment folder
    assert loose(index) == []
    assert os.umask(0o022) == 0o022  # the process's umask is as it was


def test_what_else_the_named_folder_holds_is_left_alone(tmp_path, sample_notes, capsys):
    index = tmp_path / "shared"
    index.mkdir(mode=0o755)
    readme = index / "README.txt"
    readme.write_text("what this folder is for")
    outside = tmp_path / "outside.txt"
    outside.write_text("not the index's")
    (index / "chroma.sqlite3-wal").symlink_to(outside)  # an index name, but a link
    load(sample_notes, "--persist-dir", str(index))
    assert mode(readme) == 0o644 and mode(outside) == 0o644  # not followed, not changed
    assert loose(index, but=(readme,)) == []


def test_what_a_load_writes_is_private_while_it_writes(ctx, notes_copy, models):
    index = Path(ctx.chroma_persist_directory)
    index.mkdir(mode=0o755)
    seen = []

    def progress(done, total):
        if done:  # a batch is stored: Chroma's vectors are on disk
            seen.append(loose(index))

    load_notes(ctx, notes_copy, models.embedder, LoadOptions(batch_size=4), progress=progress)
    segments = [p for p in index.iterdir() if p.is_dir() and len(p.name) == 36]
    assert len(seen) > 1 and segments and any(segments[0].iterdir())
    assert seen == [[]] * len(seen)


@pytest.mark.parametrize("command", ["query", "load"])
def test_an_index_written_by_an_earlier_version_is_made_private_when_opened(
    tmp_path, sample_notes, capsys, command
):
    index = tmp_path / "shared"
    load(sample_notes, "--persist-dir", str(index))
    for path in [index, *index.rglob("*")]:  # as an earlier version left it
        path.chmod(0o755 if path.is_dir() else 0o644)
    forget_clients()  # a new process
    if command == "load":
        load(sample_notes, "--persist-dir", str(index))  # nothing to load: only opened
        assert "5 unchanged" in capsys.readouterr().out
    else:
        argv = ["query", "-q", "sourdough", "-e", "fake-embed", "--persist-dir", str(index)]
        assert main(argv, models=FakeModels()) == 0
    assert loose(index) == []


def test_a_new_index_folder_opened_only_to_read_is_private(tmp_path, capsys):
    index = tmp_path / "new"
    assert main(["collections", "--persist-dir", str(index)], models=FakeModels()) == 0
    assert "chroma.sqlite3" in {p.name for p in index.iterdir()}  # Chroma made its tables
    assert loose(index) == []


def test_a_catalog_rebuilt_by_a_question_is_private(tmp_path, sample_notes, capsys):
    index = tmp_path / "shared"
    load(sample_notes, "--persist-dir", str(index))
    for catalog in (index / "catalog").iterdir():
        catalog.unlink()  # read again from the collection by the next search
    argv = ["query", "-q", "sourdough", "-e", "fake-embed", "--persist-dir", str(index)]
    assert main(argv, models=FakeModels()) == 0  # the same process: no re-open of the index
    rebuilt = list((index / "catalog").iterdir())
    assert [p.suffix for p in rebuilt] == [".sqlite3"] and mode(rebuilt[0]) == 0o600


def test_the_write_marker_is_private_outside_a_load(ctx):
    Path(ctx.chroma_persist_directory).mkdir(mode=0o700)
    mark_written(ctx)
    assert mode(Path(ctx.chroma_persist_directory) / ".written") == 0o600


def test_a_lock_file_is_private_and_never_a_link_followed(tmp_path):
    lock = tmp_path / "locks" / "a.lock"
    with file_lock(lock):
        pass
    assert mode(lock) == 0o600 and mode(lock.parent) == 0o700
    lock.chmod(0o644)  # as an earlier version left it
    with file_lock(lock):
        pass
    assert mode(lock) == 0o600
    target = tmp_path / "target"
    target.write_text("kept")
    target.chmod(0o644)
    planted = tmp_path / "locks" / "b.lock"
    planted.symlink_to(target)
    with pytest.raises(OSError), file_lock(planted):
        pass
    assert target.read_text() == "kept" and mode(target) == 0o644


def test_tightening_never_follows_a_link_and_leaves_a_file_where_a_folder_is_named(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (outside / "theirs").write_text("x")
    (outside / "theirs").chmod(0o644)
    index = tmp_path / "index"
    index.mkdir(mode=0o755)
    (index / "catalog").symlink_to(outside)
    make_index_private(index)
    assert mode(index) == 0o700
    assert (mode(outside), mode(outside / "theirs")) == (0o755, 0o644)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    blocker.chmod(0o644)
    with pytest.raises(NotADirectoryError):
        make_index_private(blocker)
    assert mode(blocker) == 0o644


def test_a_private_umask_held_by_two_threads_lasts_until_both_leave(tmp_path):
    first_in, second_in, first_out, done = (threading.Event() for _ in range(4))
    made = {}

    def first():
        with private_umask():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with private_umask():
            second_in.set()
            first_out.wait(10)
            made["file"] = tmp_path / "made-after-the-first-left"
            made["file"].write_text("an answer")  # as Chroma or SQLite creates a file
        done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert done.is_set() and mode(made["file"]) == 0o600
    assert os.umask(0o022) == 0o022  # restored when the last one left


def test_a_question_set_and_its_partial_copy_are_private(tmp_path, monkeypatch):
    out = tmp_path / "new" / "sets" / "mine.json"
    questions.check_writable(out)
    assert mode(out.parent) == 0o700 and mode(out.parent.parent) == 0o700
    seen = {}
    real_link = questions.os.link

    def link(source, target):
        seen["partial"] = mode(source)
        return real_link(source, target)

    monkeypatch.setattr(questions.os, "link", link)
    questions.write_new(out, {"questions": [1]})
    assert seen == {"partial": 0o600} and mode(out) == 0o600

    def no_links(source, target):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(questions.os, "link", no_links)
    other = tmp_path / "other.json"
    questions.write_new(other, {"questions": [2]})  # created directly, without a link
    assert mode(other) == 0o600 and json.loads(other.read_text()) == {"questions": [2]}


def test_a_link_planted_at_the_partial_path_is_never_written_through(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("kept")
    out = tmp_path / "set.json"
    partial = tmp_path / ".set.json.partial"
    partial.symlink_to(target)
    refusal = f"{partial} is a symbolic link: remove it (a set is never written through one)"
    with pytest.raises(ConfigError) as refused:
        questions.check_writable(out)
    assert str(refused.value) == refusal
    with pytest.raises(ConfigError) as refused:
        questions.write_new(out, {"questions": [1]})
    assert str(refused.value) == refusal
    assert target.read_text() == "kept" and partial.is_symlink() and not out.exists()
    linked_out = tmp_path / "linked.json"
    linked_out.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(ConfigError, match="linked.json exists: remove it"):
        questions.check_writable(linked_out)
    dangling = tmp_path / ".dangling.json.partial"
    dangling.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(ConfigError, match="is a symbolic link"):
        questions.write_new(tmp_path / "dangling.json", {"questions": [1]})
    assert not (tmp_path / "would-be-created").exists()


def test_the_dev_server_folder_and_what_an_earlier_start_left_in_it_are_private(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    state = tmp_path / ".langgraph_api"
    (state / "sub").mkdir(parents=True, mode=0o755)
    state.chmod(0o755)
    for name in (".langgraph_ops.pckl", "store.pckl", "sub/checkpoint.pckl", dev.DEV_CONFIG):
        (state / name).write_text("threads, answers")
        (state / name).chmod(0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("not the server's")
    (state / "linked.pckl").symlink_to(outside)
    started = []
    monkeypatch.setattr(dev.os, "execve", lambda *a: started.append(a))
    monkeypatch.setattr(dev.os, "umask", lambda mask: started.append(("umask", mask)))
    assert dev.main(["--env-file", str(tmp_path / "none.env")]) == 0
    assert started[0] == ("umask", 0o077) and len(started) == 2  # then langgraph dev
    assert loose(state) == []
    assert json.loads((state / dev.DEV_CONFIG).read_text())["env"] == {}
    assert mode(outside) == 0o644 and outside.read_text() == "not the server's"


def test_the_dev_config_is_never_written_through_a_link(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".langgraph_api").mkdir(mode=0o700)
    target = tmp_path / "elsewhere.json"
    target.write_text("kept")
    (tmp_path / ".langgraph_api" / dev.DEV_CONFIG).symlink_to(target)
    monkeypatch.setattr(dev.os, "execve", lambda *a: None)
    monkeypatch.setattr(dev.os, "umask", lambda mask: None)
    with pytest.raises(OSError):
        dev.main(["--env-file", str(tmp_path / "none.env")])
    assert target.read_text() == "kept"
