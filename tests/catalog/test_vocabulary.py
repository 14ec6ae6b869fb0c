"""Search terms: split identifiers, stopwords, Snowball stems, and the synonym table."""

from __future__ import annotations

import sys
import threading

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


def test_threads_stemming_at_once_each_get_their_own_words_stem() -> None:
    # Uncached stems from three threads, switching as often as the interpreter allows: a stemmer
    # shared without a lock hands one thread another's stem (or raises IndexError) within a few words.
    uncached = stem.__wrapped__
    words = ["unchanged", "echoing", "repositories", "organizations", "deployments", "notifications"]
    expected = {word: uncached(word) for word in words}
    got: list[tuple[str, str]] = []
    failures: list[BaseException] = []

    def stem_many() -> None:
        try:
            got.extend((word, uncached(word)) for _ in range(300) for word in words)
        except BaseException as error:  # re-raised below, in the test's own thread
            failures.append(error)

    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=stem_many) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    assert failures == []
    assert len(got) == 3 * 300 * len(words)
    assert [(word, result) for word, result in got if result != expected[word]] == []
