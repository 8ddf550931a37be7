"""Plant text into copies of real trajectory files: secrets, prompt injections, a checkout's name.

The copies keep the real session around the planted text (and its SWE-bench report), so
what is tested is the real parse -> render -> prompt path, not a hand-made fixture.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.conftest import SAMPLES

SITEMAPS = SAMPLES / "mini_swe_agent/django__django-16255.traj.json"

#: Fake but well-formed credentials, one per common kind, none of them real.
SECRETS = {
    "openai": "sk-proj-Xq7PzR2mK9vT4wLbN8cJ5hY3fD6gS1aE0uIoPlMnBvCxZ4kQ",
    "aws-key-id": "AKIAQX3PLANTEDKEY7Z2",
    "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEYa9",
    "github": "ghp_PlAnTeD0123456789abcdefABCDEF012345",
    "url-password": "S3cr3t-Plant3d-Pa55",
}


def _copy(source: Path, target_dir: Path) -> tuple[Path, dict]:
    target_dir.mkdir(parents=True, exist_ok=True)
    target = target_dir / source.name
    report = source.with_name(source.name.replace(".traj.json", ".report.json"))
    if report.is_file():
        shutil.copy(report, target_dir / report.name)
    return target, json.loads(source.read_text())


def _message(data: dict, role: str, contains: str) -> int:
    return next(i for i, m in enumerate(data["messages"]) if m["role"] == role and contains in str(m["content"]))


def plant_injection(target_dir: Path, line: str, source: Path = SITEMAPS) -> Path:
    """``line`` inside the output of the first run of the reproduction script (a part that is rendered)."""
    target, data = _copy(source, target_dir)
    call = _message(data, "assistant", "python3 reproduce_issue.py")
    output = data["messages"][call + 1]
    output["content"] = output["content"].replace("Caught expected ValueError", f"{line}\nCaught expected ValueError")
    assert line in output["content"]
    target.write_text(json.dumps(data))
    return target


def plant_secrets(target_dir: Path, source: Path = SITEMAPS) -> tuple[Path, list[str]]:
    """Secrets in the task, in a command the agent ran and in a tool output."""
    target, data = _copy(source, target_dir)
    s = SECRETS
    task = _message(data, "user", "<pr_description>")
    data["messages"][task]["content"] = data["messages"][task]["content"].replace(
        "Description\n", f"Description\nOur CI uses OPENAI_API_KEY={s['openai']} and "
                         f"DATABASE_URL=postgres://admin:{s['url-password']}@db.internal:5432/app\n", 1)
    call = _message(data, "assistant", "python3 reproduce_issue.py")
    data["messages"][call]["content"] = data["messages"][call]["content"].replace(
        "python3 reproduce_issue.py",
        f"AWS_ACCESS_KEY_ID={s['aws-key-id']} AWS_SECRET_ACCESS_KEY={s['aws-secret']} python3 reproduce_issue.py",
        1)
    output = data["messages"][call + 1]
    output["content"] = output["content"].replace(
        "Caught expected ValueError", f"using token {s['github']}\nCaught expected ValueError")
    target.write_text(json.dumps(data))
    return target, list(s.values())


def plant_checkout(target_dir: Path, source: Path, name: str, folder: str = "/Users/user/repo") -> Path:
    """A copy of a session whose checkout folder the public copy anonymised (``/Users/user/repo``),
    with the folder named ``name`` again: the session then has a repository, as it had where it ran."""
    target_dir.mkdir(parents=True, exist_ok=True)
    text = source.read_text()
    renamed = re.sub(re.escape(folder) + r'(?=[/"\\])', f"{folder.rsplit('/', 1)[0]}/{name}", text)
    assert renamed != text
    target = target_dir / source.name
    target.write_text(renamed)
    return target
