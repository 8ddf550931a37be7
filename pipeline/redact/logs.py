"""Log records are redacted too: a parser's exception can quote the line it choked on.

Installed (once per process) when the redactor is first built, i.e. whenever skillmill holds
trajectory text: every log record created afterwards -- skillmill's, Prefect's, a plugin's --
has its message, traceback and stack redacted before any handler formats it.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any

_installed = False
_lock = threading.Lock()
_busy = threading.local()


def install(redact: Callable[[str], str]) -> None:
    """Wrap the log record factory so that every record is redacted when it is made."""
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if not getattr(_busy, "active", False):  # redacting must never recurse into logging
                _busy.active = True
                try:
                    _scrub(record, redact)
                except Exception:  # noqa: BLE001 -- a log record is never worth a crash
                    pass
                finally:
                    _busy.active = False
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


def _scrub(record: logging.LogRecord, redact: Callable[[str], str]) -> None:
    message = record.getMessage()
    clean = redact(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and record.exc_info[0] is not None:
        # Formatters use a cached exc_text when there is one: cache the redacted traceback.
        record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
