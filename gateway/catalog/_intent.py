"""What a query means beyond its words: shell commands read as the actions they name, a wish to save
something, a question about a person or thing, and whether a server's name is used as a name.

People ask agents in command lines ("rm -rf the tmp folder"), by outcome ("keep in mind that Dan
likes tea") and about entities ("what have we noted about Carol"); a tool's description says none
of those words. This module turns such cues into words and flags that search weighs
(`_search`); it knows general English and common command lines, never a particular catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.catalog._vocabulary import STOPWORDS

__all__ = [
    "ENTITY_WORDS",
    "KINDS_OF_NAMES",
    "KNOWLEDGE_WORDS",
    "SAVE_WORDS",
    "QueryIntent",
    "asks_about_someone",
    "name_candidates",
    "read_intent",
    "steps",
    "tool_finds",
    "tool_writes",
]

# A Unix command names an action; its words are what tool descriptions say instead.
SHELL_COMMANDS: dict[str, str] = {
    "rm": "delete remove file",
    "rmdir": "delete remove directory",
    "mkdir": "create directory",
    "ls": "list directory",
    "ll": "list directory",
    "dir": "list directory",
    "tree": "directory tree",
    "cat": "read file contents",
    "head": "read first lines of file",
    "tail": "read last lines of file",
    "less": "read file",
    "grep": "search text in files",
    "rg": "search text in files",
    "find": "search files by name",
    "mv": "move rename file",
    "cp": "copy file",
    "touch": "create empty file",
    "echo": "write text to file",
    "tee": "write file",
    "stat": "file info metadata",
    "du": "disk usage size",
    "df": "disk space",
    "ps": "list processes",
    "top": "list processes",
    "kill": "kill terminate process",
    "pkill": "kill terminate process",
    "curl": "fetch url http request",
    "wget": "download fetch url",
    "sed": "edit replace text in file",
    "chmod": "change file permissions",
    "diff": "compare differences",
    "tar": "archive compress files",
    "zip": "compress files",
    "sudo": "",
}
# These are also English words ("find the user", "tail of the list"): read as commands only when
# the query looks like a command line (a flag, a path, a redirection).
_ENGLISH_COMMANDS = frozenset(
    {
        "cat",
        "head",
        "tail",
        "less",
        "find",
        "touch",
        "echo",
        "stat",
        "top",
        "kill",
        "tree",
        "dir",
        "diff",
        "tee",
    }
)
_FLAG = re.compile(r"(?<!\S)--?[A-Za-z][\w-]*")
_COMMAND_SYNTAX = re.compile(r"(?<!\S)(--?[A-Za-z]|[~./][\w./~-]*|\S+/\S*|\S+\.[A-Za-z0-9]{1,5}(?!\S))|[|>]")

# Saying to keep something for later: the tool that writes it, not the one that reads it.
_SAVE = re.compile(
    r"\b(remember|memori[sz]e|jot|note (that|down|it)|make a note|keep in mind|store (that|this|it)|"
    r"save (that|this|it)|record (that|this)|don'?t forget|for future reference|keep track|"
    r"(save|put|add|store|write|dump)\b[^.?!]{0,60}\b(to|into|in) (memory|my notes))\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"^\s*(what|who|whom|which|where|when|how|why|do|does|did|is|are|have|has|can)\b|\?\s*$", re.I
)
# Saying that someone should learn something: a message to send, whatever the words name.
_TELL = re.compile(
    r"\b(needs? to (know|hear)|wants? to know|should know|let (\w+ ){1,3}know|tell|ping|dm|"
    r"heads[- ]up|announce|notify|keep asking)\b",
    re.IGNORECASE,
)
TELL_WORDS = "send a message"
# Asking who last changed something: its history of changes answers it.
_WHO_CHANGED = re.compile(
    r"^\s*(find out |tell me |i wonder )?who\b[^.?!]{0,40}?"
    r"\b(touched|changed|edited|modified|updated|rewrote|broke)\b",
    re.IGNORECASE,
)
HISTORY_WORDS = "the history of changes, commit log"
# Someone who forgets something, or does not want to lose it, wants it remembered: what memory keeps,
# to save or to look up. Told to forget ("forget what you know about Eve"), it is deleting instead.
_FORGETTING = re.compile(
    r"\b(i|we|i'?ll|we'?ll|i'?d|people|everyone|they)\b([^.?!]{0,20}?)\b(forget|forgetting|forgotten)\b|"
    r"\b(?:don'?t|do not) want to lose\b",
    re.IGNORECASE,
)
# A question over a set of things ("which pods ...", "any P0s open?", "is there a page on ..."):
# the tools that search or list answer it.
_SURVEY = re.compile(
    r"^\s*(which|any|are there|is there|are all|how many|what are|who has|who is on)\b", re.IGNORECASE
)
FIND_VERBS = frozenset({"search", "list", "find", "query"})
SAVE_WORDS = frozenset({"remember", "memorize", "memorise", "note", "store", "save", "record", "forget"})
"""The words a wish to save is said with: known to the speller, so that "rmember" still says it."""
# Verbs that start the name of a tool that changes something.
WRITE_VERBS = frozenset(
    {
        "create",
        "add",
        "write",
        "insert",
        "append",
        "save",
        "put",
        "post",
        "set",
        "update",
        "store",
        "record",
        "push",
        "upsert",
    }
)

# A question about someone or something named: what memory and knowledge tools keep.
_ABOUT = re.compile(r"\b(about|on|regarding|know|knows|noted|notes|related|connected|who)\b", re.IGNORECASE)
# The same without "on" and "notes", which also place a request ("post it on Discord"): a question
# surely about someone or something named.
_SURELY_ABOUT = re.compile(r"\b(about|regarding|know|knows|noted|related|connected|who)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\b")
ENTITY_WORDS = "entity person knowledge"
# What a tool that keeps knowledge says in its name or first sentence.
KNOWLEDGE_WORDS = "knowledge memory entity entities observation observations fact facts"

# Words that use a server's name as an ordinary word ("undo everything"): indefinite pronouns.
INDEFINITE_PRONOUNS = frozenset(
    {
        "everything",
        "anything",
        "nothing",
        "something",
        "everyone",
        "anyone",
        "someone",
        "everybody",
        "anybody",
        "somebody",
        "all",
        "none",
    }
)
# A server is named as a server after these words ("on github", "in mongo") or before these ("slack server").
SERVER_BEFORE = frozenset({"on", "in", "from", "via", "using", "with", "to", "into", "through", "at", "use"})
SERVER_AFTER = frozenset({"server", "servers", "mcp", "tool", "tools", "api", "workspace", "instance"})

# A word that may name a product or service: after a word that places an action somewhere ("on
# Discord", "in Zendesk") or capitalized inside the sentence ("an Asana task"); all capitals is
# more often a project key or an abbreviation ("PAY", "PST").
_NAME_CANDIDATE = re.compile(r"[A-Za-z][A-Za-z-]*[A-Za-z]")
KINDS_OF_NAMES = (
    ("a person's first name", "a person", "someone's name"),
    ("a city, a country or a place", "a city", "a country"),
    ("a day of the week, a month or a date", "a holiday", "a time of day"),
)
"""What a word the catalog does not know names when it does not name a product: people, places
and times are what tools are asked about, not where the asking goes."""


@dataclass(frozen=True)
class QueryIntent:
    """A query read for what its words alone do not say."""

    text: str  # the query with shell commands spelled out as actions and flags dropped
    saves: bool  # it asks to keep something for later, not to read it
    asks: bool  # it is a question: tools that read answer it, not tools that write
    entities: tuple[str, ...]  # names of people or things it asks about
    tells: bool = False  # someone should learn something: a message to send
    surveys: bool = False  # a question over a set of things: tools that search or list answer it
    recalls: bool = False  # it is about remembering: tools that keep knowledge serve it

    @property
    def leans(self) -> bool:
        """Whether it leans toward some tools whatever its words: writers, readers, knowledge keepers."""
        return self.saves or self.asks or bool(self.entities) or self.surveys or self.recalls

    @property
    def embedded(self) -> str:
        """The text the embedding model reads: about an entity, say that it is one."""
        return f"{self.text} (what is known about them)" if self.entities else self.text


# Conventions of writing that name a kind of thing whatever the words are: `#name` is a chat
# channel, `ABC-123` a tracker's issue key, a statement in SQL a query to run, a pipeline a shell's.
_CHANNEL = re.compile(r"(?<![\w&])#[A-Za-z][\w-]*")
_ISSUE_KEY = re.compile(r"\b[A-Z][A-Z0-9]+-\d+\b")
_SQL = re.compile(
    r"^\s*(select\s.+\sfrom|with\s+\w+\s+as\s*\(|insert\s+into|update\s+\S+\s+set|delete\s+from|"
    r"create\s+(table|index|view)|alter\s+table|explain\s+select)\b",
    re.IGNORECASE | re.DOTALL,
)
_SQL_SYNTAX = re.compile(r"[*(),;=<>]|\b(where|group by|order by|limit|join)\b", re.IGNORECASE)
_URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+")
_PIPELINE = re.compile(r"\S\s*\|\s*[a-z]")
# Programs that run a project's own scripts, builds and tests: no tool does what their command line
# does, a shell runs it. "make" and "go" are English words too: only with a command's syntax.
_RUNNERS = re.compile(
    r"^\s*(npm|npx|yarn|pnpm|bun|deno|node|python3?|pip3?|uv|uvx|poetry|pytest|tox|cargo|rustc|"
    r"gradle|gradlew|mvn|dotnet|bundle|rake|rails|php|composer|tsc|jest|vitest|eslint|prettier|"
    r"webpack|vite|(make|go)(?=\s+\S*[-./=]))\s+\S",
    re.IGNORECASE,
)
# Subcommands whose flag changes what they do: `git checkout -b` makes a branch, not a checkout.
_FLAGGED_SUBCOMMANDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\s*git\s+(checkout\s+-b|switch\s+-c|branch)\s", re.I), "git create branch "),
)


def _spell_out_conventions(query: str) -> str:
    if _SQL.search(query) and _SQL_SYNTAX.search(query):
        return "run a SQL query on the database"
    for pattern, action in _FLAGGED_SUBCOMMANDS:
        if pattern.search(query):
            return pattern.sub(action, query, count=1)
    if (_PIPELINE.search(query) and _COMMAND_SYNTAX.search(query)) or _RUNNERS.search(query):
        return "run a shell command: " + query
    query = _URL.sub(lambda url: f"the web page {url.group(0)}", query)
    query = _CHANNEL.sub("chat channel", query)
    return _ISSUE_KEY.sub(lambda key: f"ticket {key.group(0)}", query)


def _spell_out_commands(query: str) -> str:
    tokens = query.split()
    if not tokens:
        return query
    command = tokens[0].lower()
    rest = tokens[1:]
    if command == "sudo" and rest:
        command, rest = rest[0].lower(), rest[1:]
    action = SHELL_COMMANDS.get(command)
    if action is None:
        return query
    if command in _ENGLISH_COMMANDS and not _COMMAND_SYNTAX.search(" ".join(rest)):
        return query
    return " ".join(_FLAG.sub("", " ".join([action, *rest])).split()) or action


def _entities(query: str, known: frozenset[str]) -> tuple[str, ...]:
    if _SAVE.search(query) is None and _ABOUT.search(query) is None:
        return ()
    return tuple(name for name in _NAME.findall(query) if name.lower() not in known)


def _remembering(match: re.Match[str]) -> str:
    """ "I keep forgetting" as "I keep remember", "don't want to lose" as "want to remember": said
    as forgetting, the wish reads as deleting."""
    if match.group(1):
        return f"{match.group(1)}{match.group(2)}remember"
    return "want to remember"


def read_intent(query: str, known: frozenset[str] = frozenset()) -> QueryIntent:
    """What `query` asks beyond its words; `known` holds words the catalog uses (not names of people)."""
    text = _spell_out_commands(_spell_out_conventions(query))
    asks = _QUESTION.search(query) is not None
    saves = _SAVE.search(query) is not None and not asks
    tells = _TELL.search(query) is not None and not asks
    if tells:
        text = f"{TELL_WORDS}: {text}"
    elif _WHO_CHANGED.search(query):
        text = f"{text} ({HISTORY_WORDS})"
    surveys = _SURVEY.search(query) is not None
    recalls = _FORGETTING.search(text) is not None
    if recalls:
        text = _FORGETTING.sub(_remembering, text)
    return QueryIntent(text, saves, asks, _entities(query, known), tells, surveys, recalls)


def asks_about_someone(query: str) -> bool:
    """Whether `query` asks what is known of someone or something it names ("what do we know about
    Carol"), rather than naming where to do something ("post it on Discord")."""
    return _SURELY_ABOUT.search(query) is not None


def name_candidates(query: str) -> list[str]:
    """Words of `query` that may name a product or service where the action should happen."""
    tokens = query.split()
    found: list[str] = []
    for i, token in enumerate(tokens):
        word = token.strip(".,;:!?\"'()")
        if token[0] in "\"'`" or not _NAME_CANDIDATE.fullmatch(word) or word.isupper():
            continue  # quoted text is data, all capitals a project key or an abbreviation
        if word.lower() in INDEFINITE_PRONOUNS or word.lower() in STOPWORDS:
            continue
        before = tokens[i - 1].lower() if i > 0 else ""
        # "to" also starts a verb ("allowed to touch"): there only a capital says it is a name.
        placed = before in SERVER_BEFORE and before != "to"
        if placed or (i > 0 and word[0].isupper()):
            found.append(word)
    return found


# A request of several steps ("scale it down, then tell #ops it's off"): a clause after a comma,
# "and" or "then" that starts with a verb of doing begins a step; any other clause goes on the one before.
_STEP_BREAK = re.compile(r",? (?:and )?then |, and |[,;] | and ", re.IGNORECASE)  # over single spaces
STEP_VERBS = frozenset(
    {
        "add", "analyze", "archive", "assign", "attach", "check", "click", "close", "comment", "commit",
        "compare", "convert", "copy", "count", "create", "delete", "deploy", "describe", "dm", "download",
        "draft", "drop", "edit", "email", "export", "fetch", "file", "find", "generate", "get", "grab",
        "grep", "import", "install", "invite", "kill", "label", "link", "list", "log", "look", "make",
        "merge", "message", "move", "note", "notify", "open", "ping", "post", "publish", "pull", "push",
        "put", "query", "read", "rebase", "record", "remove", "rename", "reply", "report", "restart",
        "review", "run", "save", "scale", "schedule", "screenshot", "search", "send", "set", "share",
        "show", "stage", "start", "stop", "store", "summarize", "tag", "tell", "update", "upload", "write",
    }
)  # fmt: skip
MAX_STEPS = 4
"""Steps of one request searched on their own: each is one more search, so their number is bounded."""


def steps(query: str) -> tuple[str, ...]:
    """The steps of a request of several, in order (at most MAX_STEPS), or () for a request of one."""
    found: list[str] = []
    # Runs of blanks made one space first: a pattern over runs of them would backtrack on each.
    for clause in _STEP_BREAK.split(" ".join(query.split())):
        first = clause.split(maxsplit=1)[0].lower() if clause.strip() else ""
        if found and first not in STEP_VERBS:
            found[-1] += f", {clause}"  # a clause that is not a step says more about the one before
        elif clause.strip():
            found.append(clause.strip())
    return tuple(found[:MAX_STEPS]) if len(found) > 1 else ()


def tool_finds(name_words: list[str]) -> bool:
    """Whether a tool's name says it searches or lists things (`search_issues`, `list_pods`)."""
    return any(word in FIND_VERBS for word in name_words)


def tool_writes(name_words: list[str]) -> bool:
    """Whether a tool's name says it changes something (`create_entities`, `slack_post_message`)."""
    return any(word in WRITE_VERBS for word in name_words)
