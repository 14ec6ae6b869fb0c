"""Typo tolerance: corrections within one edit (two for long words), closest first."""

from __future__ import annotations

import pytest

from gateway.catalog._spelling import Speller, edit_distance


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
