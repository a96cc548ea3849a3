# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Canonical GenAI messages JSON, recognized in C without Python's lock.

``canonical(strings, rows)`` answers, for each row of an Arrow string array, whether the
string is in the language of ``normalize.columnar_messages.MESSAGES_RX`` — the strict
grammar of "JSON that orjson parses into canonical GenAI messages" (read it there; this
is the same grammar, spelled as a recursive descent). The regex costs ~1.6 µs a span on
agent traffic; this, a tenth of that. tests/normalize/test_messages_check.py holds the
two to the same answers.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcmp, memcpy

import numpy as np


cdef struct P:
    const uint8_t* p
    const uint8_t* e


cdef inline void ws(P* s) noexcept nogil:
    while s.p < s.e and (s.p[0] == 32 or s.p[0] == 9 or s.p[0] == 10 or s.p[0] == 13):
        s.p += 1


cdef inline int eat(P* s, uint8_t c) noexcept nogil:
    if s.p < s.e and s.p[0] == c:
        s.p += 1
        return 1
    return 0


cdef inline int hexdigit(uint8_t c) noexcept nogil:
    return (48 <= c <= 57) or (97 <= c <= 102) or (65 <= c <= 70)


cdef int string(P* s, Py_ssize_t* chars) noexcept nogil:
    """A JSON string of CH (no control characters, the escapes JSON has, no surrogate
    escapes); ``chars``: how many bytes it holds (zero or not, as its characters)."""
    cdef uint8_t c
    cdef uint64_t w, q, b
    cdef Py_ssize_t n = 0
    if not eat(s, 34):
        return 0
    while s.p < s.e:
        while s.e - s.p >= 8:  # eight plain bytes at a time: no '"', '\\' or control byte
            memcpy(&w, s.p, 8)
            q = w ^ 0x2222222222222222ULL
            b = w ^ 0x5C5C5C5C5C5C5C5CULL
            if (((q - 0x0101010101010101ULL) & ~q) | ((b - 0x0101010101010101ULL) & ~b)
                    | ((w - 0x2020202020202020ULL) & ~w)) & 0x8080808080808080ULL:
                break
            s.p += 8
            n += 8
        if s.p >= s.e:
            break
        c = s.p[0]
        if c == 34:
            s.p += 1
            chars[0] = n
            return 1
        if c < 32:
            return 0
        if c == 92:
            if s.e - s.p < 2:
                return 0
            c = s.p[1]
            if c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116:
                s.p += 2
            elif c == 117:  # \u: four hex digits, not a surrogate (d800-dfff)
                if s.e - s.p < 6 or not (hexdigit(s.p[2]) and hexdigit(s.p[3]) and hexdigit(s.p[4])
                                         and hexdigit(s.p[5])):
                    return 0
                if (s.p[2] == 100 or s.p[2] == 68) and not (48 <= s.p[3] <= 55):
                    return 0
                s.p += 6
            else:
                return 0
        else:
            s.p += 1
        n += 1
    return 0


cdef inline int digits(P* s, int most) noexcept nogil:
    """Up to ``most`` digits; how many."""
    cdef int n = 0
    while n < most and s.p < s.e and 48 <= s.p[0] <= 57:
        s.p += 1
        n += 1
    return n


cdef int number(P* s) noexcept nogil:
    eat(s, 45)
    if eat(s, 48):
        pass
    elif s.p < s.e and 49 <= s.p[0] <= 57:
        s.p += 1
        digits(s, 19)
    else:
        return 0
    if eat(s, 46) and digits(s, 30) == 0:
        return 0
    if s.p < s.e and (s.p[0] == 101 or s.p[0] == 69):
        s.p += 1
        if s.p < s.e and (s.p[0] == 43 or s.p[0] == 45):
            s.p += 1
        if digits(s, 2) == 0:
            return 0
    # a digit cannot follow a number anywhere in the grammar: more digits than the bounds
    # allow fail here, as the regex fails to match them
    return not (s.p < s.e and 48 <= s.p[0] <= 57)


cdef int word(P* s, const char* w, Py_ssize_t n) noexcept nogil:
    if s.e - s.p >= n and memcmp(s.p, w, n) == 0:
        s.p += n
        return 1
    return 0


cdef int scalar(P* s) noexcept nogil:
    cdef Py_ssize_t n
    if s.p >= s.e:
        return 0
    if s.p[0] == 34:
        return string(s, &n)
    if s.p[0] == 45 or 48 <= s.p[0] <= 57:
        return number(s)
    return word(s, b"true", 4) or word(s, b"false", 5) or word(s, b"null", 4)


ctypedef int (*Item)(P*) noexcept nogil


cdef int array(P* s, Item item) noexcept nogil:
    """``[`` items separated by commas, or none, ``]``."""
    if not eat(s, 91):
        return 0
    ws(s)
    if eat(s, 93):
        return 1
    while True:
        if not item(s):
            return 0
        ws(s)
        if eat(s, 93):
            return 1
        if not eat(s, 44):
            return 0
        ws(s)


cdef int value(P* s) noexcept nogil:
    """A scalar, an array of scalars or an object of scalars (one level of nesting)."""
    cdef Py_ssize_t n
    if s.p < s.e and s.p[0] == 91:
        return array(s, scalar)
    if eat(s, 123):
        ws(s)
        if eat(s, 125):
            return 1
        while True:
            if not string(s, &n):
                return 0
            ws(s)
            if not eat(s, 58):
                return 0
            ws(s)
            if not scalar(s):
                return 0
            ws(s)
            if eat(s, 125):
                return 1
            if not eat(s, 44):
                return 0
            ws(s)
    return scalar(s)


cdef enum:
    KEY_OTHER, KEY_TYPE, KEY_ROLE, KEY_PARTS, KEY_EXTRA


cdef int key(P* s) noexcept nogil:
    """A member's key and the colon after it: which of the spelled-out keys (-1: not a string)."""
    cdef const uint8_t* start = s.p
    cdef Py_ssize_t n, length
    cdef int which = KEY_OTHER
    if not string(s, &n):
        return -1
    length = s.p - start
    if length == 6 and memcmp(start, b'"type"', 6) == 0:
        which = KEY_TYPE
    elif length == 6 and memcmp(start, b'"role"', 6) == 0:
        which = KEY_ROLE
    elif length == 7 and memcmp(start, b'"parts"', 7) == 0:
        which = KEY_PARTS
    elif (length == 15 and memcmp(start, b'"finish_reason"', 15) == 0) or (
            length == 6 and memcmp(start, b'"name"', 6) == 0):
        which = KEY_EXTRA
    ws(s)
    if not eat(s, 58):
        return -1
    ws(s)
    return which


cdef int part(P* s) noexcept nogil:
    """An object of members, one of them keyed "type" as spelled."""
    cdef int k, typed = 0
    if not eat(s, 123):
        return 0
    ws(s)
    while True:
        k = key(s)
        if k < 0 or not value(s):
            return 0
        typed |= k == KEY_TYPE
        ws(s)
        if eat(s, 125):
            return typed
        if not eat(s, 44):
            return 0
        ws(s)


cdef int message(P* s) noexcept nogil:
    """One "role" (a non-empty string), one "parts", any "finish_reason" / "name" members."""
    cdef int k, roles = 0, partss = 0
    cdef Py_ssize_t n
    if not eat(s, 123):
        return 0
    ws(s)
    while True:
        k = key(s)
        if k == KEY_ROLE:
            roles += 1
            if not string(s, &n) or n == 0:
                return 0
        elif k == KEY_PARTS:
            partss += 1
            if not array(s, part):
                return 0
        elif k == KEY_EXTRA:
            if not value(s):
                return 0
        else:
            return 0
        ws(s)
        if eat(s, 125):
            return roles == 1 and partss == 1
        if not eat(s, 44):
            return 0
        ws(s)


cdef int messages(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef P s
    s.p = p
    s.e = p + n
    if not eat(&s, 91):
        return 0
    ws(&s)
    while True:
        if not message(&s):
            return 0
        ws(&s)
        if eat(&s, 93):
            break
        if not eat(&s, 44):
            return 0
        ws(&s)
    ws(&s)
    return s.p == s.e


def canonical(strings, rows):
    """For each index of ``rows`` (int64, into ``strings``: a ``pyarrow.StringArray``,
    its value valid), whether the value is canonical messages JSON (a numpy bool array)."""
    cdef const int64_t[:] r = np.ascontiguousarray(rows, dtype=np.int64)
    cdef Py_ssize_t m = r.shape[0], i, j
    out = np.zeros(m, dtype=np.bool_)
    cdef uint8_t[:] ok = out.view(np.uint8)
    if m == 0:
        return out
    buffers = strings.buffers()
    cdef const int32_t[:] offsets = np.frombuffer(buffers[1], dtype=np.int32)
    cdef const uint8_t[:] data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None and \
        buffers[2].size else np.zeros(1, np.uint8)
    cdef Py_ssize_t base = strings.offset
    cdef const uint8_t* d = &data[0]
    with nogil:
        for i in range(m):
            j = r[i] + base
            ok[i] = messages(d + offsets[j], offsets[j + 1] - offsets[j])
    return out
