"""Text that comes from outside — a clinician's question or comment, an account name, a file name — made safe to
store, log and show.

    clean_input("问题\x00\ud800\u202e") -> "问题\ufffd"     # at every door: the socket, /feedback, the accounts CLI
    printable("\x1b[2J恶意.md")          -> "\\x1b[2J恶意.md"  # for a terminal: no escape code reaches it

- NUL and the other C0/C1 control characters (but tab and newline) are dropped: PostgreSQL refuses NUL in text (the
  question's thread was then never stored), and they are invisible anyway.
- A lone surrogate (valid in a JSON string, invalid in UTF-8) becomes U+FFFD: otherwise every encode — the database,
  the log, the LLM request — fails on it.
- Bidirectional controls (RLO, LRE, isolates, LRM/RLM, ALM) are dropped: they make a name or a question display as
  something else than it is ("Trojan Source"), and Chinese clinical text never needs them.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_input(text: str) -> str:
    """Text from a client, storable and loggable: no NUL or control characters, no lone surrogates, no bidi
    controls; line breaks unified to \\n."""
    text = _SURROGATE.sub(REPLACEMENT, text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _BIDI.sub("", _CONTROL.sub("", text))


def has_content(text: str) -> bool:
    """Whether the text says anything: at least one letter or digit (not only spaces, marks or U+FFFD)."""
    return any(char.isalnum() for char in text)


def printable(text: str) -> str:
    """Text for a terminal or a log line: control characters (the ESC of an escape sequence, a carriage return
    that overwrites the line) and bidi controls shown as visible escapes instead of acting."""
    text = _SURROGATE.sub(REPLACEMENT, text)
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else "", text)
