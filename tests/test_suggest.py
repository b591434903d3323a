"""The did-you-mean index gives difflib's answers to the letter, without comparing every name."""

from __future__ import annotations

import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import instance_catalog
from instance_catalog._suggest import CloseMatches, _ratio

NAMES = [t.name for t in instance_catalog.instance_types()]
INDEX = CloseMatches(NAMES)
OPTIONS = ["instance_count", "instance_type", "hyperparameters", "entry_point", "source_dir", ""]


def _typo(draw: st.DrawFn) -> str:
    word = draw(st.sampled_from(NAMES))
    for _ in range(draw(st.integers(0, 5))):
        i = draw(st.integers(0, len(word)))
        char = draw(st.sampled_from("abcdefgxl0123456789.-_ "))
        before, after = word[:i], word[i + 1 :]
        edits = (before + after, before + char + word[i:], before + char + after)
        word = edits[draw(st.integers(0, 2))]
    return word


typos = st.composite(_typo)()


@settings(max_examples=400, deadline=None)
@given(typos, st.integers(1, 5), st.sampled_from([0.0, 0.3, 0.6, 0.8, 1.0]))
def test_the_index_answers_as_difflib_does(word, n, cutoff):
    assert INDEX(word, n, cutoff) == difflib.get_close_matches(word, NAMES, n, cutoff)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30), st.lists(st.text(max_size=12), max_size=30))
def test_any_words_and_names(word, names):
    for n, cutoff in ((1, 0.6), (3, 0.6), (2, 0.0)):
        assert CloseMatches(names)(word, n, cutoff) == difflib.get_close_matches(
            word, names, n, cutoff
        )


def test_a_misspelt_instance_type_names_the_nearest_types():
    with pytest.raises(instance_catalog.UnknownInstanceType) as caught:
        instance_catalog.get("ml.p3.2xlarg")
    assert caught.value.suggestions == difflib.get_close_matches("ml.p3.2xlarg", NAMES, 3, 0.6)
    assert caught.value.suggestions[0] == "ml.p3.2xlarge"
    assert CloseMatches(OPTIONS)("instance_cout", 1) == ["instance_count"]


@settings(max_examples=1000, deadline=None)
@given(
    st.one_of(typos, st.text(alphabet="ab.x1", max_size=40), st.text(max_size=60)),
    st.one_of(st.sampled_from(NAMES), st.text(alphabet="ab.x1", max_size=40), st.text()),
)
def test_the_ratio_is_difflibs_to_the_bit(word, name):
    # Repetitive alphabets make many ties between longest matches: the earliest must win, as
    # in difflib, or the blocks (and their sum) differ.
    b2j: dict[str, list[int]] = {}
    for j, char in enumerate(word):
        b2j.setdefault(char, []).append(j)
    assert _ratio(name, word, b2j) == difflib.SequenceMatcher(None, name, word).ratio()
