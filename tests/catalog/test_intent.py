"""What a query means beyond its words, read alone and as search weighs it, on small made-up catalogs.

Search runs lexical here (no embedding model), so each mechanism is seen on its own; the fused
ranking with the real model is measured by the search evaluation (tests/search_eval).
"""

from __future__ import annotations

import pytest
from mcp.types import Tool

from gateway.catalog._catalog import Catalog
from gateway.catalog._intent import MAX_STEPS, name_candidates, read_intent, steps, tool_writes
from gateway.catalog._search import TUNED, _index, search
from gateway.catalog._semantic import SemanticSearch
from tests.catalog.fake_embedder import FakeEmbedder


def tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"})


FILES = [
    tool("delete_file", "Delete a file or directory from disk."),
    tool("create_directory", "Create a new directory, with its parents."),
    tool("list_directory", "List the entries of a directory."),
    tool("read_file", "Read the contents of a text file."),
    tool("search_files", "Search the text of files for a pattern."),
]
GIT = [
    tool("git_reset", "Unstage all staged changes."),
    tool("git_show", "Show the contents of a commit."),
]
EVERYTHING = [tool("echo", "Echo back the input."), tool("get_sum", "Add two numbers.")]
CLUSTER = [tool("kubectl_patch", "Patch a Kubernetes resource with a strategic merge.")]
MEMORY = [
    tool("create_entities", "Create entities in the knowledge graph."),
    tool("add_observations", "Add observations about entities to the knowledge graph."),
    tool("search_nodes", "Search for nodes in the knowledge graph."),
]
NOTES = [
    tool("get_note", "Get a note about a topic by its title."),
    tool("update_note", "Update the text of a note about a topic."),
]
DOCS = [tool("get_page", "Get a wiki page about a topic.")]


def first(catalog: Catalog, query: str) -> str:
    return search(catalog, query, limit=1)[0].entry.qualified


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("rm -rf the tmp folder", "delete remove file the tmp folder"),
        ("sudo mkdir -p out/logs", "create directory out/logs"),
        ("cat README.md", "read file contents README.md"),
        ("find the slack profile of Jordan", "find the slack profile of Jordan"),  # English, not a command
        ("find . -name '*.py'", "search files by name . '*.py'"),
    ],
)
def test_a_shell_command_is_spelled_out_as_the_action_it_names(query: str, text: str) -> None:
    assert read_intent(query).text == text


@pytest.mark.parametrize(
    ("query", "text"),
    [
        ("post in #data-eng that the load is late", "post in chat channel that the load is late"),
        ("label issue #77 as a bug", "label issue #77 as a bug"),  # a number, not a channel
        ("move PLAT-512 to In Review", "move ticket PLAT-512 to In Review"),
        ("SELECT count(*) FROM jobs WHERE status = 'stuck';", "run a SQL query on the database"),
        ("select the best photo from the album", "select the best photo from the album"),  # English
        ("git checkout -b fix/span-leak", "git create branch fix/span-leak"),
        ("git checkout main", "git checkout main"),
        ("du -sh /data/* | sort -h", "run a shell command: du -sh /data/* | sort -h"),
        ("is https://status.example.com still red", "is the web page https://status.example.com still red"),
        ("npm run lint -- --fix", "run a shell command: npm run lint -- --fix"),
        ("python3 scripts/report.py --week 23", "run a shell command: python3 scripts/report.py --week 23"),
        ("make -j4 dist", "run a shell command: make -j4 dist"),
        ("make a page for the launch", "make a page for the launch"),  # English, not a command
    ],
)
def test_a_writing_convention_is_spelled_out_as_the_kind_of_thing_it_names(query: str, text: str) -> None:
    assert read_intent(query).text == text


@pytest.mark.parametrize(
    ("query", "tells"),
    [
        ("the on-call needs to know the hotfix is live", True),
        ("let the EMs know the freeze starts thursday", True),
        ("people keep asking if the outage is over", True),
        ("do you know the deploy's status?", False),  # a question: an answer, not a message
        ("restart the api pods", False),
    ],
)
def test_someone_who_should_learn_something_is_read_as_a_message_to_send(query: str, tells: bool) -> None:
    intent = read_intent(query)
    assert intent.tells is tells
    assert intent.text.startswith("send a message") is tells


@pytest.mark.parametrize(
    ("query", "surveys"),
    [
        ("which pods in prod are crash looping?", True),
        ("any P0s open for the payments squad?", True),
        ("is there a wiki page on data retention?", True),
        ("what time is it in Tokyo?", False),
        ("open the pod logs", False),
    ],
)
def test_a_question_over_a_set_of_things_is_told_apart(query: str, surveys: bool) -> None:
    assert read_intent(query).surveys is surveys


def test_a_question_over_a_set_of_things_ranks_the_tool_that_lists_them_first() -> None:
    catalog = Catalog(
        {
            "cluster": [
                tool("pod_logs", "Print the logs of a pod."),
                tool("list_pods", "List the pods of a namespace."),
            ]
        }
    )
    assert first(catalog, "which pods are crashing?") == "cluster.list_pods"
    assert first(catalog, "the pods are crashing") == "cluster.pod_logs"  # not a question: a tie


CHAT_AND_DB = [
    tool("post_message", "Post a message to a chat channel."),
    tool("run_query", "Run a read-only SQL query."),
    tool("count", "Count the documents of a collection matching a filter."),
    tool("list_tables", "List the tables of the database."),
]


def test_a_channel_and_a_sql_statement_find_the_tools_for_them_over_their_words() -> None:
    catalog = Catalog({"work": CHAT_AND_DB})
    assert first(catalog, "ping #db-tables: migration done") == "work.post_message"
    assert first(catalog, "SELECT count(*) FROM signups WHERE created_at > now()") == "work.run_query"
    assert first(catalog, "the db team needs to know the tables are migrated") == "work.post_message"


@pytest.mark.parametrize(
    ("query", "tool_name"),
    [
        ("rm -rf the tmp folder", "files.delete_file"),
        ("mkdir -p out/logs", "files.create_directory"),
        ("ls -la ~/projects", "files.list_directory"),
        ("cat notes.txt", "files.read_file"),
        ("grep -r TODO src/", "files.search_files"),
    ],
)
def test_a_shell_command_finds_the_file_tool_that_does_it(query: str, tool_name: str) -> None:
    assert first(Catalog({"files": FILES, "git": GIT}), query) == tool_name


def test_a_server_named_by_an_ordinary_word_counts_only_when_named_as_a_server() -> None:
    catalog = Catalog({"everything": EVERYTHING, "git": GIT})
    assert first(catalog, "undo everything in the staging area") == "git.git_reset"
    # Said as a server, the name still finds the server's tools.
    assert {hit.entry.server_name for hit in search(catalog, "tools on everything", limit=2)} == {
        "everything"
    }
    assert {hit.entry.server_name for hit in search(catalog, "everything server", limit=2)} == {"everything"}


def test_an_ordinary_word_of_a_longer_server_name_names_no_server_even_said_as_one() -> None:
    catalog = Catalog(
        {
            "web_search": [tool("web_query", "Query the web for pages.")],
            "kubernetes": [tool("kubectl_scale", "Scale the replicas of a deployment.")],
            "git": [tool("git_log", "Search the commit history of a repository by message, author or date.")],
        }
    )
    # "search-api" is a service named so: "on search" does not rank the web_search server first.
    assert first(catalog, "bump replicas on search-api") == "kubernetes.kubectl_scale"
    assert [hit.entry.qualified for hit in search(catalog, "query pages on web_search", limit=1)] == [
        "web_search.web_query"
    ]


def test_a_word_used_only_inside_a_joined_name_counts_less_than_the_words_around_it() -> None:
    catalog = Catalog(
        {
            "db": [tool("describe_table", "Describe the columns of a table.")],
            "warehouse": [tool("run_query", "Run a query over the figures.")],
        }
    )
    # "slo_daily_table" names a table; "pull ... from" it is a query over it.
    assert first(catalog, "query p99 from slo_daily_table") == "warehouse.run_query"
    assert first(catalog, "describe the table") == "db.describe_table"


def test_a_distinctive_server_name_counts_wherever_it_is_in_the_query() -> None:
    catalog = Catalog({"kubernetes": CLUSTER, "git": GIT})
    assert first(catalog, "kubernetes resource") == "kubernetes.kubectl_patch"


def test_a_generic_verb_does_not_pull_a_tool_from_another_domain_over_the_query_domain() -> None:
    catalog = Catalog({"kubernetes": CLUSTER, "git": GIT})
    assert first(catalog, "show the diff of that commit as a patch") == "git.git_show"


@pytest.mark.parametrize(
    ("query", "saves", "asks"),
    [
        ("keep in mind that Dan likes tea", True, False),
        ("remember that the build moved to Friday", True, False),
        ("note that Alice prefers email", True, False),
        ("what do you remember about Dan", False, True),
        ("read the deploy notes", False, False),
    ],
)
def test_saving_is_told_apart_from_asking(query: str, saves: bool, asks: bool) -> None:
    intent = read_intent(query)
    assert (intent.saves, intent.asks) == (saves, asks)


def test_saving_something_ranks_the_tool_that_writes_before_the_one_that_reads() -> None:
    catalog = Catalog({"notes": NOTES})
    assert first(catalog, "get this note about the topic") == "notes.get_note"
    assert first(catalog, "remember this note about the topic") == "notes.update_note"


def test_a_question_ranks_the_tool_that_reads_before_the_one_that_writes() -> None:
    assert first(Catalog({"notes": NOTES}), "what is in the note about the topic?") == "notes.get_note"


@pytest.mark.parametrize(
    "query",
    [
        "save to memory: marta owns the sync",
        "put the blockers into memory, per person",
        "rmember lena is out",
    ],
)
def test_saving_into_memory_or_a_mistyped_remember_is_a_wish_to_save(query: str) -> None:
    catalog = Catalog({"memory": MEMORY})
    assert read_intent(_index(catalog, TUNED).corrected(query)).saves


def test_saving_about_someone_ranks_writing_knowledge_before_searching_it() -> None:
    catalog = Catalog(
        {
            "kb": [tool("search_knowledge", "Search the knowledge base.")],
            "memory": [tool("add_observations", "Add observations to entities.")],
        }
    )
    assert first(catalog, "remember that Yusuf owns the indexer") == "memory.add_observations"


def test_keep_in_mind_finds_a_memory_tool_that_writes() -> None:
    catalog = Catalog({"memory": MEMORY, "notes": NOTES, "docs": DOCS})
    assert first(catalog, "keep in mind that Dan likes tea") in {
        "memory.add_observations",
        "memory.create_entities",
    }


@pytest.mark.parametrize(
    ("query", "history"),
    [
        ("who last touched src/hooks/useDebounce.ts?", True),
        ("who changed the pricing copy last?", True),
        ("find out who edited the runbook page", True),
        ("who is on call tonight?", False),
        ("tell the team what changed", False),
    ],
)
def test_asking_who_changed_something_is_read_as_asking_for_its_history(query: str, history: bool) -> None:
    assert read_intent(query).text.endswith("(the history of changes, commit log)") is history


def test_asking_who_last_touched_a_file_finds_the_log_of_changes_before_the_file_tools() -> None:
    catalog = Catalog(
        {
            "files": [tool("get_file_info", "Get the size and times of a file in src.")],
            "git": [tool("git_log", "Shows the commit logs.")],
        }
    )
    assert first(catalog, "who last touched src/app.ts?") == "git.git_log"


@pytest.mark.parametrize(
    ("query", "recalls", "text"),
    [
        (
            "I keep forgetting which team owns fraud-scoring",
            True,
            "I keep remember which team owns fraud-scoring",
        ),
        ("I don't want to lose what Dana said", True, "I want to remember what Dana said"),
        (
            "by next sprint I'll have forgotten who owns it",
            True,
            "by next sprint I'll have remember who owns it",
        ),
        ("forget what you know about Eve", False, "forget what you know about Eve"),  # told to delete
        ("i forgot the project key, open a ticket", False, "i forgot the project key, open a ticket"),
    ],
)
def test_someone_forgetting_something_wants_it_remembered_not_deleted(
    query: str, recalls: bool, text: str
) -> None:
    intent = read_intent(query)
    assert (intent.recalls, intent.text) == (recalls, text)


def test_someone_forgetting_something_finds_the_knowledge_tools_before_deleting_them() -> None:
    catalog = Catalog(
        {
            "memory": [
                tool("delete_entities", "Delete entities from the knowledge graph."),
                tool("search_nodes", "Search the knowledge graph for a team or a person."),
            ],
            "docs": [tool("get_team_page", "Get the wiki page of a team.")],
        }
    )
    assert first(catalog, "I keep forgetting which team owns billing") == "memory.search_nodes"


def test_a_question_about_a_person_finds_the_knowledge_tools() -> None:
    catalog = Catalog({"memory": MEMORY, "docs": DOCS})
    assert read_intent("what have we noted about Carol").entities == ("Carol",)
    assert first(catalog, "what have we noted about Carol") == "memory.search_nodes"


def test_a_capitalised_word_the_catalog_uses_is_not_a_person() -> None:
    assert read_intent("what do we know about Kubernetes", frozenset({"kubernetes"})).entities == ()
    assert read_intent("Deploy the app").entities == ()  # the first word of a sentence


def test_a_tool_writes_when_a_word_of_its_name_is_a_writing_verb() -> None:
    assert tool_writes(["slack", "post", "message"])
    assert tool_writes(["create", "entities"])
    assert not tool_writes(["search", "nodes"])


def test_meaning_leans_the_same_way_as_words_for_a_query_saving_something() -> None:
    # The fake model reads "note" and "remember" as one meaning: both notes tools tie on it.
    semantic = SemanticSearch(FakeEmbedder)
    assert semantic.load(timeout=10) is not None
    catalog = Catalog({"notes": NOTES}, semantic=semantic)
    hits = search(catalog, "remember it for me", limit=2)
    assert [hit.entry.qualified for hit in hits] == ["notes.update_note", "notes.get_note"]
    assert hits[0].similarity == hits[1].similarity  # the lean is in the score, not the similarity shown


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("send a message on Discord", ["Discord"]),
        ("play some jazz on spotify", ["spotify"]),  # placed somewhere, though not capitalised
        ("create an Asana task for the redesign", ["Asana"]),
        ("Trello card for the bug", []),  # the first word of a sentence
        ("list every open bug in PAY", []),  # all capitals: a project key
        ("look for the text 'Sign in' here", []),  # quoted text is data
        ("which paths is the server allowed to touch", []),  # "to" before a verb
        ("show it to everyone in the channel", []),  # a pronoun, a stopword
    ],
)
def test_a_word_that_may_name_a_product_is_one_placed_after_on_or_in_or_capitalised_inside(
    query: str, names: list[str]
) -> None:
    assert name_candidates(query) == names


@pytest.mark.parametrize(
    ("query", "parts"),
    [
        (
            "scale down the old ingest deploy and then tell #ops it's off",
            ("scale down the old ingest deploy", "tell #ops it's off"),
        ),
        (
            "git status, stage everything under models, commit 'wip'",
            ("git status", "stage everything under models", "commit 'wip'"),
        ),
        # A clause that starts with no verb of doing says more about the step before it.
        ("check the time in NYC, if it's late DM Carla", ()),
        ("the disk is almost full and i don't know why", ()),
        ("find the lag, post it, tell ops, open a ticket, then close the page", 4),
        (
            "scale  down the deploy,\tthen  tell #ops",
            ("scale down the deploy", "tell #ops"),
        ),  # runs of blanks
    ],
)
def test_a_request_of_several_steps_is_split_where_a_clause_starts_with_a_verb_of_doing(
    query: str, parts: tuple[str, ...] | int
) -> None:
    found = steps(query)
    if isinstance(parts, int):
        assert len(found) == parts == MAX_STEPS
    else:
        assert found == parts


WEATHER = [
    tool("get_forecast", "Get the forecast for a city."),
    tool("rain_radar", "Show the rain radar around a place."),
    tool("umbrella_advice", "Say whether to take an umbrella."),
]


def test_each_step_of_a_request_brings_its_own_best_tool_near_the_top() -> None:
    # The fake model reads weather words as one meaning and "note" as a note's: three weather tools
    # outrank the notes tools for the whole request, whose last step asks for a note.
    semantic = SemanticSearch(FakeEmbedder)
    assert semantic.load(timeout=10) is not None
    catalog = Catalog({"weather": WEATHER, "notes": NOTES}, semantic=semantic)
    query = "check the forecast and the umbrella advice for the rain, then note it down"
    names = [hit.entry.qualified for hit in search(catalog, query, limit=3)]
    assert names[0].startswith("weather.")
    assert names[1].startswith("notes.")
    assert len(set(names)) == 3
