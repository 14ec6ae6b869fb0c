"""Typo tolerance: corrections within one edit (two for long words), closest first."""

from __future__ import annotations

import pytest

from gateway.catalog import _spelling
from gateway.catalog._spelling import MAX_CORRECTED_CHARS, Speller, edit_distance


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("kitten", "sitting", 3),
        ("teh", "the", 1),
        ("screenshot", "screenshoot", 1),
        ("", "abc", 3),
        ("a", "a", 0),
    ],
)
def test_edit_distance_counts_a_swap_of_neighbours_as_one_edit(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("screenshoot", "screenshot"),  # an insertion
        ("scrensho", "screensho"),  # a deletion
        ("brnach", "branch"),  # a swap
        ("comit", "commit"),
        ("direktory", "directory"),  # a substitution
        ("kuberentes", "kubernetes"),  # a long word: two edits allowed
    ],
)
def test_a_typo_is_corrected_to_the_known_word(typo: str, meant: str) -> None:
    speller = Speller(["screenshot", "screensho", "branch", "commit", "directory", "kubernetes", "bran"])
    assert speller.corrections(typo) == [meant]


def test_known_words_and_short_words_are_never_corrected() -> None:
    speller = Speller(["branch", "log", "lag"])
    assert speller.corrections("branch") == []
    assert speller.corrections("lgo") == []


def test_a_word_far_from_every_known_word_has_no_correction() -> None:
    assert Speller(["branch", "commit"]).corrections("elephant") == []


def test_a_word_past_the_length_cap_is_not_corrected_and_none_of_its_deletions_are_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    speller = Speller(["branch", "commit"])
    seen: list[str] = []
    deletions = _spelling._deletions
    monkeypatch.setattr(_spelling, "_deletions", lambda word: seen.append(word) or deletions(word))
    long_typo = "branch" * 6  # 36 letters: past the cap, close to nothing anyway
    assert speller.corrections(long_typo) == []
    assert speller.corrections("x" * 30_000) == []
    assert seen == []
    assert speller.corrections("brnach") == ["branch"]
    assert seen == ["brnach"]


def test_a_vocabulary_word_past_the_length_cap_is_never_indexed() -> None:
    long_word = "a" * (MAX_CORRECTED_CHARS + 1)
    speller = Speller([long_word, "branch"])
    assert speller.corrections(long_word[:-1]) == []
    assert speller.corrections("brnach") == ["branch"]
