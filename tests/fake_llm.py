"""A stand-in OpenAI-compatible server on 127.0.0.1, so tests run the real litellm HTTP path.

It answers ``POST /v1/chat/completions`` from a scripted queue (a reply per request: JSON
content, raw text, an HTTP status), then from a ``responder`` function once the queue is
empty. Every request body is recorded, so tests can assert on exactly what was sent.

``grounded_answer`` is a responder that reads the transcript in the prompt and answers with
a draft built only from commands and errors that are really in it (the "model" of the
end-to-end tests and of ``benchmarks/llm_distill.py``).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = None  # the assistant message content
    delay: float = 0.0
    headers: dict[str, str] | None = None


def answer(obj: Any, **kw: Any) -> Reply:
    """A 200 whose message content is ``obj`` as JSON."""
    return Reply(content=json.dumps(obj), **kw)


def text(content: str) -> Reply:
    return Reply(content=content)


def status(code: int, **kw: Any) -> Reply:
    return Reply(status=code, **kw)


Responder = Callable[[dict[str, Any]], Reply]


class FakeLLM:
    def __init__(self, responder: Responder | None = None) -> None:
        self.queue: deque[Reply] = deque()
        self.responder = responder or (lambda body: status(500))
        self.requests: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                body = json.loads(raw)
                with fake._lock:
                    fake.raw.append(raw)
                    fake.requests.append(body)
                    fake.in_flight += 1
                    fake.peak = max(fake.peak, fake.in_flight)
                    reply = fake.queue.popleft() if fake.queue else None
                try:
                    if reply is None:
                        reply = fake.responder(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._send(body, reply)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, body: dict[str, Any], reply: Reply) -> None:
                if reply.status != 200:
                    data = json.dumps({"error": {"message": f"stand-in says {reply.status}",
                                                 "type": "server_error", "code": reply.status}}).encode()
                else:
                    prompt, completion = _tokens(body.get("messages", []), reply.content or "")
                    data = json.dumps({
                        "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": 0,
                        "model": body.get("model", "stand-in"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply.content}}],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                  "total_tokens": prompt + completion},
                    }).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (reply.headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def script(self, *replies: Reply) -> FakeLLM:
        self.queue.extend(replies)
        return self

    def sent(self) -> str:
        """Everything ever sent to the server, as text."""
        return "\n".join(r.decode("utf-8", "replace") for r in self.raw)

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _tokens(messages: list[dict[str, Any]], content: str) -> tuple[int, int]:
    """Token counts the way an OpenAI-style provider reports them (tiktoken, through litellm)."""
    import litellm

    return (int(litellm.token_counter(model="gpt-4o", messages=messages)),
            int(litellm.token_counter(model="gpt-4o", text=content)) if content else 0)


# -- a responder that answers like a careful model -------------------------------------------
_BLOCK = re.compile(r"<<<TRANSCRIPT (\w+)\n(.*)\nTRANSCRIPT \1>>>", re.S)
_CALL = re.compile(r"^\[(\d+)\] \$ (.+)\n  → exit (-?\d+)((?:\n    .*)*)", re.M)
_EXPLORE = re.compile(r"^(ls|cat|nl|grep|find|head|tail|sed -n|echo|cd|pwd|wc|git (status|diff|log|show))\b")


def user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def grounded_answer(body: dict[str, Any], decide: str = "duplicate") -> Reply:
    """Drafts from the commands and errors of the transcript in the request (or a placement decision)."""
    prompt = user_text(body)
    if "NEW DRAFT" in prompt:
        names = re.findall(r"^name: (\S+)$", prompt.split("EXISTING SKILLS", 1)[1], re.M)
        if decide == "new" or not names:
            return answer({"action": "new", "reason": "a different task"})
        if decide == "update":
            draft = prompt.split("NEW DRAFT", 1)[1].split("EXISTING SKILLS", 1)[0]
            field = next((f for f in ("pitfalls", "verification", "procedure") if f"\n{f}:" in draft), "procedure")
            return answer({"action": "update", "target": names[0], f"add_{field}": [0],
                           "reason": f"same task, one more item in {field}"})
        return answer({"action": "duplicate", "target": names[0], "reason": "already covered"})
    block = _BLOCK.search(prompt)
    transcript = block.group(2) if block else ""
    task = transcript.split("Task:\n", 1)[-1].split("\n", 1)[0].strip() or "the task"
    calls = [(int(m.group(1)), m.group(2).strip(), int(m.group(3)), m.group(4)) for m in _CALL.finditer(transcript)]
    ran = [c for c in calls if c[2] == 0 and not _EXPLORE.match(c[1]) and "COMPLETE_TASK" not in c[1]]
    failed = [c for c in calls if c[2] != 0]
    if not ran and not failed:
        return answer({"drafts": [], "nothing_reusable": "no command ran successfully"})
    words = re.findall(r"[a-z0-9]+", task.lower())[:5] or ["session"]
    draft: dict[str, Any] = {"name": "-".join(words), "kind": "procedure" if ran else "pitfall",
                             "title": task[:80], "when_to_use": f"Use when {task[:120]}"}
    if ran:
        *steps, check = ran[-4:]
        draft["procedure"] = [{"text": "Run this step.", "command": c[1], "steps": [c[0]]} for c in steps] or [
            {"text": "Run the check.", "command": check[1], "steps": [check[0]]}]
        draft["verification"] = [{"text": "It passes.", "command": check[1], "steps": [check[0]]}]
    for index, _command, code, output in failed[:2]:
        errors = [line.strip() for line in output.split("\n") if re.search(r"Error|error|FAILED", line)]
        error = errors[-1] if errors and "elided" not in errors[-1] else None
        draft.setdefault("pitfalls", []).append({
            "symptom": f"The command exits {code}", "error": error, "fix": "Look at the error and fix the cause.",
            "steps": [index]})
    return answer({"drafts": [draft]})


def main() -> None:
    """Serve the stand-in on a fixed port, to try the model path by hand: ``python -m tests.fake_llm``."""
    import argparse
    import functools

    parser = argparse.ArgumentParser(description="A stand-in OpenAI-compatible model on 127.0.0.1 (offline).")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--decide", choices=["new", "update", "duplicate"], default="duplicate",
                        help="what it answers when asked where a draft goes")
    args = parser.parse_args()
    fake = FakeLLM(functools.partial(grounded_answer, decide=args.decide))
    fake.server.server_close()
    fake.server = ThreadingHTTPServer(("127.0.0.1", args.port), fake.server.RequestHandlerClass)
    print(f"stand-in model at http://127.0.0.1:{args.port}/v1 (SKILLMILL_MODEL=openai/stand-in); Ctrl-C stops it",
          flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        fake.server.serve_forever()


if __name__ == "__main__":
    main()
