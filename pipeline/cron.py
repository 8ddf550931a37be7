"""Cron expressions and time zones, checked with the standard library only.

Below the config: ``config.load`` checks ``[schedule]`` with these without importing the
scheduler (``pipeline.schedule``), which imports Prefect and the flows.
"""

from __future__ import annotations

import contextlib
import os
import re
import zoneinfo
from pathlib import Path

_FIELDS = [("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7)]
_NAMES = {3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
          4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]}
_KEYWORDS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


def check_cron(cron: str) -> str:
    """A five-field cron expression (``0 2 * * *``) or ``@daily``-style keyword, else ``ValueError``.

    Checked field by field so the message says which field is wrong; Prefect's own check
    (croniter) runs again when the deployment is created.
    """
    text = " ".join(cron.split())
    if text.lower() in _KEYWORDS:
        return text
    fields = text.split(" ")
    if len(fields) != 5:
        raise ValueError(f"cron {cron!r} needs 5 fields (minute hour day-of-month month day-of-week), "
                         f"got {len(fields)}; e.g. '0 2 * * *' = every day at 02:00")
    for index, (field, (name, low, high)) in enumerate(zip(fields, _FIELDS, strict=True)):
        for item in field.split(","):
            if not _cron_item(item, low, high, _NAMES.get(index, [])):
                raise ValueError(f"cron {cron!r}: {name} field {field!r} is not valid (allowed: {low}-{high}, "
                                 f"*, lists a,b, ranges a-b, steps */n)")
    return text


def _cron_item(item: str, low: int, high: int, names: list[str]) -> bool:
    match = re.fullmatch(r"(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?", item.lower())
    if not match or (match.group(2) is not None and int(match.group(2)) == 0):
        return False
    if match.group(1) == "*":
        return True
    for part in match.group(1).split("-"):
        value = names.index(part) + (1 if len(names) == 12 else 0) if part in names else (
            int(part) if part.isdigit() else None)
        if value is None or not low <= value <= high:
            return False
    return True


def check_timezone(zone: str) -> str:
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {zone!r}: use an IANA name such as 'Europe/Berlin' or 'UTC'") from exc
    return zone


def local_timezone() -> str:
    """This machine's IANA zone name ($TZ, /etc/timezone, the /etc/localtime link), else UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    with contextlib.suppress(OSError):
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    for candidate in candidates:
        if candidate and ("/" in candidate or candidate == "UTC"):  # "CET"-style names are ambiguous
            with contextlib.suppress(ValueError):
                return check_timezone(candidate)
    return "UTC"
