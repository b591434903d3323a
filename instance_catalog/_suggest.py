"""``difflib.get_close_matches`` over a fixed list of names, with the same answers, fast.

difflib compares the word with every name (``SequenceMatcher.ratio``, tens of microseconds each:
about 6 ms over the 225 training types). A name's ratio is at most its ``quick_ratio``, twice the
characters the two share (as multisets) over their total length; so the names are ranked by that
bound, computed for all of them at once from counts packed into one integer per (character,
count), and ``ratio`` is computed in that order only until the bound falls below the n-th best
ratio found: no name left unexamined could enter the answer, ties included. The answer is
difflib's to the letter (same orientation of the matcher, same tie order).
"""

from __future__ import annotations

import difflib
import heapq
from collections import Counter
from collections.abc import Iterable

_FIELD = 8  # bits per name in the packed counts: a name holds fewer than 256 of a character


class CloseMatches:
    """``get_close_matches(word, names, n, cutoff)`` for one list of names, many words."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        self.lengths = [len(name) for name in self.names]
        counts = [Counter(name) for name in self.names]
        self.most = max((c.most_common(1)[0][1] for c in counts if c), default=0)
        self.packable = max(self.lengths, default=0) <= 255
        # For each character and count k: min(k, the name's count), one field per name.
        self.packed: dict[str, list[int]] = {}
        chars = {c for name in self.names for c in name} if self.packable else set()
        for char in chars:
            have = [c.get(char, 0) for c in counts]
            self.packed[char] = [
                sum(min(k, h) << (_FIELD * i) for i, h in enumerate(have))
                for k in range(1, self.most + 1)
            ]

    def shared(self, word: str) -> bytes:
        """For each name, the characters it shares with ``word`` (difflib's quick_ratio count),
        one byte per name."""
        total = 0
        for char, k in Counter(word).items():
            levels = self.packed.get(char)
            if levels:
                total += levels[min(k, len(levels)) - 1]
        return total.to_bytes(len(self.names), "little")

    def __call__(self, word: str, n: int = 3, cutoff: float = 0.6) -> list[str]:
        if not n > 0 or not 0.0 <= cutoff <= 1.0:
            return difflib.get_close_matches(word, self.names, n, cutoff)  # its own errors
        # From 200 characters on, difflib treats a word's frequent characters as junk.
        if not self.packable or len(word) >= 200 or not self.names:
            return difflib.get_close_matches(word, self.names, n, cutoff)
        b2j: dict[str, list[int]] = {}
        for j, char in enumerate(word):
            b2j.setdefault(char, []).append(j)
        shared = self.shared(word)
        positions: dict[str, int] = {}  # each character's positions in word, as bits
        for i, char in enumerate(word):
            positions[char] = positions.get(char, 0) | 1 << i
        full = (1 << len(word)) - 1
        shortest = min(self.lengths) + len(word)
        found: list[tuple[float, str]] = []
        best: list[float] = []  # the n best ratios so far (a min-heap)
        # Names by shared count, most first: a name's ratio is at most 2 * shared / length,
        # so a count whose best bound is below the n-th best ratio ends the search.
        for count in range(max(shared), -1, -1):
            top = 2.0 * count / shortest if shortest else 1.0
            if top < cutoff or (len(best) == n and top < best[0]):
                break
            floor = best[0] if len(best) == n else cutoff
            # This count's names by their LCS bound, highest first: the n-th best ratio rises
            # soonest, and ratio() (the costly step) is computed for fewer names.
            bounded = []
            at = shared.find(count)
            while at >= 0:
                length = self.lengths[at] + len(word)
                if (2.0 * count / length if length else 1.0) >= floor:
                    lcs = _lcs_bound(self.names[at], positions, full, length)
                    if lcs >= floor:
                        bounded.append((-lcs, at))
                at = shared.find(count, at + 1)
            bounded.sort()
            for lcs, at in bounded:
                if -lcs < (best[0] if len(best) == n else cutoff):
                    break  # the rest of this count are bounded lower still
                name = self.names[at]
                length = self.lengths[at] + len(word)
                # real_quick_ratio, then ratio, as get_close_matches asks them.
                if length and 2.0 * min(self.lengths[at], len(word)) / length < cutoff:
                    continue
                score = _ratio(name, word, b2j)
                if score >= cutoff:
                    found.append((score, name))
                    if len(best) < n:
                        heapq.heappush(best, score)
                    elif score > best[0]:
                        heapq.heapreplace(best, score)
        return [name for _, name in heapq.nlargest(n, found)]


def _ratio(a: str, b: str, b2j: dict[str, list[int]]) -> float:
    """``SequenceMatcher(None, a, b).ratio()`` for a ``b`` under 200 characters (no junk, no
    popular characters): the same matching blocks, found the same way (the longest match of
    a range, the earliest on a tie, then the ranges on either side), without the junk handling
    that has nothing to do here and costs half of difflib's time."""
    matched = 0
    ranges = [(0, len(a), 0, len(b))]
    nothing: list[int] = []
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        besti, bestj, bestsize = alo, blo, 0
        j2len: dict[int, int] = {}
        for i in range(alo, ahi):
            j2len_get = j2len.get
            new: dict[int, int] = {}
            for j in b2j.get(a[i], nothing):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = new[j] = j2len_get(j - 1, 0) + 1
                if k > bestsize:
                    besti, bestj, bestsize = i - k + 1, j - k + 1, k
            j2len = new
        if bestsize:
            matched += bestsize
            if alo < besti and blo < bestj:
                ranges.append((alo, besti, blo, bestj))
            if besti + bestsize < ahi and bestj + bestsize < bhi:
                ranges.append((besti + bestsize, ahi, bestj + bestsize, bhi))
    total = len(a) + len(b)
    return 2.0 * matched / total if total else 1.0


def _lcs_bound(name: str, positions: dict[str, int], full: int, length: int) -> float:
    """``2 * LCS / length``: difflib's matching blocks form a common subsequence, so its ratio
    is at most this. The longest common subsequence's length by the bit-parallel method
    (Allison and Dix 1986; Hyyro 2004), one step per character of ``name``."""
    row = full
    for char in name:
        match = row & positions.get(char, 0)
        row = ((row + match) | (row - match)) & full
    common = full.bit_length() - row.bit_count()
    return 2.0 * common / length if length else 1.0
