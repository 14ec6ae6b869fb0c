"""JSON Schema validators whose cost is linear in the instance, with ECMA-262 `pattern`s.

jsonschema's own keywords are replaced where they cost more than the instance they read:

- `uniqueItems` gives every item a canonical identity (`json_identity`) and looks it up in a set;
  jsonschema falls back to comparing every pair when the items do not sort (mixed types, objects),
  and its sorted path misses duplicates (`[[1], [true], [1]]`). Equality is JSON's: `1 == 1.0`,
  `true != 1`, object key order is irrelevant, arrays and objects compare by content.
- `pattern`, `patternProperties` (and the patterns `additionalProperties` and
  `unevaluatedProperties` consult) run on RE2, which matches in time linear in the text, instead
  of Python's backtracking `re` (quadratic for an unanchored pattern, exponential for some).
- `unevaluatedItems` and `unevaluatedProperties` (2020-12) keep what was evaluated in sets, not in
  lists searched once per item.
- `anyOf` and `oneOf` keep the first few errors of each failing branch: jsonschema lists them all
  before it yields anything, so even `is_valid` built an error per bad item.

Reporting is bounded the same way: `best_error` ranks only the first few errors, and
`short_message` cuts a long instance out of the message.

A pattern is read as ECMA-262 (as JSON Schema says) and translated to RE2 syntax where the two read
the same text differently:

- `.` outside a class is any character but a line terminator (`\\n`, `\\r`, U+2028, U+2029);
- `^` and `$` are the start and the end of the input only (`\\A`, `\\z`): never before a final
  newline, never at line breaks;
- `\\d`, `\\w` and `\\b` are ASCII (as in RE2); `\\s` and `\\S` are ECMA's white space and line
  terminators (Unicode spaces, U+FEFF), spelled out as ranges;
- `\\uHHHH` (a surrogate pair as one character), `\\u{H...}`, `\\xHH`, `\\cX`, `\\0`, `\\b` in a
  class (backspace) become RE2's `\\x{...}`; any other escaped punctuation is that character;
- `[]` matches nothing and `[^]` any character; a `]`, `}` or `{` that closes or opens nothing is
  literal (ECMA-262 Annex B); `(?<name>...)` becomes RE2's `(?P<name>...)`.

Matching is by code point (ECMA-262 with the `u` flag): `^.$` matches one emoji. Beyond ECMA-262,
the inline `(?i)` flag is understood (RE2 folds case by Unicode's simple folding, so the Kelvin sign
matches `k`), and `\\p{...}` is passed to RE2. Anything else that is not ECMA-262, or that RE2
cannot run in linear time (backreferences, lookaround, repetition counts over 1000), is an
`UnsupportedPattern` saying why: what to do with it is the caller's choice (see `linear_validator`).
A lone surrogate in the text is matched as U+FFFD, which RE2's UTF-8 can carry.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, NamedTuple, Protocol, cast

import jsonschema
from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match  # pyright: ignore[reportUnknownVariableType]  # stubs leave it open
from jsonschema.protocols import Validator

__all__ = [
    "EcmaRegex",
    "UnsupportedPattern",
    "all_unique",
    "best_error",
    "ecma_regex",
    "ecma_to_re2",
    "json_identity",
    "linear_validator",
    "short_message",
]


class UnsupportedPattern(ValueError):
    """A pattern that is not ECMA-262, or that RE2 cannot run in linear time; the message says why."""


# ---- ECMA-262 to RE2 ------------------------------------------------------------------------------

_Ranges = tuple[tuple[int, int], ...]
_MAX_CODE_POINT = 0x10FFFF
_LINE_TERMINATORS: _Ranges = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
# ECMA-262 WhiteSpace (tab, vertical tab, form feed, space, no-break space, U+FEFF, category Zs)
# and LineTerminator.
_WHITE_SPACE: _Ranges = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)


def _hex(code: int) -> str:
    return f"\\x{{{code:x}}}"


def _complement(ranges: _Ranges) -> _Ranges:
    out: list[tuple[int, int]] = []
    start = 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    if start <= _MAX_CODE_POINT:
        out.append((start, _MAX_CODE_POINT))
    return tuple(out)


def _class_body(ranges: _Ranges) -> str:
    return "".join(_hex(low) if low == high else f"{_hex(low)}-{_hex(high)}" for low, high in ranges)


_DOT = f"[{_class_body(_complement(_LINE_TERMINATORS))}]"
_SPACE = _class_body(_WHITE_SPACE)
_NOT_SPACE = _class_body(_complement(_WHITE_SPACE))
_ANYTHING = f"{_hex(0)}-{_hex(_MAX_CODE_POINT)}"
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_DIGITS = frozenset("0123456789")
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_GROUP_NAME = re.compile(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>")
_CASE_FLAG = re.compile(r"\(\?-?i[:)]")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_BRACED_HEX = re.compile(r"\{([0-9A-Fa-f]{1,6})\}")
_PROPERTY = re.compile(r"\{[A-Za-z0-9_=]+\}")


def _literal(char: str) -> str:
    return char if char in _ASCII_ALNUM else _hex(ord(char))


def _unicode_escape(pattern: str, at: int) -> tuple[int, int]:
    """The code point of the `\\u` escape whose `u` is at `at`, and the index after it."""
    braced = _BRACED_HEX.match(pattern, at + 1)
    if braced is not None:
        code = int(braced.group(1), 16)
        if code > _MAX_CODE_POINT:
            raise UnsupportedPattern(f"\\u{{{braced.group(1)}}} is past the last code point")
        return code, braced.end()
    four = _HEX4.match(pattern, at + 1)
    if four is None:
        raise UnsupportedPattern("\\u must be followed by four hex digits or {hex digits}")
    code, end = int(four.group(), 16), four.end()
    low = _HEX4.match(pattern, end + 2) if pattern.startswith("\\u", end) else None
    if 0xD800 <= code <= 0xDBFF and low is not None and 0xDC00 <= int(low.group(), 16) <= 0xDFFF:
        return 0x10000 + ((code - 0xD800) << 10) + (int(low.group(), 16) - 0xDC00), low.end()
    if 0xD800 <= code <= 0xDFFF:
        raise UnsupportedPattern(f"\\u{four.group()} is a lone surrogate, which UTF-8 text never holds")
    return code, end


def _escape(pattern: str, at: int, in_class: bool) -> tuple[int | None, str, int]:
    """(its code point, or None for a set or an assertion; its RE2 text; the index after it)."""
    if at + 1 >= len(pattern):
        raise UnsupportedPattern("a pattern cannot end with a lone backslash")
    char, end = pattern[at + 1], at + 2
    if char in "dDwW":
        return None, "\\" + char, end
    if char in "sS":
        body = _SPACE if char == "s" else _NOT_SPACE
        return None, body if in_class else f"[{body}]", end
    if char in _CONTROL_ESCAPES:
        code = _CONTROL_ESCAPES[char]
        return code, _hex(code), end
    if char == "b":
        return (8, _hex(8), end) if in_class else (None, "\\b", end)
    if char == "B" and not in_class:
        return None, "\\B", end
    if char == "0" and pattern[end : end + 1] not in _DIGITS:
        return 0, _hex(0), end
    if char in "123456789" or char == "k":
        raise UnsupportedPattern(
            f"\\{char} is a backreference, which cannot be matched in linear time"
            if not in_class
            else f"\\{char} is not an ECMA-262 escape inside a class"
        )
    if char == "c" and pattern[end : end + 1].isascii() and pattern[end : end + 1].isalpha():
        code = ord(pattern[end]) % 32
        return code, _hex(code), end + 1
    if char == "x":
        two = _HEX2.match(pattern, end)
        if two is None:
            raise UnsupportedPattern("\\x must be followed by two hex digits")
        code = int(two.group(), 16)
        return code, _hex(code), two.end()
    if char == "u":
        code, end = _unicode_escape(pattern, at + 1)
        return code, _hex(code), end
    if char in "pP":
        braced = _PROPERTY.match(pattern, end)
        if braced is None:
            raise UnsupportedPattern(f"\\{char} must be followed by a {{property}}")
        return None, "\\" + char + braced.group(), braced.end()
    if char in _ASCII_ALNUM:
        raise UnsupportedPattern(f"\\{char} is not an ECMA-262 escape")
    return ord(char), _hex(ord(char)), end  # an identity escape: the character itself


def _class(pattern: str, at: int) -> tuple[str, int]:
    """The RE2 class for the ECMA-262 class opening at `at`, and the index after it."""
    end = at + 1
    negated = pattern.startswith("^", end)
    end += negated
    parts: list[str] = []
    while True:
        if end >= len(pattern):
            raise UnsupportedPattern("a character class is never closed")
        if pattern[end] == "]":
            end += 1
            break
        low, text, end = _class_atom(pattern, end)
        if pattern.startswith("-", end) and pattern[end + 1 : end + 2] not in ("", "]"):
            high, _, after = _class_atom(pattern, end + 1)
            if low is None or high is None:
                raise UnsupportedPattern("a class escape such as \\d or \\s cannot bound a range")
            if low > high:
                raise UnsupportedPattern(f"the class range {chr(low)!r}-{chr(high)!r} is out of order")
            parts.append(f"{_hex(low)}-{_hex(high)}")
            end = after
            continue
        parts.append(text)
    if not parts:  # ECMA-262: `[]` matches nothing, `[^]` any character
        return (f"[{_ANYTHING}]" if negated else f"[^{_ANYTHING}]"), end
    return f"[{'^' if negated else ''}{''.join(parts)}]", end


def _class_atom(pattern: str, at: int) -> tuple[int | None, str, int]:
    if pattern[at] == "\\":
        return _escape(pattern, at, in_class=True)
    code = ord(pattern[at])
    return code, _hex(code), at + 1


def _group(pattern: str, at: int) -> tuple[str, int]:
    """The RE2 text opening the group at `at`, and the index after it."""
    if not pattern.startswith("(?", at):
        return "(", at + 1
    if pattern.startswith("(?:", at):
        return "(?:", at + 3
    if pattern.startswith(("(?=", "(?!", "(?<=", "(?<!"), at):
        raise UnsupportedPattern("lookaround assertions cannot be matched in linear time")
    named = _GROUP_NAME.match(pattern, at)
    if named is not None:
        return f"(?P<{named.group(1)}>", named.end()
    flag = _CASE_FLAG.match(pattern, at)
    if flag is not None:
        return flag.group(), flag.end()
    raise UnsupportedPattern(
        f"{pattern[at : at + 3]!r} opens no ECMA-262 group (understood: (?:, (?<name>, and the flag (?i))"
    )


def ecma_to_re2(pattern: str) -> str:
    """`pattern`, read as ECMA-262, in RE2 syntax (see the module docstring); raises UnsupportedPattern."""
    out: list[str] = []
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            _, text, at = _escape(pattern, at, in_class=False)
            out.append(text)
            continue
        if char == "[":
            text, at = _class(pattern, at)
            out.append(text)
            continue
        if char == "(":
            text, at = _group(pattern, at)
            out.append(text)
            continue
        if char == "{" and (quantifier := _QUANTIFIER.match(pattern, at)) is not None:
            out.append(quantifier.group())
            at = quantifier.end()
            continue
        if char == ".":
            out.append(_DOT)
        elif char == "^":
            out.append("\\A")
        elif char == "$":
            out.append("\\z")
        elif char in "|)*+?":
            out.append(char)
        else:  # any other character is itself, `{`, `}` and `]` included (Annex B)
            out.append(_literal(char))
        at += 1
    return "".join(out)


class _Re2Pattern(Protocol):
    def search(self, text: bytes) -> object | None: ...


class _Re2(NamedTuple):
    compile: Callable[[str, object], _Re2Pattern]
    error: type[Exception]
    options: object


@lru_cache(maxsize=1)
def _re2() -> _Re2:
    # Loaded at the first pattern, not at import: its native library is megabytes of memory.
    import re2  # pyright: ignore[reportMissingTypeStubs]  # google-re2 ships no types

    options: Any = re2.Options()  # pyright: ignore[reportUnknownMemberType]
    options.log_errors = False  # RE2 would write its complaints to stderr, where the logs go
    options.never_capture = True
    return _Re2(
        cast("Callable[[str, object], _Re2Pattern]", re2.compile),  # pyright: ignore[reportUnknownMemberType]
        cast("type[Exception]", re2.error),  # pyright: ignore[reportUnknownMemberType]
        options,
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (JSON can carry them): matched as U+FFFD
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


class EcmaRegex:
    """A compiled ECMA-262 pattern that searches in time linear in the text."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        translated = ecma_to_re2(pattern)
        re2 = _re2()
        try:
            self._compiled = re2.compile(translated, re2.options)
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
            raise UnsupportedPattern(f"RE2 cannot run it ({text})") from None

    def search(self, text: str) -> bool:
        """Whether the pattern matches somewhere in `text` (JSON Schema patterns are not anchored)."""
        return self._compiled.search(_utf8(text)) is not None


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> EcmaRegex | UnsupportedPattern:
    # The refusal is cached too: a child's schema is checked on every call.
    try:
        return EcmaRegex(pattern)
    except UnsupportedPattern as exc:
        return exc


def ecma_regex(pattern: str) -> EcmaRegex:
    """`pattern` compiled (and cached); raises UnsupportedPattern saying why it cannot run here."""
    compiled = _compiled(pattern)
    if isinstance(compiled, UnsupportedPattern):
        raise UnsupportedPattern(str(compiled))
    return compiled


# ---- JSON equality in linear time ------------------------------------------------------------------


def _scalar_key(value: object) -> object:
    # Strings stand for themselves and numbers too (1 == 1.0 and hash alike); the rest is tagged,
    # so that `true` is not `1` and no tuple is confused with another kind.
    kind = type(value)
    if kind is str or kind is int or kind is float:
        return value
    if value is None or kind is bool:
        return ("const", value)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return value  # a subclass (an IntEnum, say) compares as its value
    return ("other", id(value))  # not JSON: equal to nothing else


def _members(node: list[object] | dict[str, object]) -> Iterator[object]:
    return iter(node) if isinstance(node, list) else iter(node.values())


def _pair(first: int, second: int) -> int:
    """Cantor's pairing: one number per (first, second), so an object's key is a set of plain ints."""
    total = first + second
    return total * (total + 1) // 2 + second


_ARRAY = -1  # heads an array's key (identities are never negative)


def json_identity(value: object, table: dict[object, int]) -> int:
    """A number that two values get from the same `table` exactly when they are equal as JSON.

    Each array and object is reduced to a flat key of its members' numbers, bottom up and without
    recursion, so the cost is linear in the size of `value` however deep or wide it is. (Keys are
    tuples and sets of plain ints: few allocations, which the garbage collector would pay for.)
    """
    if not isinstance(value, list | dict):
        return table.setdefault(_scalar_key(value), len(table))
    root = cast("list[object] | dict[str, object]", value)
    # One frame per open array or object: its members still to read, the numbers of those read.
    stack: list[tuple[Iterator[object], list[int], list[object] | dict[str, object]]] = [
        (_members(root), [_ARRAY] if isinstance(root, list) else [], root)
    ]
    while True:
        members, numbers, node = stack[-1]
        for member in members:
            if isinstance(member, list | dict):
                inner = cast("list[object] | dict[str, object]", member)
                stack.append((_members(inner), [_ARRAY] if isinstance(inner, list) else [], inner))
                break
            numbers.append(table.setdefault(_scalar_key(member), len(table)))
        else:
            stack.pop()
            if isinstance(node, list):
                key: object = tuple(numbers)
            else:
                names = [table.setdefault(name, len(table)) for name in node]
                key = frozenset(map(_pair, names, numbers))
            number = table.setdefault(key, len(table))
            if not stack:
                return number
            stack[-1][1].append(number)


def all_unique(items: Iterable[object]) -> bool:
    """Whether no two of `items` are equal as JSON, in time linear in their total size."""
    table: dict[object, int] = {}
    seen: set[int] = set()
    for item in items:
        identity = json_identity(item, table)
        if identity in seen:
            return False
        seen.add(identity)
    return True


# ---- the keywords ----------------------------------------------------------------------------------

Keyword = Callable[[Any, Any, Any, Any], Iterator[ValidationError]]


def _extras_msg(extras: Iterable[object]) -> tuple[str, str]:
    shown = list(extras)
    return ", ".join(repr(extra) for extra in shown), "was" if len(shown) == 1 else "were"


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if unique and validator.is_type(instance, "array") and not all_unique(instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


class _Keywords:
    """The replaced keywords, for schemas whose unrunnable patterns raise or are skipped."""

    def __init__(self, skip_unrunnable: bool) -> None:
        self.skip_unrunnable = skip_unrunnable

    def regex(self, pattern: str) -> EcmaRegex | None:
        """The compiled pattern; None when it cannot run here and is skipped."""
        compiled = _compiled(pattern)
        if isinstance(compiled, UnsupportedPattern):
            if self.skip_unrunnable:
                return None
            raise UnsupportedPattern(f"{pattern!r}: {compiled}")
        return compiled

    def matches_some(self, patterns: Iterable[str], key: str) -> bool:
        """Whether `key` matches one of `patterns` (or may: a skipped pattern matches everything)."""
        for pattern in patterns:
            regex = self.regex(pattern)
            if regex is None or regex.search(key):
                return True
        return False

    def pattern(self, validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string"):
            regex = self.regex(pattern)
            if regex is not None and not regex.search(instance):
                yield ValidationError(f"{instance!r} does not match {pattern!r}")

    def pattern_properties(
        self, validator: Any, patterns: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for pattern, subschema in cast("dict[str, Any]", patterns).items():
            regex = self.regex(pattern)
            if regex is None:
                continue  # which keys it names is the child's to say
            for key, value in cast("dict[str, Any]", instance).items():
                if regex.search(key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)

    def additional(self, instance: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
        properties = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        return [key for key in instance if key not in properties and not self.matches_some(patterns, key)]

    def additional_properties(
        self, validator: Any, additional: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        extras = set(self.additional(instance, schema))
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif not additional and extras:
            if "patternProperties" in schema:
                verb = "does" if len(extras) == 1 else "do"
                joined = ", ".join(repr(each) for each in sorted(extras))
                patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
                yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
            else:
                shown, verb = _extras_msg(sorted(extras, key=str))
                yield ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")

    def evaluated_indexes(self, validator: Any, instance: list[Any], schema: Any) -> set[int]:
        """Draft 2020-12's evaluated items (jsonschema's walk, with a set)."""
        if validator.is_type(schema, "boolean"):
            return set()
        if "items" in schema:
            return set(range(len(instance)))
        found: set[int] = set()
        for resolved_validator, resolved in _references(validator, schema):
            found |= self.evaluated_indexes(resolved_validator, instance, resolved)
        if "prefixItems" in schema:
            found.update(range(len(schema["prefixItems"])))
        for branch in _taken_branches(validator, instance, schema):
            found |= self.evaluated_indexes(validator, instance, branch)
        for keyword in ("contains", "unevaluatedItems"):
            if keyword in schema:
                sub = validator.evolve(schema=schema[keyword])
                found.update(index for index, item in enumerate(instance) if sub.is_valid(item))
        return found

    def evaluated_keys(self, validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
        """Draft 2020-12's evaluated properties (jsonschema's walk, with a set and ECMA patterns)."""
        if validator.is_type(schema, "boolean"):
            return set()
        found: set[str] = set()
        for resolved_validator, resolved in _references(validator, schema):
            found |= self.evaluated_keys(resolved_validator, instance, resolved)
        properties = schema.get("properties")
        if validator.is_type(properties, "object"):
            found.update(properties.keys() & instance.keys())
        for keyword in ("additionalProperties", "unevaluatedProperties"):
            if (subschema := schema.get(keyword)) is not None:
                found.update(
                    key
                    for key, value in instance.items()
                    if next(validator.descend(value, subschema), None) is None
                )
        if "patternProperties" in schema:
            patterns = list(schema["patternProperties"])
            found.update(key for key in instance if self.matches_some(patterns, key))
        for name, subschema in schema.get("dependentSchemas", {}).items():
            if name in instance:
                found |= self.evaluated_keys(validator, instance, subschema)
        for branch in _taken_branches(validator, instance, schema):
            found |= self.evaluated_keys(validator, instance, branch)
        return found

    def unevaluated_items(
        self, validator: Any, unevaluated: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "array"):
            return
        evaluated = self.evaluated_indexes(validator, instance, schema)
        extras = [item for index, item in enumerate(instance) if index not in evaluated]
        if extras:
            shown, verb = _extras_msg(extras)
            yield ValidationError(f"Unevaluated items are not allowed ({shown} {verb} unexpected)")

    def unevaluated_properties(
        self, validator: Any, unevaluated: Any, instance: Any, schema: Any
    ) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        evaluated = self.evaluated_keys(validator, instance, schema)
        extras = [
            key
            for key in instance
            if key not in evaluated
            and next(validator.descend(instance[key], unevaluated, path=key, schema_path=key), None)
            is not None
        ]
        if not extras:
            return
        if unevaluated is False:
            shown, verb = _extras_msg(sorted(extras, key=str))
            yield ValidationError(f"Unevaluated properties are not allowed ({shown} {verb} unexpected)")
        else:
            shown, verb = _extras_msg(extras)
            yield ValidationError(
                f"Unevaluated properties are not valid under the given schema ({shown} {verb} "
                "unevaluated and invalid)"
            )


def _references(validator: Any, schema: Any) -> Iterator[tuple[Any, Any]]:
    """(validator, schema) for each `$ref` and `$dynamicRef` of `schema`, resolved as jsonschema does."""
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)  # jsonschema's own walk does the same
            yield validator.evolve(schema=resolved.contents, _resolver=resolved.resolver), resolved.contents


def _taken_branches(validator: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """The subschemas of `if`/`then`/`else`, `allOf`, `oneOf` and `anyOf` that the instance passes."""
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            yield schema["if"]
            if "then" in schema:
                yield schema["then"]
        elif "else" in schema:
            yield schema["else"]
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                yield subschema


_KEPT_ERRORS = 16  # per anyOf/oneOf branch, and ranked by best_error: enough to name the problem


def _first_errors(validator: Any, instance: Any, subschema: Any, index: int) -> list[ValidationError]:
    return list(itertools.islice(validator.descend(instance, subschema, schema_path=index), _KEPT_ERRORS))


def _any_of(validator: Any, any_of: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    kept: list[ValidationError] = []
    for index, subschema in enumerate(any_of):
        errors = _first_errors(validator, instance, subschema, index)
        if not errors:
            return
        kept += errors
    yield ValidationError(f"{instance!r} is not valid under any of the given schemas", context=kept)


def _one_of(validator: Any, one_of: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    kept: list[ValidationError] = []
    passed: list[Any] = []
    for index, subschema in enumerate(one_of):
        errors = _first_errors(validator, instance, subschema, index)
        if errors:
            kept += errors
        else:
            passed.append(subschema)
    if not passed:
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas", context=kept)
    elif len(passed) > 1:
        shown = ", ".join(map(repr, [*passed[1:], passed[0]]))  # jsonschema's order: the first one last
        yield ValidationError(f"{instance!r} is valid under each of {shown}")


def best_error(errors: Iterable[ValidationError]) -> ValidationError | None:
    """jsonschema's most relevant error among the first few of `errors` (ranking all costs one each)."""
    return cast("ValidationError | None", best_match(itertools.islice(errors, _KEPT_ERRORS)))


def short_message(error: ValidationError, shown_chars: int = 60) -> str:
    """jsonschema's message with a long instance (a huge list, a long string) cut in the middle."""
    shown = repr(error.instance)
    if len(shown) <= shown_chars or shown not in error.message:
        return error.message
    return error.message.replace(shown, f"{shown[:40]}…({len(shown)} characters)", 1)


def _left_to_the_child(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    return iter(())


_LATEST = jsonschema.Draft202012Validator
_classes: dict[tuple[type[Validator], bool], type[Validator]] = {}


def _linear_class(base: type[Validator], skip_unrunnable: bool) -> type[Validator]:
    cached = _classes.get((base, skip_unrunnable))
    if cached is not None:
        return cached
    keywords = _Keywords(skip_unrunnable)
    replaced: dict[str, Keyword] = {
        "uniqueItems": _unique_items,
        "pattern": keywords.pattern,
        "patternProperties": keywords.pattern_properties,
        "additionalProperties": keywords.additional_properties,
    }
    for name, ours in (("anyOf", _any_of), ("oneOf", _one_of)):
        if base.VALIDATORS.get(name) is _LATEST.VALIDATORS[name]:  # every draft since 4 shares them
            replaced[name] = ours
    for name, ours in (
        ("unevaluatedItems", keywords.unevaluated_items),
        ("unevaluatedProperties", keywords.unevaluated_properties),
    ):
        if name in base.VALIDATORS:
            # Draft 2019-09 walks what was evaluated its own way (lists, Python patterns): a child's
            # 2019-09 schema keeps these two for the child to check, the courtesy check skips them.
            same = base.VALIDATORS[name] is _LATEST.VALIDATORS[name]
            replaced[name] = ours if same else _left_to_the_child
    # The stubs leave `extend` untyped; it returns a validator class of the same draft.
    extended = cast(
        "type[Validator]",
        validators.extend(base, {k: v for k, v in replaced.items() if k in base.VALIDATORS}),  # pyright: ignore[reportUnknownMemberType]
    )
    _classes[(base, skip_unrunnable)] = extended
    return extended


def linear_validator(
    schema: Mapping[str, Any],
    *,
    skip_unrunnable_patterns: bool,
    format_checker: jsonschema.FormatChecker | None = None,
) -> Validator:
    """A validator for `schema` (its `$schema`'s draft, else 2020-12) whose cost is linear in the instance.

    With `skip_unrunnable_patterns`, a pattern that cannot run here (see `ecma_regex`) constrains
    nothing: it is left to whoever else checks the schema. Without it, validation raises
    UnsupportedPattern, which a caller that checked its patterns up front never sees.
    """
    base: type[Validator] = validators.validator_for(schema, default=_LATEST)
    return _linear_class(base, skip_unrunnable_patterns)(schema, format_checker=format_checker)
