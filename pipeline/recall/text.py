"""Text helpers shared by the index and the query side: code-aware terms, facets, token counts.

Pure Python with no third-party imports: this runs on the hook path, at every prompt.
"""

from __future__ import annotations

import functools
import re

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9]|[A-Z][0-9]{2,}")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_FILE = re.compile(r"\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|java|kt|swift|cs|cpp|toml|ya?ml|json|md|cfg|ini|sh|lock)\b")
_COMMENT = re.compile(r"[ \t]*<!-- from [^>]*-->")


def keywords(text: str) -> str:
    """Code-aware terms the word tokenizer would lose or blur.

    Identifiers are kept whole and split (``snake_case`` -> ``snake_case snake case``,
    ``ValueError`` -> ``valueerror value error``, ``E501`` stays ``e501``), and file names
    keep their extension (``pyproject.toml`` -> ``pyproject_toml``) so they match as one term.
    """
    terms: list[str] = []
    for ident in _IDENT.findall(text):
        if ident.isalpha() and (ident.islower() or ident.isupper() or ident.istitle()):
            continue  # a plain word ("python", "HTTP", "Django"): one piece, the tokenizer keeps it
        parts = [p for p in re.split(r"_+", ident) if p]
        pieces = [m.lower() for part in parts for m in _CAMEL.findall(part)]
        if len(pieces) > 1 or "_" in ident or any(c.isdigit() for c in ident):
            terms.append(ident.lower())
            terms.extend(pieces)
    terms.extend(name.lower().replace(".", "_").replace("-", "_") for name in _FILE.findall(text))
    return " ".join(dict.fromkeys(terms))


def estimate_tokens(text: str) -> int:
    """Tokens an LLM tokenizer would count, estimated as one per four characters.

    A real tokenizer would cost an import on the hook path; the estimate is within ~15% on
    English prose and code, and the budget is a ceiling, not an exact fit.
    """
    return (len(text) + 3) // 4


def strip_provenance(markdown: str) -> str:
    """Drop the ``<!-- from ... -->`` evidence comments: useful to a reviewer, noise to an agent."""
    return _COMMENT.sub("", markdown)


_SOURCES = re.compile(r"^## Sources[ \t]*\n(?:(?!## ).*(?:\n|\Z))*", re.M)
_SKILLMILL_META = re.compile(r"^metadata:[ \t]*(?:\n[ \t]+.*)*\n?", re.M)


def lean(markdown: str) -> str:
    """A SKILL.md as an agent is given it: no evidence comments, no Sources list, no skillmill metadata.

    About a third of a generated skill is provenance, kept for the reviewer; an agent pays for every
    token it loads. ``name`` and ``description`` stay, so the file is still a valid Agent Skill.
    """
    text = _SOURCES.sub("", strip_provenance(markdown))
    if text.startswith("---") and "generator: \"skillmill\"" in text.split("\n---", 1)[0]:
        head, sep, body = text[3:].partition("\n---")
        text = "---" + _SKILLMILL_META.sub("", head).rstrip("\n") + sep + body
    return text.rstrip("\n") + "\n"


# -- facets: what a skill is bound to ----------------------------------------------------------
#: canonical language -> patterns that name it in a skill's name or description.
LANGUAGES: dict[str, str] = {
    "python": r"python|pydantic|django|flask|fastapi|pytest|\.py\b",
    "javascript": r"javascript|node\.?js|\bjs\b|jest|npm\b",
    "typescript": r"typescript|\bts\b|\btsx\b",
    "go": r"golang|(?-i:\bGo\b)|\bgo (?:service|code|module|program|concurrency|test)",
    "rust": r"\brust\b|cargo|tokio",
    "java": r"\bjava\b|junit|spring boot|maven|gradle",
    "kotlin": r"kotlin",
    "swift": r"\bswift\b|swiftui",
    "csharp": r"c#|csharp|\.net\b|dotnet|asp\.net",
    "cpp": r"c\+\+|\bcpp\b",
    "ruby": r"\bruby\b|\brails\b",
    "php": r"\bphp\b|laravel|wordpress",
    "elixir": r"elixir|phoenix",
    "scala": r"\bscala\b",
    "dart": r"\bdart\b|flutter",
    "haskell": r"haskell",
    "shell": r"\bbash\b|shell script|shellcheck",
}
LANGUAGE_ALIASES = {"py": "python", "js": "javascript", "node": "javascript", "ts": "typescript",
                    "golang": "go", "c#": "csharp", "cs": "csharp", ".net": "csharp", "dotnet": "csharp",
                    "c++": "cpp", "bash": "shell", "sh": "shell", "rb": "ruby"}

#: canonical agent -> folder names and phrases that bind a skill to it.
AGENTS: dict[str, tuple[str, ...]] = {
    "claude-code": (".claude", "claude code"),
    "codex": (".codex", ".agents", "codex"),
    "gemini": (".gemini", "gemini cli"),
    "qwen": (".qwen", "qwen code"),
    "kimi": (".kimi", "kimi cli"),
}
AGENT_ALIASES = {"claude": "claude-code", "claude_code": "claude-code", "gemini-cli": "gemini",
                 "codex-cli": "codex", "qwen-code": "qwen", "kimi-cli": "kimi"}


def canonical_language(value: str) -> str:
    value = value.strip().lower()
    return LANGUAGE_ALIASES.get(value, value)


def canonical_agent(value: str) -> str:
    value = value.strip().lower()
    return AGENT_ALIASES.get(value, value)


def languages(name: str, description: str) -> list[str]:
    """Languages a skill says it is for (in its name or description); none means any language."""
    text = f"{name.replace('-', ' ')} {description}"
    return sorted(lang for lang, pattern in _language_patterns().items() if pattern.search(text))


@functools.cache
def _language_patterns() -> dict[str, re.Pattern[str]]:
    # Compiled when first needed (indexing): compiling them costs ~5 ms that a query never uses.
    return {lang: re.compile(pattern, re.I) for lang, pattern in LANGUAGES.items()}


def agents(path: str, compatibility: str | None) -> list[str]:
    """Agents a skill is bound to: by the folder it lives in or its ``compatibility`` field."""
    parts = set(path.replace("\\", "/").split("/"))
    found = {agent for agent, (folder, *_rest) in AGENTS.items() if folder in parts}
    if ".agents" in parts:
        found.add("codex")
    text = (compatibility or "").lower()
    for agent, markers in AGENTS.items():
        if any(marker in text for marker in markers[1:] if not marker.startswith(".")):
            found.add(agent)
    return sorted(found)


def repo_matches(skill_repo: str | None, wanted: str) -> bool:
    """``owner/name`` and a bare ``name`` refer to the same repository (sessions record either); two owners'
    repositories of one name do not (``checkout.same_repository``)."""
    from pipeline.checkout import same_repository

    return same_repository(skill_repo, wanted)
