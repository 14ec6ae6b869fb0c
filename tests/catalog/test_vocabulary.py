"""Search terms: split identifiers, stopwords, Snowball stems, and the synonym table."""

from __future__ import annotations

from gateway.catalog._vocabulary import SYNONYM_GROUPS, stem, synonyms, terms


def test_terms_are_lowercased_split_identifiers_stemmed() -> None:
    assert terms("getCurrentTime list_directories git-branches staging reviewers") == [
        "get", "current", "time", "list", "directori", "git", "branch", "stage", "review",
    ]  # fmt: skip


def test_stopwords_and_single_letters_are_dropped_and_status_is_not_a_plural() -> None:
    assert terms("Show me the status of a file") == ["show", "status", "file"]


def test_words_under_four_letters_are_not_stemmed() -> None:
    assert [stem(w) for w in ("aws", "prs", "dns", "logs")] == ["aws", "prs", "dns", "log"]


def test_an_abbreviation_stands_for_the_phrase_and_the_phrase_for_it() -> None:
    assert {"pull", "request"} <= set(synonyms(tuple(terms("PR"))))
    assert "pr" in synonyms(tuple(terms("pull requests")))
    assert "mkdir" in synonyms(tuple(terms("create a directory")))


def test_a_phrase_is_not_its_own_synonym() -> None:
    phrase = tuple(terms("delete"))
    assert phrase[0] not in synonyms(phrase)
    assert "remove" in synonyms(phrase) or "remov" in synonyms(phrase)


def test_every_synonym_group_has_at_least_two_distinct_phrases_after_stemming() -> None:
    for group in SYNONYM_GROUPS:
        assert len({tuple(terms(phrase)) for phrase in group}) >= 2, group
