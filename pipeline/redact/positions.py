"""Secrets recognised by their position on a command line or in a sentence, whatever the tool.

Issue 23: enumerating one tool's syntax per wave did not converge, so the rule is general:

* **a credential-named flag** -- a long flag whose name says password, passphrase, secret,
  token or a secret's key (``--password``, ``--db-passwd``, ``--client-secret``, ``--auth-token``;
  Java's ``-storepass``, ``-keypass``), ``=`` or a blank, then a value: the value is redacted
  for *any* tool, unless :data:`NOT_CREDENTIAL` says that flag of that tool is something else
  (``mysql --password db`` prompts, and ``db`` is the database);
* **a tool's short password flag** (:data:`PASSWORD_FLAGS`, data): ``redis-cli -a``,
  ``ldapsearch -w``, ``az login -p``, ``zip -P``, ``7z -pX``, ``sqlcmd -P``, ``ssh-keygen -N`` ...
  A short letter means a password only for some tools (``grep -a``, ``wc -w``, ``docker run -p``,
  ``pytest -p``), so short flags go by the table;
* **credentials inside a value**: ``pass:X`` (openssl's ``-passin``/``-passout``), ``-U user%X``
  (smbclient, rpcclient ...), ``-u user:X`` / ``--user`` / ``--auth`` (curl, wget, httpie,
  combined ``-su`` too), ``-u user,X`` (lftp);
* **a credential-named key set on a command line**: ``aws configure set aws_secret_access_key X``,
  ``npm config set //host/:_authToken X``; ``htpasswd -b file user X``; ``vault login X``;
  ``rclone config create NAME TYPE pass X``;
* **a value echoed into a command that reads a credential from standard input**:
  ``echo X | docker login --password-stdin``, ``| gh auth login --with-token``, ``| passwd --stdin``,
  ``| chpasswd``, ``| kinit``;
* **a secret's name, then a value of credential shape, in prose**: "the AWS secret access key
  for the deploy user is X", "Twilio auth token X": the name is read as assignments read
  names (``assignments._kind``), the value must look generated (or be 32/64 hex digits).

Where the syntax says "this is the password", the value is one whatever it looks like; only
references (``$PW``, ``$(cat f)``), placeholders (``<password>``, ``***``), flags and, for
flags that name a file, descriptor or prompt, the names stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.redact.assignments import _is_code, _kind
from pipeline.redact.heuristics import (
    classes,
    entropy,
    is_hex,
    is_pathlike,
    is_placeholder,
    is_uuid,
    is_wordlike,
    name_words,
)
from pipeline.redact.rules import PRIORITY_ASSIGNMENT, Candidate, View

PRIORITY = PRIORITY_ASSIGNMENT + 1

# -- the tables (data) ----------------------------------------------------------------------
#: tool -> its short (or single-dash) flags whose value is a password. ``glued``: the value may
#: follow the flag with no blank (``7z -pX``); every flag here also takes ``-f X`` and ``-f=X``.
PASSWORD_FLAGS: dict[str, frozenset[str]] = {
    "redis-cli": frozenset({"-a"}), "keydb-cli": frozenset({"-a"}), "valkey-cli": frozenset({"-a"}),
    **{tool: frozenset({"-w"}) for tool in ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapwhoami",
                                              "ldapcompare", "ldapmodrdn", "ldapexop", "ldapurl")},
    "ldappasswd": frozenset({"-w", "-a", "-s"}),
    "az": frozenset({"-p"}), "psexec": frozenset({"-p"}), "psexec.py": frozenset({"-p"}),
    "paexec": frozenset({"-p"}), "rdesktop": frozenset({"-p"}), "evil-winrm": frozenset({"-p"}),
    "winexe": frozenset({"-p"}), "xfreerdp": frozenset({"/p"}), "wmiexec.py": frozenset({"-p"}),
    "zip": frozenset({"-P"}), "zipcloak": frozenset({"-P"}), "unzip": frozenset({"-P"}), "funzip": frozenset({"-P"}),
    "7z": frozenset({"-p"}), "7za": frozenset({"-p"}), "7zr": frozenset({"-p"}), "7zz": frozenset({"-p"}),
    "rar": frozenset({"-p", "-hp"}), "unrar": frozenset({"-p"}),
    "sqlcmd": frozenset({"-P"}), "bcp": frozenset({"-P"}), "osql": frozenset({"-P"}), "isql": frozenset({"-P"}),
    "ipmitool": frozenset({"-P"}), "mosquitto_pub": frozenset({"-P"}), "mosquitto_sub": frozenset({"-P"}),
    "ssh-keygen": frozenset({"-N", "-P"}), "openssl": frozenset({"-k"}),
    "keytool": frozenset({"-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass",
                          "-destkeypass", "-new"}),
    "jarsigner": frozenset({"-storepass", "-keypass"}),
    "hydra": frozenset({"-p"}), "medusa": frozenset({"-p"}), "crackmapexec": frozenset({"-p"}),
    "nxc": frozenset({"-p"}), "netexec": frozenset({"-p"}), "smbmap": frozenset({"-p"}),
    "sshpass": frozenset({"-p"}), "mongo": frozenset({"-p"}), "mongosh": frozenset({"-p"}),
    "mongodump": frozenset({"-p"}), "mongorestore": frozenset({"-p"}), "mongoexport": frozenset({"-p"}),
    "mongoimport": frozenset({"-p"}), "cqlsh": frozenset({"-p"}), "influx": frozenset({"-p"}),
    "nmcli": frozenset(), "wpa_passphrase": frozenset(),
}
#: Flags whose value may be glued to them.
GLUED = frozenset({("7z", "-p"), ("7za", "-p"), ("7zr", "-p"), ("7zz", "-p"), ("rar", "-p"), ("rar", "-hp"),
                   ("unrar", "-p"), ("xfreerdp", "/p")})
_SHORT = frozenset().union(*PASSWORD_FLAGS.values())
#: tool -> credential-named long flags that are not a credential given on the command line there.
NOT_CREDENTIAL: dict[str, frozenset[str]] = {
    # ``--password`` alone prompts; the next word is the database (commands.py reads ``--password=``)
    **{tool: frozenset({"--password"}) for tool in ("mysql", "mariadb", "mysqldump", "mariadb-dump", "mysqladmin",
                                                     "mysqlimport", "mysqlshow", "mysqlcheck", "mysqlpump")},
    "ssh-keygen": frozenset({"-p"}),  # change the passphrase (asks for it)
}
#: Words that name where a credential is read from, not the credential: a flag ending so is a
#: file, descriptor or prompt (``--password-file``, ``--passphrase-fd``, ``--token-stdin``).
_NOT_VALUE_ENDINGS = ("file", "files", "fd", "stdin", "env", "cmd", "command", "helper", "prompt", "path", "dir",
                      "url", "type", "id", "name", "length", "policy", "store", "auth")
#: Words that run a command: the tool is the next word (``sudo redis-cli ...``).
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "builtin", "doas", "nice", "ionice",
                       "timeout", "stdbuf", "unbuffer", "xargs", "watch", "strace", "ltrace", "then", "do", "else",
                       "!", "{", "$", "#", ">", "-"})
#: Commands that read a credential from standard input (for ``echo X | ...``): a word of its segment.
_STDIN_WORDS = (b"--password-stdin", b"--with-token", b"--passphrase-fd 0", b"--passphrase-fd=0",
                b"--password-from-stdin", b"--token-stdin", b"--stdin", b"chpasswd", b"kinit", b"-passin stdin",
                b"vault login -", b"secret create", b"secret set")
# A shell word starting at a position: quoted (JSON-escaped quotes too) or bare.
_WORD = re.compile(rb"\\?'(?P<s>[^'\n\\]+)\\?'|\\?\"(?P<d>[^\"\n\\]+)\\?\"|(?P<b>[^\s'\"|;&<>()`\\]+)")
_FLAG = re.compile(rb"(?:--?|/)[A-Za-z][A-Za-z0-9_.-]{0,40}")
_TOOL = re.compile(rb"[\w.+/-]{1,64}")
_SEGMENT_BREAK = re.compile(rb"\\n|\\r|[\n|;&`(\"]|\$\(")
_ECHO = re.compile(rb"(?:echo|printf)(?:[ \t]+-[neE]+)*(?:[ \t]+\\?['\"]%s(?:\\{1,2}n)?\\?['\"])?[ \t]+(?P<v>"
                   + _WORD.pattern + rb")[ \t]*\|[ \t]*")
_PASS_COLON = re.compile(rb"pass:(?P<b>[^\s'\"|;&<>()`\\]+)")
_USER_FLAG = re.compile(rb"(?:-[A-Za-z]*[uU]|--user|--proxy-user|--auth|--basic-auth|--http-user|-a)(?:=|[ \t]+)?")
_SET = re.compile(rb"[ \t](?:set|config:set)[ \t]+")
_USER_FLAGS = frozenset({"-u", "-U", "--user", "--proxy-user", "--auth", "--basic-auth", "--http-user", "-a"})
#: Tools whose user flag takes ``user:password`` (or ``user,password``): any such value is one.
_USER_PASSWORD_TOOLS = frozenset({"curl", "wget", "lftp", "http", "https", "xh", "httpie", "ftp", "ncftp", "aria2c",
                                  "smbclient", "rpcclient", "smbget", "smbcacls", "net", "mount.cifs", "enum4linux",
                                  "ab", "siege", "hey", "wrk", "svn", "hydra"})


def _literal(value: str) -> bool:
    """A value typed in: not a reference (``$PW``, ``$(cat f)``, ``%PW%``), a placeholder or a flag."""
    if len(value) < 3 or value[:1] in "$%-<{@" or is_placeholder(value):
        return False
    return "$(" not in value and "${" not in value and "`" not in value and value.lower() not in _NOT_LITERALS


_NOT_LITERALS = frozenset({"stdin", "prompt", "none", "null", "true", "false", "env", "file", "ask", "-"})


def _span(match: re.Match[bytes]) -> tuple[int, int]:
    for group in ("s", "d", "b"):
        if group in match.re.groupindex and match.group(group) is not None:
            return match.span(group)
    return match.span()


def _segment_start(data: bytes, position: int) -> int:
    """Where the command holding ``position`` starts: after a line break (real or JSON-escaped),
    a pipe, ``;``, ``&``, ``(``, a backtick or a double quote."""
    low = max(0, position - 400)
    start = low
    for mark in _BREAKS:
        found = data.rfind(mark, low, position)
        if found >= 0 and found + len(mark) > start:
            start = found + len(mark)
    return start


_BREAKS = (b"\n", b"\\n", b"\\r", b"|", b";", b"&", b"`", b"(", b"\"")


def _line_opens(data: bytes, start: int) -> bool:
    return start == 0 or data[start - 1] == 0x0A or data[start - 2:start] == b"\\n"


def _tool(data: bytes, position: int) -> tuple[str, list[str]]:
    """The command (its base name) the flag at ``position`` belongs to, and the words after it."""
    start = _segment_start(data, position)
    words: list[str] = []
    i = start
    while i < position:
        while i < position and data[i] in b" \t\"'$>":
            i += 1
        match = _TOOL.match(data, i)
        if match is None or match.end() > position:
            break
        words.append(match.group().decode("ascii", "replace"))
        i = match.end()
    if words and words[0][:1] in ("+", "-") and len(words[0]) > 1 and _line_opens(data, start):
        words[0] = words[0][1:]  # a line a diff added or removed
    while words and ("=" in words[0] or words[0] in _WRAPPERS or words[0].startswith("-")):
        words.pop(0)
    if not words:
        return "", []
    return words[0].rsplit("/", 1)[-1].lower(), words[1:]


class PositionRule:
    """Values in credential positions of a command line, whatever the tool (see the module's docstring)."""

    @staticmethod
    def wanted(view: View) -> bool:
        return not view.quiet or view.has(b" -") or view.has(b"pass:") or view.has(b" set ")

    def find(self, view: View) -> Iterator[Candidate]:
        data, text = view.data, view.text
        if view.has(b" -") or view.has(b" /p"):
            yield from self._flags(data, text)
        if view.has(b"pass:"):
            for match in _PASS_COLON.finditer(data):
                if match.start() == 0 or data[match.start() - 1] in b" \t=\"'":
                    yield from _candidate(match, text)
        if view.has(b" set"):
            yield from self._set(data, text)
        if view.has(b"|") and (view.has(b"echo") or view.has(b"printf")):
            yield from self._piped(data, text)
        if view.has(b"htpasswd"):
            yield from self._htpasswd(data, text)
        if view.has(b"vault login") or view.has(b"rclone"):
            yield from self._positional(data, text)

    def _flags(self, data: bytes, text: str) -> Iterator[Candidate]:
        for opening in (b" -", b" /p"):
            position = data.find(opening)
            while position >= 0:
                flag = _FLAG.match(data, position + 1)
                if flag is not None:
                    yield from self._flag(data, text, flag)
                position = data.find(opening, position + 2)

    def _flag(self, data: bytes, text: str, flag: re.Match[bytes]) -> Iterator[Candidate]:
        name = flag.group().decode()
        kind = _flag_kind(name)
        tool: str | None = None
        if kind is None:
            if not (name in _SHORT or name[:2] in ("-p", "-u", "-U") or name[:3] == "-hp" or _combined_user(name)
                    or name in _USER_FLAGS):
                return
            user_flag = name in _USER_FLAGS or _combined_user(name)
            if user_flag and name not in _SHORT and not _has_separator(data, flag.end()):
                return  # ``git push -u origin``: no user:password to look at, nor a tool to find
            tool, _rest = _tool(data, flag.start())
            table = PASSWORD_FLAGS.get(tool, frozenset())
            if name not in table:
                for short in table:
                    if (tool, short) in GLUED and name.startswith(short) and len(name) > len(short):
                        value = _WORD.match(data, flag.start() + len(short))
                        if value is not None:
                            yield from _candidate(value, text)
                        return
                if user_flag:
                    yield from _userinfo(data, text, flag.end(), strict=tool not in _USER_PASSWORD_TOOLS)
                return
            kind = "password"
        end, after = flag.end(), data[flag.end():flag.end() + 1]
        if after == b"=" or (after == b":" and name.startswith("/")):
            end += 1
        elif after in (b" ", b"\t"):
            while data[end:end + 1] in (b" ", b"\t"):
                end += 1
        else:
            return
        if tool is None:
            tool, _rest = _tool(data, flag.start())
            if name in NOT_CREDENTIAL.get(tool, ()) and after != b"=":
                return
        value = _WORD.match(data, end)
        if value is None:
            return
        start, stop = _span(value)
        secret = text[start:stop]
        if not _literal(secret):
            return
        if kind != "password" and (is_pathlike(secret) or secret.isdigit() or is_wordlike(secret) or len(secret) < 6):
            return  # ``--api-key key``, ``--token-limit``: a token or key is no plain word
        yield Candidate(start, stop, kind, PRIORITY)

    @staticmethod
    def _set(data: bytes, text: str) -> Iterator[Candidate]:
        """``aws configure set aws_secret_access_key X``, ``npm config set //host/:_authToken X``."""
        for match in _finditer(_SET, data, (b" set", b"\tset", b" config:set")):
            key = _WORD.match(data, match.end())
            if key is None:
                continue
            k_start, k_end = _span(key)
            name = text[k_start:k_end].rsplit(":", 1)[-1].rsplit(".", 1)[-1]
            if "=" in name:
                continue  # heroku config:set K=V: the assignment rule's
            kind = _kind(name_words(name))
            if kind is None:
                continue
            rest = k_end
            while data[rest:rest + 1] in (b" ", b"\t"):
                rest += 1
            if rest == k_end:
                continue
            value = _WORD.match(data, rest)
            if value is not None and _literal(text[_span(value)[0]:_span(value)[1]]):
                start, stop = _span(value)
                yield Candidate(start, stop, kind, PRIORITY)

    @staticmethod
    def _piped(data: bytes, text: str) -> Iterator[Candidate]:
        """``echo X | docker login --password-stdin``: the consumer reads a credential from stdin."""
        for match in _finditer(_ECHO, data, (b"echo", b"printf")):
            if match.start() and data[match.start() - 1] not in b" \t\n;&|(`'\"n+-":
                continue
            segment_end = _SEGMENT_BREAK.search(data, match.end(), match.end() + 300)
            consumer = data[match.end():segment_end.start() if segment_end else match.end() + 300]
            if any(word in consumer for word in _STDIN_WORDS) or consumer.startswith((b"passwd", b"sudo passwd")):
                start, stop = _span_of(match, "v")
                if _literal(text[start:stop]):
                    yield Candidate(start, stop, "password", PRIORITY)

    @staticmethod
    def _htpasswd(data: bytes, text: str) -> Iterator[Candidate]:
        """``htpasswd -b[c] FILE USER PW`` / ``htpasswd -nb USER PW``: the last of the words."""
        for match in re.finditer(rb"htpasswd((?:[ \t]+-[A-Za-z]+)+)((?:[ \t]+[^\s|;&<>`]+){2,3})", data):
            options = match.group(1).decode()
            if "b" not in options:
                continue
            words = list(re.finditer(rb"[^\s|;&<>`]+", data[match.start(2):match.end(2)]))
            wanted = 2 if "n" in options else 3
            if len(words) >= wanted:
                last = words[wanted - 1]
                start, stop = match.start(2) + last.start(), match.start(2) + last.end()
                quote = text[start:start + 1]
                if quote in "'\"" and text[stop - 1:stop] == quote:
                    start, stop = start + 1, stop - 1
                if _literal(text[start:stop]):
                    yield Candidate(start, stop, "password", PRIORITY)

    @staticmethod
    def _positional(data: bytes, text: str) -> Iterator[Candidate]:
        """``vault login TOKEN``; ``rclone config create NAME TYPE pass X``."""
        for match in re.finditer(rb"vault[ \t]+login[ \t]+(?:-[\w-]+=\S+[ \t]+)*", data):
            value = _WORD.match(data, match.end())
            if value is not None:
                start, stop = _span(value)
                if "=" not in text[start:stop] and _literal(text[start:stop]):
                    yield Candidate(start, stop, "token", PRIORITY)
        for match in re.finditer(rb"rclone[ \t]+config[ \t]+(?:create|update)[^\n|;&]*", data):
            words = list(_WORD.finditer(data, match.start(), match.end()))
            for key, value in zip(words, words[1:], strict=False):
                name = text[slice(*_span(key))]
                kind = _kind(name_words(name))
                if kind is not None:
                    start, stop = _span(value)
                    if _literal(text[start:stop]):
                        yield Candidate(start, stop, kind, PRIORITY)


_CREDENTIAL_WORDS = ("pass", "pw", "secret", "token", "key", "cred", "auth")


def _flag_kind(name: str) -> str | None:
    """What a credential-named flag's value is (``--db-password`` -> password), or None."""
    bare = name.lstrip("-/")
    if not (name.startswith("--") or (name.startswith("-") and len(bare) >= 4 and bare.isalpha())):
        return None  # a short flag: by the tool's table
    lower = bare.lower()
    if not any(word in lower for word in _CREDENTIAL_WORDS):
        return None
    words = name_words(bare)
    if not words or words[-1] in _NOT_VALUE_ENDINGS:
        return None
    kind = _kind(words)
    if kind is None and words[-1].endswith("pass") and len(words[-1]) > 4:
        kind = "password"  # Java's -storepass, -keypass
    return kind


def _has_separator(data: bytes, end: int) -> bool:
    value = _WORD.match(data, end + 1 if data[end:end + 1] in (b" ", b"\t", b"=") else end)
    return value is not None and any(c in value.group() for c in (b":", b"%", b","))


def _combined_user(name: str) -> bool:
    """``-su``, ``-fsSLu``: short flags run together, the last taking a user (curl)."""
    return len(name) > 2 and name[0] == "-" and name[1] != "-" and name[1:].isalpha() and name[-1] == "u"


def _userinfo(data: bytes, text: str, end: int, *, strict: bool) -> Iterator[Candidate]:
    """``-u user:pw``, ``-U user%pw``, ``-u user,pw`` after a user flag: the part after the separator.

    ``strict`` (a tool not known to take ``user:password``): ``docker run -u app:app`` is a user
    and a group, so only a value that is not a plain word is taken there."""
    if data[end:end + 1] in (b" ", b"\t", b"="):
        end += 1
    value = _WORD.match(data, end)
    if value is None:
        return
    start, stop = _span(value)
    word = text[start:stop]
    for separator in ("%", ":", ","):
        user, found, secret = word.partition(separator)
        if not found or not user or "/" in user or secret.startswith("/") or not _literal(secret) or \
                secret.isdigit() or user.isdigit():
            continue
        if separator != "%" and strict and (is_wordlike(secret) or not any(c.isalpha() for c in secret)):
            continue
        if separator == "," and strict:
            continue
        yield Candidate(start + len(user) + 1, stop, "password", PRIORITY)
        return


def _finditer(pattern: re.Pattern[bytes], data: bytes, literals: tuple[bytes, ...]) -> Iterator[re.Match[bytes]]:
    """``pattern.finditer(data)`` for a pattern that opens with one of ``literals``, found with
    ``bytes.find`` (a pattern opening with a class or an alternation is tried at every position)."""
    starts = []
    for literal in literals:
        position = data.find(literal)
        while position >= 0:
            starts.append(position)
            position = data.find(literal, position + len(literal))
    done = -1
    for position in sorted(starts):
        if position < done:
            continue
        match = pattern.match(data, position)
        if match is not None:
            done = match.end()
            yield match


def _span_of(match: re.Match[bytes], outer: str) -> tuple[int, int]:
    for group in ("s", "d", "b"):
        if match.group(group) is not None:
            return match.span(group)
    return match.span(outer)


def _candidate(match: re.Match[bytes], text: str) -> Iterator[Candidate]:
    start, stop = _span(match)
    if _literal(text[start:stop]):
        yield Candidate(start, stop, "password", PRIORITY)


# -- prose: a secret's name, then a credential-shaped value ------------------------------------
#: A secret's name (read backwards from the keyword), a few words, maybe ``is`` / ``:``, a value.
_PROSE_KEYWORDS = (b"key", b"token", b"secret")
#: The next word after a secret's name, and what may stand between the two: a few short words.
_NEXT_WORD = re.compile(rb"[ \t]*[:=]?[ \t]+[\"'`]?([^\s\"'`,;()<>]+)")
_SMALL_WORD = re.compile(rb"[A-Za-z]{1,12}|[:=-]")
_CREDENTIAL = re.compile(rb"[A-Za-z0-9+/_=.~-]+")
_MAX_BETWEEN = 6
_NAME_BEFORE = re.compile(rb"(?:[A-Za-z][A-Za-z0-9_-]*[ \t]+){0,3}[A-Za-z_-]*$")


class ProseSecretRule:
    """ "The AWS secret access key for the deploy user is X", "Twilio auth token X": a secret's
    name, up to six short words, then a value that looks generated (or is 32 or 64 hex digits)."""

    @staticmethod
    def wanted(view: View) -> bool:
        return not view.quiet and (view.has(b"key") or view.has(b"token") or view.has(b"secret"))

    def find(self, view: View) -> Iterator[Candidate]:
        data, lower, text = view.data, view.lower, view.text
        for keyword in _PROSE_KEYWORDS:
            if not view.has(keyword):
                continue
            position = lower.find(keyword)
            while position >= 0:
                end = position + len(keyword)
                if end < len(lower) and lower[end:end + 1] in (b" ", b"\t", b":") and (
                        position == 0 or not lower[position - 1:position].isalpha() or keyword == b"key"):
                    found = self._value(data, text, position, end)
                    if found is not None:
                        yield found
                position = lower.find(keyword, end)

    @staticmethod
    def _value(data: bytes, text: str, position: int, end: int) -> Candidate | None:
        head = _NAME_BEFORE.search(data, max(0, position - 48), end)
        name = data[head.start() if head else position:end].decode("ascii", "replace")
        kind = _kind(name_words(name))
        following = _NEXT_WORD.match(data, end)
        if kind is None or following is None:
            return None
        word = following.group(1).rstrip(b":")
        if word.isalpha() and _kind(name_words(name + "_" + word.decode())) is None:
            return None  # "token count", "key path": the name goes on, and is not a secret's
        for _ in range(_MAX_BETWEEN + 1):
            word = _NEXT_WORD.match(data, end)
            if word is None:
                return None
            start, stop = word.span(1)
            while stop > start and data[stop - 1] in b".,;:-":
                stop -= 1  # the sentence goes on
            if stop - start >= 16:
                value = _CREDENTIAL.match(data, start, stop)
                if value is None or value.end() != stop:
                    return None  # not one word of credential characters (JSON escapes, paths, prose)
                secret = text[start:stop]
                return Candidate(start, stop, kind, PRIORITY - 2) if _credential_shaped(secret) else None
            if not _SMALL_WORD.fullmatch(data, start, stop):
                return None
            end = word.end(1)
        return None


def _credential_shaped(value: str) -> bool:
    if is_placeholder(value) or is_uuid(value) or is_pathlike(value) or _is_code(value):
        return False  # ``secret = settings.AWS_S3_SECRET_KEY``: an attribute, as assignments read it
    if is_hex(value):
        return len(value) in (32, 64)  # 40: a git SHA
    core = value.rstrip("=")
    return len(core) >= 16 and classes(core) == 3 and entropy(core) >= 3.5


# -- signed URLs and cookies ----------------------------------------------------------------
#: Query parameters that sign a URL: whoever holds the URL holds the access (Azure SAS ``sig=``
#: beside ``sv=``/``se=``; AWS and Google presigned URLs).
_SIGNATURES = ((b"sig=", re.compile(rb"(?<![A-Za-z0-9_])sig=([A-Za-z0-9%+/=]{20,200})"), "azure-sas-signature"),
               (b"signature=", re.compile(rb"x-(?:amz|goog)-signature=([0-9a-fA-F]{64,1024})", re.IGNORECASE),
                "url-signature"))
_SAS_FIELD = re.compile(rb"(?:^|[?&\s\"'])(?:sv|se|sp|spr|srt|ss|sr)=")


class SignatureRule:
    """The signature of a signed URL or SAS token: ``...&sig=<base64>``, ``X-Amz-Signature=<hex>``."""

    @staticmethod
    def wanted(view: View) -> bool:
        return view.has(b"sig=") or view.has(b"signature=")

    def find(self, view: View) -> Iterator[Candidate]:
        lower = view.lower
        for anchor, pattern, kind in _SIGNATURES:
            if not view.has(anchor):
                continue
            for match in pattern.finditer(view.data if kind == "azure-sas-signature" else lower):
                start, end = match.span(1)
                if kind == "azure-sas-signature" and not _SAS_FIELD.search(lower, max(0, start - 400), start):
                    continue
                if kind == "azure-sas-signature" and entropy(view.text[start:end]) < 3.5:
                    continue
                yield Candidate(start, end, kind, PRIORITY + 10)


#: Cookies that hold a session: their value is a bearer credential.
_COOKIE_HEADER = re.compile(rb"(?:set-)?cookie\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?|cookie[ \t=]+\\?[\"']?|"
                            rb" -b[ \t]+\\?[\"']?")
_COOKIE_PAIR = re.compile(rb"[ \t]*([A-Za-z0-9_.!#$%&'*+^`|~-]{1,64})=([^;\s\"',\\]+)[ \t]*;?")
#: In a cookie header, names that hold a session: any with ``sess`` in it (PHPSESSID, JSESSIONID,
#: sessionid, _session_id, laravel_session, ASP.NET_SessionId, ASPSESSIONIDxxxx), any ending
#: ``sid`` (connect.sid, SAPISID), remember-me, auth and token cookies.
_SESSION_NAMES = re.compile(rb"(?i)[\w.!#$%&'*+^`|~-]*sess[\w.-]*|[\w.-]*sid|remember[\w-]*|auth[\w-]*|"
                            rb"[\w-]*token|jwt")
#: Outside a header (``PHPSESSID=...``, ``connect.sid=s%3A...``), only the names session cookies
#: have -- ``session=`` or ``tmux_session=`` may be anything -- found through ``sess`` or ``.sid``.
_SESSION_COOKIE = re.compile(rb"(?:php|j|asp|asp\.net_)?sess(?:ion)?_?id[a-z]{0,8}|[\w.-]*_session(?:_?id)?|"
                             rb"[\w-]+\.sid")
_NAME_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_SESSION_VALUE = re.compile(rb"[A-Za-z0-9%._~+/-]{16,}")
_SESSION_PIECES = re.compile(r"[-._%~:]")


class CookieRule:
    """Session cookies: ``Cookie: sessionid=...``, ``Set-Cookie: ...``, ``curl -b 'sid=...'``, ``PHPSESSID=...``."""

    kind = "session-cookie"

    @staticmethod
    def wanted(view: View) -> bool:
        # no anchor of the context rules in ``PHPSESSID=...``: not gated on ``view.quiet``
        return view.has(b"cookie") or view.has(b"sess") or view.has(b".sid") or view.has(b" -b ")

    def find(self, view: View) -> Iterator[Candidate]:
        data, lower, text = view.data, view.lower, view.text
        seen: set[int] = set()
        for anchor in (b"cookie", b" -b "):
            position = lower.find(anchor) if view.has(anchor) else -1
            while position >= 0:
                header = _COOKIE_HEADER.match(lower, position - 4 if lower.startswith(b"set-", position - 4) else position)
                position = lower.find(anchor, position + len(anchor))
                if header is None:
                    continue
                at = header.end()
                for _ in range(32):
                    pair = _COOKIE_PAIR.match(data, at)
                    if pair is None:
                        break
                    at = pair.end()
                    start, end = pair.span(2)
                    if _SESSION_NAMES.fullmatch(pair.group(1)) and _session_value(text[start:end]):
                        seen.add(start)
                        yield Candidate(start, end, self.kind, PRIORITY)
                    if not pair.group().rstrip().endswith(b";"):
                        break
        for anchor in (b"sess", b".sid"):
            position = lower.find(anchor) if view.has(anchor) else -1
            while position >= 0:
                found = self._assigned(data, lower, text, position, seen)
                position = lower.find(anchor, position + len(anchor))
                if found is not None:
                    seen.add(found.start)
                    yield found

    def _assigned(self, data: bytes, lower: bytes, text: str, position: int, seen: set[int]) -> Candidate | None:
        """``NAME=value`` where NAME, read around ``position``, is a session cookie's."""
        begin = position
        while begin and lower[begin - 1] in _NAME_BYTES and position - begin < 64:
            begin -= 1
        if begin and lower[begin - 1] == 0x5C and lower[begin] in b"ntr":
            begin += 1  # JSON-escaped text: `\nPHPSESSID=...`
        while lower[begin] in b"-.":
            begin += 1  # a line a diff removed
        equals = lower.find(b"=", position, position + 64)
        if equals < 0 or not _SESSION_COOKIE.fullmatch(lower, begin, equals):
            return None
        start = equals + 1
        value = _SESSION_VALUE.match(data, start)
        if value is None or start in seen:
            return None
        secret = text[start:value.end()]
        if not _session_value(secret) or is_uuid(secret) or is_pathlike(secret) or not any(
                len(piece) >= 16 for piece in _SESSION_PIECES.split(secret)):
            return None  # `tmux_session=work-2024-06-01`, `session_id=<uuid>` of a log line
        return Candidate(start, value.end(), self.kind, PRIORITY)


def _session_value(value: str) -> bool:
    return len(value) >= 16 and not is_placeholder(value) and not is_wordlike(value) and \
        sum(c.isdigit() for c in value) >= 2 and entropy(value) >= 3.0
