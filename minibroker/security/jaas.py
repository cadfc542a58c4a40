"""Kafka's `sasl.jaas.config` values: `<LoginModule> <flag> key="value" ... ;`.

Only the options matter to a broker without JAAS: PLAIN users are its `user_<name>` options,
as in Kafka's PlainServerCallbackHandler.
"""

from __future__ import annotations

import re

from minibroker.config import ConfigError

_ENTRY = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)"
    r"(?P<options>(?:\s+[^\s=;]+\s*=\s*(?:\"(?:[^\"\\]|\\.)*\"|[^\s;\"]+))*)\s*;\s*",
)
_OPTION = re.compile(r"([^\s=;]+)\s*=\s*(?:\"((?:[^\"\\]|\\.)*)\"|([^\s;\"]+))")


def login_options(text: str) -> dict[str, str]:
    """The options of the login module entries in `text` (later entries win)."""
    options: dict[str, str] = {}
    position = 0
    text = text.strip()
    while position < len(text):
        entry = _ENTRY.match(text, position)
        if entry is None:
            raise ConfigError(
                f"sasl.jaas.config is not '<LoginModule> required k=\"v\" ...;': {text}"
            )
        for match in _OPTION.finditer(entry.group("options")):
            quoted, bare = match.group(2), match.group(3)
            value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
            options[match.group(1)] = value
        position = entry.end()
    return options


def plain_users(text: str) -> dict[str, str]:
    """user name -> password, from the `user_<name>="<password>"` options."""
    return {
        name[len("user_") :]: value
        for name, value in login_options(text).items()
        if name.startswith("user_")
    }
