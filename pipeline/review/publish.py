"""After a decision, agents must see it: republish the recall index and agents' exported folders.

The index takes the same path a run ends with (``pipeline.recall.publish``); with the exports
remembered by ``skillmill export`` it is ``pipeline.agents.publish`` (the floor below review).
Here the browser's decisions republish in the background.
"""

from __future__ import annotations

from pipeline.agents.publish import republish as republish  # the index and agents' exported folders
from pipeline.library import Library


class BackgroundPublisher:
    """Republishes in one background thread, so a decision in the browser returns at once.

    Decisions are on disk (files, audit log) before ``request`` returns; only the recall index
    lags, by one republish. Requests that arrive while one runs coalesce into the next, so a
    reviewer deciding quickly costs one republish per burst, not one per click.
    """

    def __init__(self, library: Library) -> None:
        import threading

        self.library = library
        self._wake = threading.Condition()
        self._requested = 0
        self._done = 0
        self._stop = False
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._loop, name="skillmill-republish", daemon=True)
        self._thread.start()

    def request(self, library: Library | None = None) -> None:
        with self._wake:
            self._requested += 1
            self._wake.notify_all()

    def _loop(self) -> None:
        import logging

        while True:
            with self._wake:
                while self._requested == self._done and not self._stop:
                    self._wake.wait()
                if self._stop and self._requested == self._done:
                    return
                target = self._requested
            try:
                republish(self.library)
            except Exception as exc:  # keep serving; the next decision (or run) republishes again
                logging.getLogger(__name__).exception("republishing the recall index failed")
                self.errors.append(f"{type(exc).__name__}: {exc}")
            with self._wake:
                self._done = target
                self._wake.notify_all()

    @property
    def pending(self) -> bool:
        with self._wake:
            return self._requested != self._done

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every requested republish is done; True when none is pending."""
        with self._wake:
            return self._wake.wait_for(lambda: self._requested == self._done, timeout)

    def close(self, timeout: float | None = 60) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        self._thread.join(timeout)
