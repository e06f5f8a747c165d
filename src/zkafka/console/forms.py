"""Query and form values checked before use: a bad one is a 400 page naming the field."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

from zkafka.console.errors import ConsoleError

MAX_FORM_BYTES = 16 * 1024


def int_param(
    value: str | None, name: str, *, default: int | None = None, low: int = 0, high: int = 2**63 - 1
) -> int | None:
    """`value` as an int in [low, high]; `default` when absent or empty."""
    if value is None or value == "":
        return default
    try:
        number = int(value.strip(), 10)
    except ValueError:
        raise ConsoleError(400, f"{name} must be a whole number, got {value!r}") from None
    if not low <= number <= high:
        raise ConsoleError(400, f"{name} must be between {low} and {high}, got {number}")
    return number


def choice_param(value: str | None, name: str, choices: tuple[str, ...]) -> str:
    if value is None or value == "":
        return choices[0]
    if value not in choices:
        raise ConsoleError(400, f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_same_origin(request: Request) -> None:
    """Refuse a form posted from another site's page (a browser names that page's origin): the
    console does not authenticate, so this is what keeps a web page from acting through it."""
    origin = request.headers.get("origin")
    if origin is None:
        return  # not sent by a browser's cross-site form (curl, scripts, same-origin navigation)
    parsed = urlsplit(origin)
    if parsed.netloc != request.url.netloc or parsed.scheme != request.url.scheme:
        raise ConsoleError(403, f"a form from {origin} may not act on this console")


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body from this console's own pages, bounded; each field's last value."""
    check_same_origin(request)
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != "application/x-www-form-urlencoded":
        raise ConsoleError(415, f"expected a form (application/x-www-form-urlencoded), got {content_type!r}")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise ConsoleError(413, f"a form is at most {MAX_FORM_BYTES} bytes")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as e:
        raise ConsoleError(400, f"unreadable form: {e}") from None
    return {k: v[-1] for k, v in fields.items()}


def require_writable(read_only: bool, what: str) -> None:
    """Every action's first check: a `--read-only` console refuses it (403) before reading its form."""
    if read_only:
        raise ConsoleError(403, f"this console is read-only (--read-only): {what}")
