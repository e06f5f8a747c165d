"""Kafka's JAAS configuration syntax (`sasl.jaas.config` values and JAAS files).

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice='alice-secret';

A login module is a class name, a control flag (required, requisite, sufficient, optional; any case),
`name=value` options and a `;`. Values are double- or single-quoted strings (backslash escapes the next
character) or bare words; `//` and `/* */` comments and any whitespace are allowed between tokens, as
Java's StreamTokenizer (which Kafka's JaasConfig uses) allows. A JAAS file wraps modules in named
sections: `KafkaServer { <module>...; };`.

Errors say where (line and column) and what was expected. They never repeat an option's value: a
value is usually a password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "SCRAM_LOGIN_MODULE",
    "JaasConfigError",
    "LoginModule",
    "listener_jaas_config",
    "parse_jaas_config",
    "parse_jaas_file",
    "plain_users",
    "single_login_module",
]

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")
_PUNCTUATION = "=;{}"


class JaasConfigError(ValueError):
    pass


@dataclass(frozen=True)
class LoginModule:
    class_name: str
    flag: str
    options: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # options hold passwords: show their names only
        return f"LoginModule({self.class_name!r}, {self.flag!r}, options={sorted(self.options)})"


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "word", "string", or the punctuation character itself
    text: str
    line: int
    column: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, line, line_start, n = 0, 1, 0, len(text)

    def where(pos: int) -> tuple[int, int]:
        return line, pos - line_start + 1

    while i < n:
        c = text[i]
        if c == "\n":
            line, line_start = line + 1, i + 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                ln, col = where(i)
                raise JaasConfigError(f"unterminated /* comment at line {ln} column {col}")
            line += text.count("\n", i, end)
            if "\n" in text[i:end]:
                line_start = text.rfind("\n", i, end) + 1
            i = end + 2
        elif c in "\"'":
            ln, col = where(i)
            j, chars = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                if text[j] == "\n":
                    line, line_start = line + 1, j + 1
                chars.append(text[j])
                j += 1
            if j >= n:
                raise JaasConfigError(f"unterminated quoted value starting at line {ln} column {col}")
            out.append(_Token("string", "".join(chars), ln, col))
            i = j + 1
        elif c in _PUNCTUATION:
            out.append(_Token(c, c, *where(i)))
            i += 1
        else:
            ln, col = where(i)
            j = i
            while (
                j < n
                and not text[j].isspace()
                and text[j] not in _PUNCTUATION + "\"'"
                and not text.startswith(("//", "/*"), j)
            ):
                j += 1
            out.append(_Token("word", text[i:j], ln, col))
            i = j
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise JaasConfigError(f"a JAAS configuration must be text, got {type(text).__name__}")
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, what: str) -> _Token:
        token = self.peek()
        if token is None:
            raise JaasConfigError(f"expected {what} but the configuration ended")
        self.pos += 1
        return token

    @staticmethod
    def fail(token: _Token, what: str, show: bool = True) -> JaasConfigError:
        got = f" but found {token.text!r}" if show and token.kind != "string" else ""
        return JaasConfigError(f"expected {what} at line {token.line} column {token.column}{got}")

    def module(self) -> LoginModule:
        name = self.take("a login module class name")
        if name.kind != "word":
            raise self.fail(name, "a login module class name")
        flag = self.take("a control flag (required, requisite, sufficient or optional)")
        if flag.kind != "word" or flag.text.lower() not in FLAGS:
            raise self.fail(flag, "a control flag (required, requisite, sufficient or optional)")
        options: dict[str, str] = {}
        while True:
            token = self.take("an option or ';'")
            if token.kind == ";":
                return LoginModule(name.text, flag.text.lower(), options)
            if token.kind != "word":
                raise self.fail(token, "an option name or ';'")
            equals = self.take(f"'=' after option {token.text!r}")
            if equals.kind != "=":
                raise self.fail(equals, f"'=' after option {token.text!r}")
            value = self.take(f"a value for option {token.text!r}")
            if value.kind not in ("word", "string"):
                raise self.fail(value, f"a value for option {token.text!r}")
            if token.text in options:
                raise JaasConfigError(f"option {token.text!r} is given twice (line {token.line})")
            options[token.text] = value.text


def parse_jaas_config(text: str) -> list[LoginModule]:
    """The login modules of a `sasl.jaas.config` value (at least one)."""
    parser = _Parser(text)
    modules = []
    while parser.peek() is not None:
        modules.append(parser.module())
    if not modules:
        raise JaasConfigError("the JAAS configuration is empty (expected '<LoginModule> required ...;')")
    return modules


def single_login_module(text: str, expected_class: str | None = None) -> LoginModule:
    """Kafka requires exactly one module in `sasl.jaas.config`; optionally of a given class."""
    modules = parse_jaas_config(text)
    if len(modules) != 1:
        raise JaasConfigError(f"the JAAS configuration has {len(modules)} login modules, expected 1")
    module = modules[0]
    if expected_class is not None and module.class_name != expected_class:
        raise JaasConfigError(f"expected login module {expected_class}, got {module.class_name}")
    return module


def parse_jaas_file(text: str) -> dict[str, list[LoginModule]]:
    """A JAAS file (`java.security.auth.login.config`): section name -> its login modules."""
    parser = _Parser(text)
    sections: dict[str, list[LoginModule]] = {}
    while parser.peek() is not None:
        name = parser.take("a section name")
        if name.kind != "word":
            raise parser.fail(name, "a section name")
        brace = parser.take("'{'")
        if brace.kind != "{":
            raise parser.fail(brace, f"'{{' after section {name.text!r}")
        modules = []
        while (token := parser.peek()) is not None and token.kind != "}":
            modules.append(parser.module())
        parser.take("'}'")
        end = parser.take("';' after '}'")
        if end.kind != ";":
            raise parser.fail(end, "';' after '}'")
        sections[name.text] = modules
    return sections


def plain_users(module: LoginModule) -> dict[str, str]:
    """PlainLoginModule's `user_<name>="<password>"` options: the users a PLAIN listener accepts."""
    return {k[len("user_") :]: v for k, v in module.options.items() if k.startswith("user_") and len(k) > 5}


def listener_jaas_config(config: Mapping[str, str], listener_name: str, mechanism: str) -> str | None:
    """A broker's JAAS text for one listener and mechanism:
    `listener.name.<listener>.<mechanism>.sasl.jaas.config` (both lower-cased, as Kafka builds the key),
    else the plain `sasl.jaas.config`; None if neither."""
    key = f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    value = config.get(key) or config.get("sasl.jaas.config")
    return value if value and value.strip() else None
