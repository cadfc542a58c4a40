"""Subscription regexes (`SubscribedTopicRegex`): Kafka compiles them with RE2/J and a topic
matches when the whole name matches. Here a Python `re` pattern, refusing what RE2 does not
have (lookaround, backreferences, atomic groups, possessive quantifiers, conditionals) and
translating Java spellings Python lacks (`(?<name>`, `\\z`, `\\Q...\\E`), as ListTransactions
v2 treats its transactional id patterns."""

from __future__ import annotations

import re

_NOT_IN_RE2 = re.compile(
    r"\(\?(?:[=!>(]|<[=!])"  # lookahead/lookbehind, atomic group, conditional
    r"|\\[1-9]|\\k<"  # backreferences
    r"|(?<!\\)[*+?}]\+"  # possessive quantifiers
)
_QUOTED = re.compile(r"\\Q(.*?)(?:\\E|$)", re.DOTALL)


class InvalidRegex(Exception):
    """Not a regular expression RE2 accepts."""


def compile_re2(pattern: str) -> re.Pattern[str]:
    if _NOT_IN_RE2.search(pattern):
        raise InvalidRegex(pattern)
    translated = _QUOTED.sub(lambda quoted: re.escape(quoted.group(1)), pattern)
    translated = translated.replace("(?<", "(?P<").replace(r"\z", r"\Z")
    try:
        return re.compile(translated)
    except re.error as exc:
        raise InvalidRegex(pattern) from exc
