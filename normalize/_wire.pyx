# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The OTLP wire format → Arrow buffers, in C, without Python's lock.

``walk(payloads)`` reads serialized ``ExportTraceServiceRequest`` messages and returns
the raw buffers of every column of ``normalize.wire.SCHEMA`` (the layout ptars gives:
resource → scope → span nested lists, key-value lists with their ``AnyValue`` members as
nullable fields, an ``array_value`` / ``kvlist_value`` element kept as its serialized
bytes). ``normalize.wire`` assembles them into the record batch. Python's lock is
released while the bytes are read, so another thread runs meanwhile.

Protobuf's parsing rules are kept: fields in any order; a repeated singular field, the
last wins; a repeated message field, merged (its lists appended); a oneof member clears
the others; unknown fields and a known field with an unexpected wire type skipped;
strings must be UTF-8. A payload that breaks the wire format raises ``ValueError``.

Each column is one ``Col``: fixed-width values, or variable-width bytes with int32
offsets, or list offsets into a child level, with a validity bitmap when nullable. A
level is a run of columns whose rows open and close together (one row per message); a
field is written into the open row of its level, so a repeated field overwrites.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.buffer cimport PyBuffer_FillInfo

# column kinds
cdef enum:
    FIXED = 0    # width bytes a row
    VAR = 1      # int32 offsets + bytes (string: UTF-8 checked)
    LIST = 2     # int32 offsets into a child level's rows
    STRUCT = 3   # validity only
    BOOL = 4     # one byte a row here, bit-packed when assembled

cdef struct Level

cdef struct Col:
    char* data        # fixed-width values (capacity: the level's), or a VAR column's bytes
    Py_ssize_t dlen, dcap
    int32_t* offs     # VAR / LIST: rows + 1 offsets (capacity: the level's + 1)
    Py_ssize_t olen
    uint8_t* bits     # validity, when nullable (capacity: the level's)
    Level* level      # its rows are the level's: the open one is the last
    int kind, width, nullable, utf8, child

cdef enum:
    MAX_LEVEL_COLS = 20

cdef struct Level:
    int first, last   # its columns: [first, last)
    Py_ssize_t rows, cap
    int fixed[MAX_LEVEL_COLS]   # the columns a new row zeroes, nulls and closes
    int nfixed
    int nullable[MAX_LEVEL_COLS]
    int nnullable
    int ends[MAX_LEVEL_COLS]
    int nends

# --- the column table: names (for normalize.wire) and specs ------------------------------
# (name, level, kind, width, nullable, utf8, child level); a KV level's columns are KV_COLS
# at its base, and levels are listed in LEVELS' order.

KV_COLS = (
    ("key", VAR, 0, 0, 1), ("value", STRUCT, 0, 1, 0), ("string_value", VAR, 0, 1, 1),
    ("bool_value", BOOL, 1, 1, 0), ("int_value", FIXED, 8, 1, 0), ("double_value", FIXED, 8, 1, 0),
    ("array_value", STRUCT, 0, 1, 0), ("array_value.values", LIST, 0, 0, 0),
    ("kvlist_value", STRUCT, 0, 1, 0), ("kvlist_value.values", LIST, 0, 0, 0),
    ("bytes_value", VAR, 0, 1, 0), ("string_value_strindex", FIXED, 4, 1, 0), ("key_strindex", FIXED, 4, 0, 0),
)
cdef enum:
    K_KEY, K_VAL, K_SV, K_BV, K_IV, K_DV, K_AV, K_AVV, K_KVL, K_KVLV, K_BY, K_SI, K_KSI, K_N

LEVELS = (
    ("rs", (("resource", STRUCT, 0, 1, 0), ("resource.attributes", LIST, 0, 0, 0),
            ("resource.dropped_attributes_count", FIXED, 4, 0, 0), ("resource.entity_refs", LIST, 0, 0, 0),
            ("scope_spans", LIST, 0, 0, 0), ("schema_url", VAR, 0, 0, 1))),
    ("entity", (("schema_url", VAR, 0, 0, 1), ("type", VAR, 0, 0, 1), ("id_keys", LIST, 0, 0, 0),
                ("description_keys", LIST, 0, 0, 0))),
    ("entity.id_keys", (("item", VAR, 0, 0, 1),)),
    ("entity.description_keys", (("item", VAR, 0, 0, 1),)),
    ("ss", (("scope", STRUCT, 0, 1, 0), ("scope.name", VAR, 0, 0, 1), ("scope.version", VAR, 0, 0, 1),
            ("scope.attributes", LIST, 0, 0, 0), ("scope.dropped_attributes_count", FIXED, 4, 0, 0),
            ("spans", LIST, 0, 0, 0), ("schema_url", VAR, 0, 0, 1))),
    ("span", (("trace_id", VAR, 0, 0, 0), ("span_id", VAR, 0, 0, 0), ("trace_state", VAR, 0, 0, 1),
              ("parent_span_id", VAR, 0, 0, 0), ("name", VAR, 0, 0, 1), ("kind", FIXED, 4, 0, 0),
              ("start_time_unix_nano", FIXED, 8, 0, 0), ("end_time_unix_nano", FIXED, 8, 0, 0),
              ("attributes", LIST, 0, 0, 0), ("dropped_attributes_count", FIXED, 4, 0, 0),
              ("events", LIST, 0, 0, 0), ("dropped_events_count", FIXED, 4, 0, 0), ("links", LIST, 0, 0, 0),
              ("dropped_links_count", FIXED, 4, 0, 0), ("status", STRUCT, 0, 1, 0),
              ("status.message", VAR, 0, 0, 1), ("status.code", FIXED, 4, 0, 0), ("flags", FIXED, 4, 0, 0))),
    ("event", (("time_unix_nano", FIXED, 8, 0, 0), ("name", VAR, 0, 0, 1), ("attributes", LIST, 0, 0, 0),
               ("dropped_attributes_count", FIXED, 4, 0, 0))),
    ("link", (("trace_id", VAR, 0, 0, 0), ("span_id", VAR, 0, 0, 0), ("trace_state", VAR, 0, 0, 1),
              ("attributes", LIST, 0, 0, 0), ("dropped_attributes_count", FIXED, 4, 0, 0),
              ("flags", FIXED, 4, 0, 0))),
) + tuple((f"{owner}.kv", KV_COLS) for owner in ("resource", "scope", "span", "event", "link")) \
  + tuple((f"{owner}.kv.array", (("item", VAR, 0, 0, 0),)) for owner in ("resource", "scope", "span", "event", "link")) \
  + tuple((f"{owner}.kv.kvlist", (("item", VAR, 0, 0, 0),)) for owner in ("resource", "scope", "span", "event", "link"))

# level numbers
cdef enum:
    L_RS, L_ENT, L_ENT_ID, L_ENT_DESC, L_SS, L_SPAN, L_EV, L_LK, L_KV0
cdef enum:  # the five key-value lists (L_KV0 + which), their array and kvlist items after them
    W_RES, W_SCOPE, W_SPAN, W_EVENT, W_LINK, N_KV
cdef enum:
    L_AV0 = L_KV0 + N_KV
    L_KVL0 = L_AV0 + N_KV
    N_LEVELS = L_KVL0 + N_KV
# first column of each of the fixed levels (LEVELS' order, counted by hand; checked at import)
cdef enum:
    C_RS = 0
    C_ENT = C_RS + 6
    C_ENT_ID = C_ENT + 4
    C_ENT_DESC = C_ENT_ID + 1
    C_SS = C_ENT_DESC + 1
    C_SPAN = C_SS + 7
    C_EV = C_SPAN + 18
    C_LK = C_EV + 4
    C_KV0 = C_LK + 6
    C_AV0 = C_KV0 + K_N * N_KV
    C_KVL0 = C_AV0 + N_KV
    N_COLS = C_KVL0 + N_KV

# the errors walk reports
cdef enum:
    E_OK, E_EOF, E_VARINT, E_WIRE, E_UTF8, E_MEM, E_GROUP, E_BIG
ERRORS = {E_EOF: "unexpected EOF", E_VARINT: "invalid varint", E_WIRE: "invalid wire type",
          E_UTF8: "invalid UTF-8", E_MEM: "out of memory", E_GROUP: "unmatched group",
          E_BIG: "a column over 2 GiB in one batch"}

cdef struct State:
    Col cols[N_COLS]
    Level levels[N_LEVELS]
    int err


# --- growing buffers (no Python: all of this runs without the lock) -----------------------

cdef int reserve(void** buf, Py_ssize_t* cap, Py_ssize_t need, Py_ssize_t unit) noexcept nogil:
    cdef Py_ssize_t n = cap[0]
    cdef void* p
    if need <= n:
        return 0
    if n < 64:
        n = 64
    while n < need:
        n *= 2
    p = realloc(buf[0], n * unit)
    if p == NULL:
        return -1
    buf[0] = p
    cap[0] = n
    return 0


cdef int grow(State* st, Level* L) noexcept nogil:
    """Room for twice the rows in each of the level's columns."""
    cdef Py_ssize_t cap = L.cap * 2 if L.cap else 256
    cdef Col* c
    cdef void* p
    cdef int i
    for i in range(L.first, L.last):
        c = &st.cols[i]
        if c.kind == FIXED or c.kind == BOOL:
            p = realloc(c.data, cap * c.width)
            if p == NULL:
                return -1
            c.data = <char*>p
            c.dcap = cap * c.width
        if c.kind == VAR or c.kind == LIST:
            p = realloc(c.offs, (cap + 1) * 4)
            if p == NULL:
                return -1
            c.offs = <int32_t*>p
        if c.nullable:
            p = realloc(c.bits, (cap + 7) >> 3)
            if p == NULL:
                return -1
            c.bits = <uint8_t*>p
    L.cap = cap
    return 0


cdef int open_row(State* st, int lv) noexcept nogil:
    """A new row of level ``lv``: fixed values zero, validity null, strings and lists empty."""
    cdef Level* L = &st.levels[lv]
    cdef Col* c
    cdef int i
    cdef Py_ssize_t r = L.rows
    if r == L.cap and grow(st, L):
        return -1
    for i in range(L.nfixed):
        c = &st.cols[L.fixed[i]]
        if c.width == 8:
            (<uint64_t*>c.data)[r] = 0
        elif c.width == 4:
            (<uint32_t*>c.data)[r] = 0
        else:
            c.data[r] = 0
        c.dlen += c.width
    if (r & 7) == 0:
        for i in range(L.nnullable):
            st.cols[L.nullable[i]].bits[r >> 3] = 0
    L.rows = r + 1
    return 0


cdef void close_row(State* st, int lv) noexcept nogil:
    """The open row of ``lv`` is complete: its strings and lists get their end offsets."""
    cdef Level* L = &st.levels[lv]
    cdef Col* c
    cdef int i
    for i in range(L.nends):
        c = &st.cols[L.ends[i]]
        c.offs[c.olen] = <int32_t>(c.dlen if c.kind == VAR else st.levels[c.child].rows)
        c.olen += 1


# A field is written into its column's open row: the last row of the column's level.

cdef inline void set_valid(Col* c) noexcept nogil:
    cdef Py_ssize_t r = c.level.rows - 1
    c.bits[r >> 3] |= <uint8_t>(1 << (r & 7))


cdef inline void set_null(Col* c) noexcept nogil:
    cdef Py_ssize_t r = c.level.rows - 1
    c.bits[r >> 3] &= <uint8_t>~(1 << (r & 7))


cdef inline void put_fixed(Col* c, const void* v) noexcept nogil:
    memcpy(c.data + (c.level.rows - 1) * c.width, v, c.width)


cdef int put_var(State* st, Col* c, const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """The open row's value (a repeat replaces it: the row's bytes are the column's tail)."""
    cdef Py_ssize_t start = c.offs[c.olen - 1]
    if c.utf8 and not utf8_ok(p, n):
        st.err = E_UTF8
        return -1
    if start + n > 2147483647:  # Arrow's int32 offsets
        st.err = E_BIG
        return -1
    if reserve(<void**>&c.data, &c.dcap, start + n, 1):
        st.err = E_MEM
        return -1
    memcpy(c.data + start, p, n)
    c.dlen = start + n
    return 0


cdef inline void clear_var(Col* c) noexcept nogil:
    c.dlen = c.offs[c.olen - 1]


cdef int utf8_ok(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8 (no overlong forms, surrogates or code points above U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef uint64_t w, w1, w2, w3
    cdef uint8_t c, c1
    while i + 32 <= n:  # ASCII, a word at a time
        memcpy(&w, s + i, 8)
        memcpy(&w1, s + i + 8, 8)
        memcpy(&w2, s + i + 16, 8)
        memcpy(&w3, s + i + 24, 8)
        if ((w | w1 | w2 | w3) & 0x8080808080808080ULL) != 0:
            break
        i += 32
    while i < n:
        if i + 8 <= n:
            memcpy(&w, s + i, 8)
            if (w & 0x8080808080808080ULL) == 0:
                i += 8
                continue
        c = s[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return 0
        elif c < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return 0
            i += 2
        elif c < 0xF0:
            if i + 2 >= n or (s[i + 1] & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
                return 0
            c1 = s[i + 1]
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):
                return 0
            i += 3
        elif c < 0xF5:
            if i + 3 >= n or (s[i + 1] & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
                return 0
            c1 = s[i + 1]
            if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
                return 0
            i += 4
        else:
            return 0
    return 1


# --- the wire format -----------------------------------------------------------------------

cdef struct Cursor:
    const uint8_t* p
    const uint8_t* end


cdef inline int varint(State* st, Cursor* cur, uint64_t* out) noexcept nogil:
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if cur.p >= cur.end:
            st.err = E_EOF
            return -1
        b = cur.p[0]
        cur.p += 1
        if shift == 63 and b > 1:
            st.err = E_VARINT
            return -1
        v |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            out[0] = v
            return 0
        shift += 7
        if shift > 63:
            st.err = E_VARINT
            return -1


cdef inline int fixed(State* st, Cursor* cur, int n, void* out) noexcept nogil:
    if cur.end - cur.p < n:
        st.err = E_EOF
        return -1
    memcpy(out, cur.p, n)
    cur.p += n
    return 0


cdef inline int length(State* st, Cursor* cur, Cursor* sub) noexcept nogil:
    """A length-delimited field: ``sub`` spans its bytes, ``cur`` moves past them."""
    cdef uint64_t n
    if varint(st, cur, &n):
        return -1
    if n > <uint64_t>(cur.end - cur.p):
        st.err = E_EOF
        return -1
    sub.p = cur.p
    sub.end = cur.p + n
    cur.p += n
    return 0


cdef int skip(State* st, Cursor* cur, uint64_t tag, int depth) noexcept nogil:
    """Skip an unknown field (a group to its matching end)."""
    cdef uint64_t v
    cdef Cursor sub
    cdef int wt = tag & 7
    if wt == 0:
        return varint(st, cur, &v)
    if wt == 1:
        return fixed(st, cur, 8, &v)
    if wt == 5:
        return fixed(st, cur, 4, &v)
    if wt == 2:
        return length(st, cur, &sub)
    if wt == 3:
        if depth > 64:
            st.err = E_GROUP
            return -1
        while True:
            if cur.p >= cur.end:
                st.err = E_GROUP
                return -1
            if varint(st, cur, &v):
                return -1
            if (v & 7) == 4:
                if (v >> 3) != (tag >> 3):
                    st.err = E_GROUP
                    return -1
                return 0
            if (v >> 3) == 0 or skip(st, cur, v, depth + 1):
                if st.err == E_OK:
                    st.err = E_WIRE
                return -1
    st.err = E_WIRE  # 4 (an end without a start), 6, 7
    return -1


cdef inline int next_tag(State* st, Cursor* cur, uint64_t* tag) noexcept nogil:
    if varint(st, cur, tag):
        return -1
    if (tag[0] >> 3) == 0 or (tag[0] >> 3) > 536870911:
        st.err = E_WIRE
        return -1
    return 0


# The message parsers: a known field with the wire type it should have is read, anything
# else skipped. VARINT 0, I64 1, LEN 2, I32 5.

cdef int var_field(State* st, Cursor* cur, int col) noexcept nogil:
    cdef Cursor sub
    if length(st, cur, &sub):
        return -1
    return put_var(st, &st.cols[col], sub.p, sub.end - sub.p)


cdef int u32_field(State* st, Cursor* cur, int col) noexcept nogil:
    cdef uint64_t v
    cdef uint32_t x
    if varint(st, cur, &v):
        return -1
    x = <uint32_t>v
    put_fixed(&st.cols[col], &x)
    return 0


cdef int fixed_field(State* st, Cursor* cur, int col, int n) noexcept nogil:
    cdef uint64_t v = 0
    if fixed(st, cur, n, &v):
        return -1
    put_fixed(&st.cols[col], &v)
    return 0


cdef int item(State* st, Cursor* cur, int lv) noexcept nogil:
    """One element of a list of strings / bytes: a row of its one-column level."""
    cdef Cursor sub
    if length(st, cur, &sub):
        return -1
    if open_row(st, lv):
        st.err = E_MEM
        return -1
    if put_var(st, &st.cols[st.levels[lv].first], sub.p, sub.end - sub.p):
        return -1
    close_row(st, lv)
    return 0


cdef int message(State* st, Cursor* cur, int lv, int kind) noexcept nogil:
    """A repeated message field: a row of ``lv`` parsed by its ``kind``."""
    cdef Cursor sub
    cdef int rc
    if length(st, cur, &sub):
        return -1
    if open_row(st, lv):
        st.err = E_MEM
        return -1
    if kind == L_RS:
        rc = resource_spans(st, &sub)
    elif kind == L_SS:
        rc = scope_spans(st, &sub)
    elif kind == L_SPAN:
        rc = span(st, &sub)
    elif kind == L_EV:
        rc = event(st, &sub)
    elif kind == L_LK:
        rc = link(st, &sub)
    elif kind == L_ENT:
        rc = entity(st, &sub)
    else:
        rc = key_value(st, &sub, lv - L_KV0)
    if rc:
        return -1
    close_row(st, lv)
    return 0


cdef int request(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2):
            if message(st, cur, L_RS, L_RS):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int resource_spans(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag, t2
    cdef Cursor sub
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2):  # resource (a repeat merges)
            if length(st, cur, &sub):
                return -1
            set_valid(&st.cols[C_RS])
            while sub.p < sub.end:
                if next_tag(st, &sub, &t2):
                    return -1
                if t2 == (1 << 3 | 2):
                    if message(st, &sub, L_KV0 + W_RES, L_KV0):
                        return -1
                elif t2 == (2 << 3 | 0):
                    if u32_field(st, &sub, C_RS + 2):
                        return -1
                elif t2 == (3 << 3 | 2):
                    if message(st, &sub, L_ENT, L_ENT):
                        return -1
                elif skip(st, &sub, t2, 0):
                    return -1
        elif tag == (2 << 3 | 2):
            if message(st, cur, L_SS, L_SS):
                return -1
        elif tag == (3 << 3 | 2):
            if var_field(st, cur, C_RS + 5):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int entity(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2) or tag == (2 << 3 | 2):
            if var_field(st, cur, C_ENT + <int>(tag >> 3) - 1):
                return -1
        elif tag == (3 << 3 | 2):
            if item(st, cur, L_ENT_ID):
                return -1
        elif tag == (4 << 3 | 2):
            if item(st, cur, L_ENT_DESC):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int scope_spans(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag, t2
    cdef Cursor sub
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2):  # scope (a repeat merges)
            if length(st, cur, &sub):
                return -1
            set_valid(&st.cols[C_SS])
            while sub.p < sub.end:
                if next_tag(st, &sub, &t2):
                    return -1
                if t2 == (1 << 3 | 2) or t2 == (2 << 3 | 2):
                    if var_field(st, &sub, C_SS + <int>(t2 >> 3)):
                        return -1
                elif t2 == (3 << 3 | 2):
                    if message(st, &sub, L_KV0 + W_SCOPE, L_KV0):
                        return -1
                elif t2 == (4 << 3 | 0):
                    if u32_field(st, &sub, C_SS + 4):
                        return -1
                elif skip(st, &sub, t2, 0):
                    return -1
        elif tag == (2 << 3 | 2):
            if message(st, cur, L_SPAN, L_SPAN):
                return -1
        elif tag == (3 << 3 | 2):
            if var_field(st, cur, C_SS + 6):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int span(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag, t2, v
    cdef int32_t code
    cdef Cursor sub
    cdef int f, wt
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        f = <int>(tag >> 3)
        wt = <int>(tag & 7)
        if wt == 2 and (f == 1 or f == 2 or f == 3 or f == 4 or f == 5):  # ids, trace state, name
            if var_field(st, cur, C_SPAN + f - 1):
                return -1
        elif wt == 0 and f == 6:  # kind: an open enum, int32
            if varint(st, cur, &v):
                return -1
            code = <int32_t>v
            put_fixed(&st.cols[C_SPAN + 5], &code)
        elif wt == 1 and (f == 7 or f == 8):
            if fixed_field(st, cur, C_SPAN + f - 1, 8):
                return -1
        elif wt == 2 and f == 9:
            if message(st, cur, L_KV0 + W_SPAN, L_KV0):
                return -1
        elif wt == 0 and (f == 10 or f == 12 or f == 14):
            if u32_field(st, cur, C_SPAN + f - 1):
                return -1
        elif wt == 2 and f == 11:
            if message(st, cur, L_EV, L_EV):
                return -1
        elif wt == 2 and f == 13:
            if message(st, cur, L_LK, L_LK):
                return -1
        elif wt == 2 and f == 15:  # status (a repeat merges)
            if length(st, cur, &sub):
                return -1
            set_valid(&st.cols[C_SPAN + 14])
            while sub.p < sub.end:
                if next_tag(st, &sub, &t2):
                    return -1
                if t2 == (2 << 3 | 2):
                    if var_field(st, &sub, C_SPAN + 15):
                        return -1
                elif t2 == (3 << 3 | 0):
                    if varint(st, &sub, &v):
                        return -1
                    code = <int32_t>v
                    put_fixed(&st.cols[C_SPAN + 16], &code)
                elif skip(st, &sub, t2, 0):
                    return -1
        elif wt == 5 and f == 16:
            if fixed_field(st, cur, C_SPAN + 17, 4):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int event(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 1):
            if fixed_field(st, cur, C_EV, 8):
                return -1
        elif tag == (2 << 3 | 2):
            if var_field(st, cur, C_EV + 1):
                return -1
        elif tag == (3 << 3 | 2):
            if message(st, cur, L_KV0 + W_EVENT, L_KV0):
                return -1
        elif tag == (4 << 3 | 0):
            if u32_field(st, cur, C_EV + 3):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int link(State* st, Cursor* cur) noexcept nogil:
    cdef uint64_t tag
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2) or tag == (2 << 3 | 2) or tag == (3 << 3 | 2):
            if var_field(st, cur, C_LK + <int>(tag >> 3) - 1):
                return -1
        elif tag == (4 << 3 | 2):
            if message(st, cur, L_KV0 + W_LINK, L_KV0):
                return -1
        elif tag == (5 << 3 | 0):
            if u32_field(st, cur, C_LK + 4):
                return -1
        elif tag == (6 << 3 | 5):
            if fixed_field(st, cur, C_LK + 5, 4):
                return -1
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef int key_value(State* st, Cursor* cur, int w) noexcept nogil:
    cdef uint64_t tag, v
    cdef int32_t x
    cdef int base = C_KV0 + w * K_N
    cdef int member = -1  # the AnyValue member set so far
    cdef Cursor sub
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        if tag == (1 << 3 | 2):
            if var_field(st, cur, base + K_KEY):
                return -1
        elif tag == (2 << 3 | 2):  # value (a repeat merges)
            if length(st, cur, &sub):
                return -1
            set_valid(&st.cols[base + K_VAL])
            if any_value(st, &sub, w, base, &member):
                return -1
        elif tag == (3 << 3 | 0):
            if varint(st, cur, &v):
                return -1
            x = <int32_t>v
            put_fixed(&st.cols[base + K_KSI], &x)
        elif skip(st, cur, tag, 0):
            return -1
    return 0


cdef void oneof(State* st, int base, int keep, int* member) noexcept nogil:
    """Set the ``AnyValue`` member ``keep`` (a column offset), clearing the one set before
    in this row (``member``; -1: none)."""
    cdef int k = member[0]
    cdef Col* c
    cdef Col* items
    member[0] = keep
    if k >= 0 and k != keep:
        c = &st.cols[base + k]
        set_null(c)
        if k == K_SV or k == K_BY:
            clear_var(c)
        elif k == K_AV or k == K_KVL:  # drop the elements this row gathered
            items = &st.cols[base + k + 1]
            st.levels[items.child].rows = items.offs[items.olen - 1]
            c = &st.cols[st.levels[items.child].first]
            c.olen = st.levels[items.child].rows + 1
            c.dlen = c.offs[c.olen - 1]
    set_valid(&st.cols[base + keep])


cdef int any_value(State* st, Cursor* cur, int w, int base, int* member) noexcept nogil:
    cdef uint64_t tag, t2, v
    cdef int32_t x
    cdef uint8_t b
    cdef Cursor sub
    cdef int f, lv
    while cur.p < cur.end:
        if next_tag(st, cur, &tag):
            return -1
        f = <int>(tag >> 3)
        if tag == (1 << 3 | 2) or tag == (7 << 3 | 2):
            oneof(st, base, K_SV if f == 1 else K_BY, member)
            if var_field(st, cur, base + (K_SV if f == 1 else K_BY)):
                return -1
        elif tag == (2 << 3 | 0):
            if varint(st, cur, &v):
                return -1
            oneof(st, base, K_BV, member)
            b = v != 0
            put_fixed(&st.cols[base + K_BV], &b)
        elif tag == (3 << 3 | 0):
            if varint(st, cur, &v):
                return -1
            oneof(st, base, K_IV, member)
            put_fixed(&st.cols[base + K_IV], &v)
        elif tag == (4 << 3 | 1):
            oneof(st, base, K_DV, member)
            if fixed_field(st, cur, base + K_DV, 8):
                return -1
        elif tag == (5 << 3 | 2) or tag == (6 << 3 | 2):  # array / kvlist: their elements as bytes
            if length(st, cur, &sub):
                return -1
            oneof(st, base, K_AV if f == 5 else K_KVL, member)
            lv = (L_AV0 if f == 5 else L_KVL0) + w
            while sub.p < sub.end:
                if next_tag(st, &sub, &t2):
                    return -1
                if t2 == (1 << 3 | 2):
                    if item(st, &sub, lv):
                        return -1
                elif skip(st, &sub, t2, 0):
                    return -1
        elif tag == (8 << 3 | 0):
            if varint(st, cur, &v):
                return -1
            oneof(st, base, K_SI, member)
            x = <int32_t>v
            put_fixed(&st.cols[base + K_SI], &x)
        elif skip(st, cur, tag, 0):
            return -1
    return 0


# --- the Python side ---------------------------------------------------------------------

cdef class Owned:
    """A buffer malloc'd here, handed to Arrow without a copy (freed with the last array)."""
    cdef void* ptr
    cdef Py_ssize_t size

    def __getbuffer__(self, Py_buffer* view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr if self.ptr != NULL else <void*>"", self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer* view):
        pass

    def __dealloc__(self):
        free(self.ptr)


cdef object own(void* ptr, Py_ssize_t size):
    cdef Owned o = Owned.__new__(Owned)
    o.ptr = ptr
    o.size = size
    return o


def _layout():
    """[(level name, first column, last column)], for normalize.wire and the check below."""
    out, first = [], 0
    for name, cols in LEVELS:
        out.append((name, first, first + len(cols)))
        first += len(cols)
    return out


LAYOUT = _layout()
assert [first for _, first, _ in LAYOUT[:L_KV0 + 1]] == [C_RS, C_ENT, C_ENT_ID, C_ENT_DESC, C_SS, C_SPAN, C_EV, C_LK,
                                                           C_KV0], "the column constants drifted from LEVELS"
assert LAYOUT[L_AV0][1] == C_AV0 and LAYOUT[L_KVL0][1] == C_KVL0 and LAYOUT[len(LAYOUT) - 1][2] == N_COLS


def _children():
    """Each LIST column's child level: the next level of its owner, by name."""
    names = [name for name, _, _ in LAYOUT]
    kv = {"resource.attributes": "resource.kv", "scope.attributes": "scope.kv"}
    out = {}
    for lv, (name, first, _) in enumerate(LAYOUT):
        for j, spec in enumerate(LEVELS[lv][1]):
            if spec[1] != LIST:
                continue
            col = spec[0]
            if name.endswith(".kv"):
                target = name + (".array" if col.startswith("array") else ".kvlist")
            elif col in kv:
                target = kv[col]
            elif col == "attributes":
                target = {"span": "span.kv", "event": "event.kv", "link": "link.kv"}[name]
            else:
                target = {"resource.entity_refs": "entity", "scope_spans": "ss", "spans": "span", "events": "event",
                          "links": "link", "id_keys": "entity.id_keys",
                          "description_keys": "entity.description_keys"}[col]
            out[first + j] = names.index(target)
    return out


CHILDREN = _children()


def walk(list payloads):
    """The payloads' columns: [(rows, data, offsets, validity)]: first the payloads' own
    (offsets into the resource spans), then every column in LAYOUT's order; each buffer an
    ``Owned`` or None. Raises ValueError(reason, payload index)."""
    cdef Py_ssize_t n = len(payloads), i
    cdef const uint8_t** ptrs = <const uint8_t**>malloc(max(n, 1) * sizeof(void*))
    cdef Py_ssize_t* lens = <Py_ssize_t*>malloc(max(n, 1) * sizeof(Py_ssize_t))
    cdef State* st = <State*>malloc(sizeof(State))
    cdef Col* c
    cdef Cursor cur
    cdef int lv, j, failed = -1
    cdef Py_ssize_t r, rows
    cdef Level* L
    cdef uint8_t* packed
    cdef char flag
    cdef int32_t* roots = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    if ptrs == NULL or lens == NULL or st == NULL or roots == NULL:
        free(ptrs); free(lens); free(st); free(roots)
        raise MemoryError()
    roots[0] = 0
    memset(st, 0, sizeof(State))
    try:
        for lv, (name, first, last) in enumerate(LAYOUT):
            L = &st.levels[lv]
            L.first, L.last = first, last
            for j, spec in enumerate(LEVELS[lv][1]):
                c = &st.cols[first + j]
                c.level = L
                c.kind, c.width, c.nullable, c.utf8 = spec[1], spec[2], spec[3], spec[4]
                c.child = CHILDREN.get(first + j, -1)
                if c.kind == FIXED or c.kind == BOOL:
                    L.fixed[L.nfixed] = first + j
                    L.nfixed += 1
                if c.nullable:
                    L.nullable[L.nnullable] = first + j
                    L.nnullable += 1
                if c.kind == VAR or c.kind == LIST:
                    L.ends[L.nends] = first + j
                    L.nends += 1
            if grow(st, L):
                raise MemoryError()
            for j in range(first, last):
                c = &st.cols[j]
                if c.kind == VAR or c.kind == LIST:
                    c.offs[0] = 0
                    c.olen = 1
        for i in range(n):
            p = payloads[i]
            if type(p) is not bytes:
                raise TypeError(f"payload {i} is {type(p).__name__}, not bytes")
            ptrs[i] = <const uint8_t*>PyBytes_AS_STRING(p)
            lens[i] = PyBytes_GET_SIZE(p)
        with nogil:
            for i in range(n):
                cur.p = ptrs[i]
                cur.end = ptrs[i] + lens[i]
                if request(st, &cur):
                    failed = i
                    break
                roots[i + 1] = <int32_t>st.levels[L_RS].rows
            if failed < 0:  # booleans to bits, in place
                for j in range(N_COLS):
                    c = &st.cols[j]
                    if c.kind == BOOL:
                        packed = <uint8_t*>c.data
                        for r in range(c.level.rows):
                            flag = c.data[r]  # read before its byte is overwritten
                            if (r & 7) == 0:
                                packed[r >> 3] = 0
                            if flag:
                                packed[r >> 3] |= <uint8_t>(1 << (r & 7))
        if failed >= 0:
            raise ValueError(f"failed to decode Protobuf message: {ERRORS.get(st.err, st.err)}", failed)
        out = [(n, None, own(roots, (n + 1) * 4), None)]
        roots = NULL
        for j in range(N_COLS):
            c = &st.cols[j]
            rows = c.level.rows
            out.append((rows,
                        own(c.data, c.dlen if c.kind != BOOL else (rows + 7) >> 3) if c.data != NULL else None,
                        own(c.offs, c.olen * 4) if c.offs != NULL else None,
                        own(c.bits, (rows + 7) >> 3) if c.bits != NULL else None))
            c.data = NULL
            c.offs = NULL
            c.bits = NULL
        return out
    finally:
        for j in range(N_COLS):
            free(st.cols[j].data)
            free(st.cols[j].offs)
            free(st.cols[j].bits)
        free(st)
        free(ptrs)
        free(lens)
        free(roots)
