"""The principal of an mTLS client: its certificate's subject DN as Java prints it (RFC 2253, Kafka's
`X500Principal.getName()`), then `ssl.principal.mapping.rules`.

The DN is rebuilt from the certificate's DER so it matches Java byte for byte: RDNs most specific
first, `+` inside a multi-valued RDN, keywords only for CN C L ST O OU STREET DC UID, every other
attribute as its dotted OID with `#` and the hex of the value's DER; `, = + < > # ; " \\` escaped with a
backslash, as are a leading or trailing space.

Rules (Kafka's SslPrincipalMapper): a comma-separated list of `DEFAULT` (the DN unchanged) and
`RULE:<regex>/<replacement>/[L|U]` (the regex must match the whole DN; `$1` refers to groups; `L`/`U`
lower- or upper-cases the result); the first rule that applies wins, and a DN no rule applies to is
refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cryptography import x509

from zkafka.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

__all__ = [
    "NoMatchingRuleError",
    "SslPrincipalMapper",
    "rfc2253_name",
    "ssl_principal",
]

_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
_STRING_TAGS: dict[int, Callable[[bytes], str]] = {
    0x0C: lambda b: b.decode("utf-8"),  # UTF8String
    0x13: lambda b: b.decode("latin-1"),  # PrintableString
    0x14: lambda b: b.decode("latin-1"),  # T61String
    0x16: lambda b: b.decode("latin-1"),  # IA5String
    0x1A: lambda b: b.decode("latin-1"),  # VisibleString
    0x1B: lambda b: b.decode("latin-1"),  # GeneralString
    0x1E: lambda b: b.decode("utf-16-be"),  # BMPString
    0x1C: lambda b: b.decode("utf-32-be"),  # UniversalString
}
_ESCAPED = ',=+<>#;"\\'


class NoMatchingRuleError(ValueError):
    pass


def _tlv(buf: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, content start, content end) of the DER element at `pos`."""
    if pos + 2 > len(buf):
        raise ValueError("truncated DER")
    tag, first = buf[pos], buf[pos + 1]
    pos += 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or pos + count > len(buf):
            raise ValueError("bad DER length")
        length = int.from_bytes(buf[pos : pos + count], "big")
        pos += count
    if pos + length > len(buf):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _oid(content: bytes) -> str:
    if not content:
        raise ValueError("empty OID")
    parts, value = [], 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    first = parts[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(p) for p in head + parts[1:])


def _escape(value: str) -> str:
    out = "".join(f"\\{c}" if c in _ESCAPED else ("\\00" if c == "\0" else c) for c in value)
    if out.startswith(" "):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _rdn_sequence(der: bytes) -> list[list[str]]:
    tag, start, end = _tlv(der, 0)
    if tag != 0x30:
        raise ValueError("a Name is a DER SEQUENCE")
    rdns = []
    pos = start
    while pos < end:
        set_tag, set_start, set_end = _tlv(der, pos)
        if set_tag != 0x31:
            raise ValueError("an RDN is a DER SET")
        avas = []
        p = set_start
        while p < set_end:
            seq_tag, seq_start, seq_end = _tlv(der, p)
            oid_tag, oid_start, oid_end = _tlv(der, seq_start)
            if seq_tag != 0x30 or oid_tag != 0x06:
                raise ValueError("an attribute is SEQUENCE { OID, value }")
            oid = _oid(der[oid_start:oid_end])
            value_tag, value_start, value_end = _tlv(der, oid_end)
            keyword = _KEYWORDS.get(oid)
            decode = _STRING_TAGS.get(value_tag)
            if keyword is not None and decode is not None:
                avas.append(f"{keyword}={_escape(decode(der[value_start:value_end]))}")
            else:
                avas.append(f"{keyword or oid}=#{der[oid_end:value_end].hex()}")
            p = seq_end
        rdns.append(avas)
        pos = set_end
    return rdns


def rfc2253_name(name: x509.Name | bytes) -> str:
    """Java's `X500Principal.getName()` of a Name (or of its DER)."""
    der = name.public_bytes() if isinstance(name, x509.Name) else name
    return ",".join("+".join(avas) for avas in reversed(_rdn_sequence(der)))


# Kafka's rule grammar, from SslPrincipalMapper: DEFAULT | RULE:pattern/replacement/[LU] | anything
# else (an error); `\` escapes a `/` inside pattern and replacement.
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str = "", case: str = "") -> None:
        self.pattern = None if pattern is None else re.compile(pattern)
        self.replacement = replacement
        self.case = case

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        groups = self.pattern.groups
        result = self.pattern.sub(lambda m: _java_replacement(self.replacement, m, groups), dn)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result

    def __repr__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        return f"RULE:{self.pattern.pattern}/{self.replacement}/{self.case}"


def _java_replacement(replacement: str, match: re.Match[str], groups: int) -> str:
    """Java's Matcher.appendReplacement: `\\x` is a literal x, `$n` a group (digits are taken while the
    number stays a valid group), `${name}` a named group; a `$n` beyond the groups is literal, as
    Kafka's escapeLiteralBackReferences makes it."""
    out, i, n = [], 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\" and i + 1 < n:
            out.append(replacement[i + 1])
            i += 2
        elif c == "$" and i + 1 < n and replacement[i + 1] == "{":
            end = replacement.find("}", i + 2)
            if end < 0:
                raise ValueError("unterminated ${name} in replacement")
            out.append(match.group(replacement[i + 2 : end]) or "")
            i = end + 1
        elif c == "$" and i + 1 < n and replacement[i + 1].isdigit():
            j = i + 1
            number = int(replacement[j])
            j += 1
            if number > groups:  # Kafka: an invalid reference is literal text
                out.append(replacement[i:j])
                i = j
                continue
            while j < n and replacement[j].isdigit() and number * 10 + int(replacement[j]) <= groups:
                number = number * 10 + int(replacement[j])
                j += 1
            out.append(match.group(number) or "")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    def __init__(self, rules: list[_Rule]) -> None:
        self.rules = rules

    @classmethod
    def from_rules(cls, text: str | None) -> SslPrincipalMapper:
        """Parse `ssl.principal.mapping.rules` (None or blank: DEFAULT)."""
        text = "DEFAULT" if text is None or not text.strip() else text.strip()
        parsed: list[_Rule] = []
        for found in _SPLITTER.finditer(text):
            rule = found.group(1)
            match = _PARSER.match(rule)
            if match is None or match.end() != len(rule):
                raise ValueError(f"invalid ssl.principal.mapping.rules rule: {rule!r}")
            if match.group(1) is not None:
                parsed.append(_Rule())
            elif match.group(2) is not None:
                try:
                    parsed.append(_Rule(match.group(2), match.group(3), match.group(4)))
                except re.error as e:
                    raise ValueError(
                        f"invalid regex in ssl.principal.mapping.rules rule {rule!r}: {e}"
                    ) from None
            elif match.group(5):
                raise ValueError(f"invalid ssl.principal.mapping.rules rule: {rule!r}")
            if found.end() == len(text):
                break
        return cls(parsed)

    def get_name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRuleError(
            f"no ssl.principal.mapping.rules rule applies to {dn!r}, rules {self.rules}"
        )


DEFAULT_MAPPER = SslPrincipalMapper.from_rules(None)


def ssl_principal(
    peer_certificate_der: bytes | None, mapper: SslPrincipalMapper = DEFAULT_MAPPER
) -> KafkaPrincipal:
    """DefaultKafkaPrincipalBuilder for SSL: no client certificate -> ANONYMOUS, else `User:<mapped DN>`.
    Raises NoMatchingRuleError (the connection is refused) when no rule applies."""
    if not peer_certificate_der:
        return ANONYMOUS
    certificate = x509.load_der_x509_certificate(peer_certificate_der)
    return KafkaPrincipal(USER_TYPE, mapper.get_name(rfc2253_name(certificate.subject)))
