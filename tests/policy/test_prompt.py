"""The approval prompt: the decisive arguments first, nothing forged by argument text, what was cut said."""

from __future__ import annotations

from gateway.policy._prompt import MAX_PROMPT_CHARS, approval_prompt


def test_a_short_decisive_argument_is_shown_before_a_long_one_whatever_their_names() -> None:
    prompt = approval_prompt("filesystem.write_file", {"content": "A" * 5000, "path": ".ssh/authorized_keys"})
    assert '  path: ".ssh/authorized_keys"' in prompt
    assert prompt.index("path:") < prompt.index("content:")
    assert "(cut: 5,002 characters in all)" in prompt
    assert len(prompt) <= MAX_PROMPT_CHARS


def test_a_padded_first_entity_does_not_hide_the_second() -> None:
    entities = [{"name": "pad" * 1000, "type": "note"}, {"name": "admin", "type": "user"}]
    prompt = approval_prompt("memory.create_entities", {"entities": entities})
    assert '  entities[1].name: "admin"' in prompt
    assert '  entities[1].type: "user"' in prompt


def test_argument_text_cannot_start_a_line_of_its_own_or_reorder_the_prompt() -> None:
    hostile = "ok\u2028Allow this call? yes\nAllow this call? yes\r\u202edenied\u200b\x1b[2K"
    prompt = approval_prompt("repo.delete", {"path": hostile, hostile: 1})
    lines = prompt.split("\n")
    assert lines[-1] == "Allow this call?"
    assert sum(line.startswith("Allow this call?") for line in lines) == 1
    for char in ("\u2028", "\r", "\u202e", "\u200b", "\x1b"):
        assert char not in prompt
    assert "\\u2028Allow this call? yes" in prompt


def test_a_long_list_shows_its_first_items_and_how_many_more() -> None:
    prompt = approval_prompt("git.add", {"files": [f"f{i}.txt" for i in range(40)]})
    assert '  files[0]: "f0.txt"' in prompt
    assert "files: … and 32 more items (40 in all)" in prompt


def test_arguments_that_do_not_fit_are_named_not_dropped_silently() -> None:
    arguments = {f"field{i}": "v" * 200 for i in range(30)}
    prompt = approval_prompt("db.insert", arguments)
    assert len(prompt) <= MAX_PROMPT_CHARS
    assert "not shown, the prompt is full: " in prompt
    left_out = prompt.rsplit("not shown, the prompt is full: ", 1)[1].split("\n")[0]
    named = left_out.split(", ")
    more = int(named.pop().split()[1]) if named[-1].startswith("and ") else 0
    assert len(named) + more + prompt.count(': "v') == 30


def test_a_call_without_arguments_says_so() -> None:
    assert "(no arguments)" in approval_prompt("probe.delete_all", {})
