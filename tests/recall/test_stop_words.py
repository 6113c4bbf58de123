"""The stop words are vendored: the same words as scikit-learn's public list, and nothing of
scikit-learn is looked up or executed to get them (its private module may move)."""

from __future__ import annotations

import importlib.util

from compaction_eval.recall.matching import normalize


def test_vendored_list_is_scikit_learns_list():
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # the public name

    assert normalize.english_stop_words() == ENGLISH_STOP_WORDS
    assert len(normalize.english_stop_words()) == 318


def test_stop_words_need_no_scikit_learn_file(monkeypatch):
    getattr(normalize.english_stop_words, "cache_clear", lambda: None)()
    looked_up = []

    def no_sklearn(name, *a, **k):
        looked_up.append(name)
        return None

    monkeypatch.setattr(importlib.util, "find_spec", no_sklearn)
    words = normalize.english_stop_words()
    assert {"the", "and", "not"} <= words and "error" not in words
    assert "sklearn" not in looked_up
