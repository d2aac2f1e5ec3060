/* The literal prefilter of the message patterns (kitlib/extract/prefilter.py): which rows of an
 * Arrow string array hold one of a few literal texts, in one pass over the array's bytes.
 *
 * A multi-literal search in the manner of Wu and Manber: with m the length of the shortest
 * literal, a window of m bytes slides along each row; the two bytes at the window's end (case
 * folded, lossily: every byte OR 0x20) index a table of how far the window may move before any
 * literal could end in it. Only a shift of 0 (the two bytes end the first m bytes of some literal)
 * costs a comparison of the literals of that pair with the text. Rows are independent: a literal
 * never runs across a row's end. With fold, the comparison folds ASCII letters (the literals are
 * given lower-cased) and a row holding any byte >= 0x80 is a candidate without a search (RE2's
 * case folding reaches a few characters outside ASCII). A null row is not a candidate.
 *
 * Where the processor has SSSE3, a second search is used instead (in the manner of Hyperscan's
 * "Teddy"): the literals are put in 8 buckets (16, in two banks, for more than 8 literals); for
 * each of three bytes of a literal (its anchor: the three that look rarest in log text), two tables
 * of 16 bytes (by the low and the high half of a byte) hold the buckets whose literals may have
 * that byte there; 16 positions at a time, a byte shuffle looks up each table and the bucket bits
 * left after the six lookups are ANDed name the literals to compare at each position.
 * Wu-Manber's next position waits for its table lookup; these lookups do not wait for each
 * other. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAXM 64 /* windows longer than this gain nothing more: the shift is capped by it */
#define NKEYS 65536
#define MAGIC 0x4c495431u


static inline unsigned char fold1(unsigned char c) { return (c >= 'A' && c <= 'Z') ? (unsigned char)(c | 0x20) : c; }

typedef struct {
    uint32_t magic, m, fold, nlit, nbucket, three; /* three: keys of 3 bytes (m >= 5), else of 2 */
} Head;

typedef struct {
    uint32_t key, start, count;
} Bucket; /* the literals (by index, sorted by key) whose window of m bytes ends with ``key`` */

typedef struct {
    uint32_t off, len, anchor; /* anchor: where in the literal the three bytes Teddy looks for start */
} Lit;

/* how common a byte is in log text (a rough rank: spaces and common letters high), to put a
 * literal's Teddy anchor on its rarest three bytes */
static int common(unsigned char c) {
    static const char freq[] = "etaoinsrhlcdmupfgwybvkxjqz";
    if (c == ' ')
        return 30;
    c = fold1(c);
    const char *at = c ? strchr(freq, c) : NULL;
    if (at)
        return 26 - (int)(at - freq);
    if (c >= '0' && c <= '9')
        return 12;
    if (c == '.' || c == ',' || c == '-' || c == '=' || c == ':' || c == '_' || c == '/')
        return 10;
    return 4;
}

typedef struct {
    unsigned char lo[2][3][16], hi[2][3][16]; /* bucket bits by bank (buckets 0-7, 8-15), position (0-2) and
                                                 half of a byte */
    uint32_t start[17];                       /* the literals of bucket b: order[start[b] .. start[b + 1]] */
    uint32_t banks;                           /* 1: 8 buckets (at most 8 literals), 2: 16 */
} Teddy;

/* the table: Head, uint8 shift[NKEYS], Bucket[nbucket], Lit[nlit], Teddy, uint32 order[nlit] (the
 * literals by Teddy's bucket), then the literals' bytes */

/* the key of the bytes just before ``end``: two of them (for windows of at most 4 bytes) as they
 * are, else three, hashed; both folded lossily (OR 0x20, which maps the two cases of a letter
 * together, and some other pairs of bytes too: only a shift that is too small follows from it) */
static inline uint32_t key_at(const unsigned char *end, int three) {
    if (!three)
        return (uint32_t)(end[-2] | 0x20) | ((uint32_t)(end[-1] | 0x20) << 8);
    uint32_t x = (uint32_t)end[-3] | ((uint32_t)end[-2] << 8) | ((uint32_t)end[-1] << 16);
    return ((x | 0x202020u) * 2654435761u) >> 16;
}


static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static PyObject *compile(PyObject *self, PyObject *args) {
    PyObject *seq;
    int fold;
    if (!PyArg_ParseTuple(args, "Op", &seq, &fold))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "literals: a sequence of bytes");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n < 1 || n > 100000) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "literals: 1 to 100000 of them");
        return NULL;
    }
    Py_ssize_t total = 0, m = MAXM;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyBytes_Check(b)) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_TypeError, "literals: bytes");
            return NULL;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(b);
        if (len < 3 || len > 0x7fffffff) {
            Py_DECREF(fast);
            PyErr_SetString(PyExc_ValueError, "literals: each at least 3 bytes");
            return NULL;
        }
        total += len;
        if (len < m)
            m = len;
    }
    size_t nkey = (size_t)n;
    uint64_t *order = PyMem_Malloc(nkey * sizeof *order); /* key << 32 | index, sorted */
    Bucket *buckets = PyMem_Malloc(nkey * sizeof *buckets);
    size_t size = sizeof(Head) + NKEYS + nkey * sizeof(Bucket) + nkey * sizeof(Lit) + sizeof(Teddy) +
                  nkey * sizeof(uint32_t) + (size_t)total;
    PyObject *out = (order && buckets) ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size) : NULL;
    if (!out) {
        PyMem_Free(order), PyMem_Free(buckets);
        Py_DECREF(fast);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    unsigned char *base = (unsigned char *)PyBytes_AS_STRING(out);
    memset(base, 0, size);
    unsigned char *shift = base + sizeof(Head);
    const int three = m >= 5, width = three ? 3 : 2;
    memset(shift, (int)(m - width + 1), NKEYS);
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *t = (const unsigned char *)PyBytes_AS_STRING(PySequence_Fast_GET_ITEM(fast, i));
        for (Py_ssize_t q = width; q <= m; q++) { /* the key of the bytes before t + q: a window m - q on */
            uint32_t k = key_at(t + q, three);
            if (shift[k] > m - q)
                shift[k] = (unsigned char)(m - q);
        }
        order[i] = ((uint64_t)key_at(t + m, three) << 32) | (uint64_t)i;
    }
    qsort(order, nkey, sizeof *order, u64_cmp);
    size_t nb = 0;
    for (size_t j = 0; j < nkey; j++) {
        uint32_t k = (uint32_t)(order[j] >> 32);
        if (!nb || buckets[nb - 1].key != k)
            buckets[nb++] = (Bucket){k, (uint32_t)j, 0};
        buckets[nb - 1].count++;
    }
    Head h = {MAGIC, (uint32_t)m, (uint32_t)(fold != 0), (uint32_t)n, (uint32_t)nb, (uint32_t)three};
    memcpy(base, &h, sizeof h);
    memcpy(shift + NKEYS, buckets, nb * sizeof(Bucket));
    Lit *lits = (Lit *)(shift + NKEYS + nkey * sizeof(Bucket));
    Teddy *teddy = (Teddy *)(lits + nkey);
    uint32_t *tord = (uint32_t *)(teddy + 1);
    unsigned char *bytes = (unsigned char *)(tord + nkey);
    size_t at = 0;
    for (size_t j = 0; j < nkey; j++) {
        PyObject *b = PySequence_Fast_GET_ITEM(fast, (Py_ssize_t)(uint32_t)order[j]);
        size_t len = (size_t)PyBytes_GET_SIZE(b);
        memcpy(bytes + at, PyBytes_AS_STRING(b), len);
        if (fold)
            for (size_t c = 0; c < len; c++)
                bytes[at + c] = fold1(bytes[at + c]);
        size_t anchor = 0;
        int best = 1 << 30;
        for (size_t a = 0; a + 3 <= len; a++) {
            int score = common(bytes[at + a]) + common(bytes[at + a + 1]) + common(bytes[at + a + 2]);
            if (score < best)
                best = score, anchor = a;
        }
        lits[j] = (Lit){(uint32_t)at, (uint32_t)len, (uint32_t)anchor};
        at += len;
    }
    /* Teddy's buckets: the literals in the order of their first three bytes (folded), cut in 8 runs */
    for (size_t j = 0; j < nkey; j++) {
        const unsigned char *t = bytes + lits[j].off + lits[j].anchor;
        order[j] = ((uint64_t)(fold1(t[0]) << 16 | fold1(t[1]) << 8 | fold1(t[2])) << 32) | (uint64_t)j;
    }
    qsort(order, nkey, sizeof *order, u64_cmp);
    const int nbuckets = nkey > 8 ? 16 : 8;
    teddy->banks = (uint32_t)(nbuckets / 8);
    for (int b = 0; b <= nbuckets; b++)
        teddy->start[b] = (uint32_t)((nkey * (size_t)b) / (size_t)nbuckets);
    for (int b = nbuckets + 1; b <= 16; b++)
        teddy->start[b] = (uint32_t)nkey;
    for (int b = 0; b < nbuckets; b++)
        for (uint32_t j = teddy->start[b]; j < teddy->start[b + 1]; j++) {
            uint32_t i = (uint32_t)order[j];
            tord[j] = i;
            for (int k = 0; k < 3; k++) {
                unsigned char c = bytes[lits[i].off + lits[i].anchor + k];
                const int bank = b / 8;
                const unsigned char bit = (unsigned char)(1u << (b % 8));
                teddy->lo[bank][k][c & 15] |= bit;
                teddy->hi[bank][k][c >> 4] |= bit;
                if (fold && c >= 'a' && c <= 'z') /* the upper case letter: the same low half */
                    teddy->hi[bank][k][(c - 32) >> 4] |= bit;
            }
        }
    PyMem_Free(order), PyMem_Free(buckets);
    Py_DECREF(fast);
    return out;
}

typedef struct {
    const Head *h;
    const unsigned char *shift;
    const Bucket *buckets;
    const Lit *lits;
    const Teddy *teddy;
    const uint32_t *tord;
    const unsigned char *bytes;
} Table;

static int same(const unsigned char *p, const unsigned char *lit, uint32_t len, int fold) {
    if (!fold)
        return memcmp(p, lit, len) == 0;
    for (uint32_t i = 0; i < len; i++)
        if (fold1(p[i]) != lit[i])
            return 0;
    return 1;
}

static const Bucket *bucket(const Table *t, uint32_t key) {
    size_t lo = 0, hi = t->h->nbucket;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->buckets[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->h->nbucket && t->buckets[lo].key == key ? &t->buckets[lo] : NULL;
}

/* whether text[0:n] holds one of the literals */
static int holds(const Table *t, const unsigned char *text, size_t n) {
    const size_t m = t->h->m;
    const int fold = (int)t->h->fold, three = (int)t->h->three;
    if (n < m)
        return 0;
    const unsigned char *end = text + n, *shift = t->shift;
    const unsigned char *p = text + m; /* the window is p - m .. p */
    while (p <= end) {
        uint32_t k = key_at(p, three);
        unsigned s = shift[k];
        if (s) {
            p += s;
            continue;
        }
        const Bucket *b = bucket(t, k);
        if (b) {
            const unsigned char *start = p - m;
            for (uint32_t j = b->start; j < b->start + b->count; j++) {
                const Lit *l = &t->lits[j];
                if ((size_t)(end - start) >= l->len && same(start, t->bytes + l->off, l->len, fold))
                    return 1;
            }
        }
        p++;
    }
    return 0;
}

/* whether one of the literals of the buckets ``bits`` has its anchor at p (in text .. end) */
static int teddy_verify(const Table *t, unsigned bits, const unsigned char *p, const unsigned char *text,
                        const unsigned char *end) {
    const int fold = (int)t->h->fold;
    while (bits) {
        int b = __builtin_ctz(bits);
        bits &= bits - 1;
        for (uint32_t j = t->teddy->start[b]; j < t->teddy->start[b + 1]; j++) {
            const Lit *l = &t->lits[t->tord[j]];
            if ((size_t)(p - text) >= l->anchor && (size_t)(end - (p - l->anchor)) >= l->len &&
                same(p - l->anchor, t->bytes + l->off, l->len, fold))
                return 1;
        }
    }
    return 0;
}

/* Teddy's buckets at one position, without SIMD (the bytes p[0..2] must be readable) */
static inline unsigned teddy_at(const Teddy *d, const unsigned char *p) {
    unsigned bits = 0;
    for (uint32_t k = 0; k < d->banks; k++)
        bits |= (unsigned)(d->lo[k][0][p[0] & 15] & d->hi[k][0][p[0] >> 4] & d->lo[k][1][p[1] & 15] &
                           d->hi[k][1][p[1] >> 4] & d->lo[k][2][p[2] & 15] & d->hi[k][2][p[2] >> 4])
                << (8 * k);
    return bits;
}

#define TEDDY_BANK(d, k, v0, v1, v2, low)                                                                           \
    _mm_and_si128(                                                                                                  \
        _mm_and_si128(                                                                                              \
            _mm_and_si128(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->lo[k][0]), _mm_and_si128(v0, low)), \
                          _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->hi[k][0]),                          \
                                           _mm_and_si128(_mm_srli_epi16(v0, 4), low))),                              \
            _mm_and_si128(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->lo[k][1]), _mm_and_si128(v1, low)), \
                          _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->hi[k][1]),                          \
                                           _mm_and_si128(_mm_srli_epi16(v1, 4), low)))),                             \
        _mm_and_si128(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->lo[k][2]), _mm_and_si128(v2, low)),     \
                      _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(d)->hi[k][2]),                              \
                                       _mm_and_si128(_mm_srli_epi16(v2, 4), low))))

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_TEDDY 1

/* text[0:n] holds one of the literals; the bytes up to limit (the data buffer's end) may be read */
__attribute__((target("ssse3"))) static int teddy_holds(const Table *t, const unsigned char *text, size_t n,
                                                        const unsigned char *limit) {
    const size_t m = t->h->m;
    if (n < m)
        return 0;
    const Teddy *d = t->teddy;
    const unsigned char *end = text + n, *last = end - 3; /* the last position an anchor may start */
    const __m128i low = _mm_set1_epi8(0x0f), zero = _mm_setzero_si128();
    const int two = d->banks == 2;
    const unsigned char *p = text;
    for (; p <= last && p + 18 <= limit; p += 16) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)p), v1 = _mm_loadu_si128((const __m128i *)(p + 1)),
                v2 = _mm_loadu_si128((const __m128i *)(p + 2));
        __m128i r = TEDDY_BANK(d, 0, v0, v1, v2, low), r2 = zero;
        if (two)
            r2 = TEDDY_BANK(d, 1, v0, v1, v2, low);
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_or_si128(r, r2), zero)) ^ 0xffffu;
        if (!mask)
            continue;
        size_t room = (size_t)(last - p) + 1; /* positions p .. last */
        if (room < 16)
            mask &= (1u << room) - 1;
        unsigned char bits[16], bits2[16];
        _mm_storeu_si128((__m128i *)bits, r);
        _mm_storeu_si128((__m128i *)bits2, r2);
        while (mask) {
            int j = __builtin_ctz(mask);
            mask &= mask - 1;
            if (teddy_verify(t, bits[j] | (unsigned)bits2[j] << 8, p + j, text, end))
                return 1;
        }
    }
    for (; p <= last; p++) { /* (near the end of the data: one position at a time) */
        unsigned bits = teddy_at(d, p);
        if (bits && teddy_verify(t, bits, p, text, end))
            return 1;
    }
    return 0;
}
#endif

static int wide(const unsigned char *p, size_t n) {
    size_t i = 0;
    uint64_t acc = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        acc |= x;
    }
    for (; i < n; i++)
        acc |= p[i];
    return (acc & 0x8080808080808080ULL) != 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *table_o, *off_o, *data_o, *valid_o, *out_o;
    Py_ssize_t offset, length;
    int large, method = -1;
    if (!PyArg_ParseTuple(args, "OOOOnnpO|i", &table_o, &off_o, &data_o, &valid_o, &offset, &length, &large, &out_o,
                          &method))
        return NULL;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset, length: not negative");
        return NULL;
    }
    Py_buffer tv, ov, dv, vv, outv;
    int have_valid = valid_o != Py_None;
    if (PyObject_GetBuffer(table_o, &tv, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(off_o, &ov, PyBUF_SIMPLE) < 0)
        goto fail_t;
    if (PyObject_GetBuffer(data_o, &dv, PyBUF_SIMPLE) < 0)
        goto fail_o;
    if (have_valid && PyObject_GetBuffer(valid_o, &vv, PyBUF_SIMPLE) < 0)
        goto fail_d;
    if (PyObject_GetBuffer(out_o, &outv, PyBUF_WRITABLE) < 0)
        goto fail_v;
    Table t;
    t.h = (const Head *)tv.buf;
    size_t width = large ? 8 : 4;
    if ((size_t)tv.len < sizeof(Head) + NKEYS || t.h->magic != MAGIC ||
        (size_t)tv.len < sizeof(Head) + NKEYS + sizeof(Teddy) +
                             (size_t)t.h->nlit * (sizeof(Bucket) + sizeof(Lit) + sizeof(uint32_t))) {
        PyErr_SetString(PyExc_ValueError, "table: not one compile() made");
        goto fail;
    }
    if ((size_t)ov.len < ((size_t)offset + (size_t)length + 1) * width ||
        (have_valid && (size_t)vv.len * 8 < (size_t)offset + (size_t)length) || outv.len < length) {
        PyErr_SetString(PyExc_ValueError, "buffers: too short for offset and length");
        goto fail;
    }
    t.shift = (const unsigned char *)tv.buf + sizeof(Head);
    t.buckets = (const Bucket *)(t.shift + NKEYS);
    t.lits = (const Lit *)(t.buckets + t.h->nlit);
    t.teddy = (const Teddy *)(t.lits + t.h->nlit);
    t.tord = (const uint32_t *)(t.teddy + 1);
    t.bytes = (const unsigned char *)(t.tord + t.h->nlit);
    /* method: 0 Wu-Manber, 1 or -1 (default) Teddy where the processor can run it (the faster) */
    int simd = 0;
#ifdef HAVE_TEDDY
    simd = method != 0 && __builtin_cpu_supports("ssse3");
#endif
    const unsigned char *limit = (const unsigned char *)dv.buf + dv.len;
    const unsigned char *data = (const unsigned char *)dv.buf, *valid = have_valid ? vv.buf : NULL;
    const unsigned char *offs = (const unsigned char *)ov.buf;
    unsigned char *out = (unsigned char *)outv.buf;
    Py_ssize_t hits = 0;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS;
    int64_t prev = 0;
    for (Py_ssize_t i = 0; i <= length; i++) {
        size_t k = (size_t)(offset + i);
        int64_t o;
        if (large)
            memcpy(&o, offs + k * 8, 8);
        else {
            int32_t o32;
            memcpy(&o32, offs + k * 4, 4);
            o = o32;
        }
        if (i) {
            unsigned char hit = 0;
            if (o < prev || prev < 0 || o > (int64_t)dv.len)
                bad = 1, hit = 1; /* (not a valid array: every row is a candidate) */
            else if (valid && !((valid[(k - 1) >> 3] >> ((k - 1) & 7)) & 1))
                hit = 0;
            else {
                const unsigned char *p = data + prev;
                size_t n = (size_t)(o - prev);
#ifdef HAVE_TEDDY
                if (simd)
                    hit = (unsigned char)((t.h->fold && wide(p, n)) || teddy_holds(&t, p, n, limit));
                else
#endif
                    hit = (unsigned char)((t.h->fold && wide(p, n)) || holds(&t, p, n));
            }
            out[i - 1] = hit;
            hits += hit;
        }
        prev = o;
    }
    Py_END_ALLOW_THREADS;
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "offsets: not those of a valid string array");
        goto fail;
    }
    PyBuffer_Release(&outv);
    if (have_valid)
        PyBuffer_Release(&vv);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&tv);
    return PyLong_FromSsize_t(hits);
fail:
    PyBuffer_Release(&outv);
fail_v:
    if (have_valid)
        PyBuffer_Release(&vv);
fail_d:
    PyBuffer_Release(&dv);
fail_o:
    PyBuffer_Release(&ov);
fail_t:
    PyBuffer_Release(&tv);
    return NULL;
}

static PyMethodDef METHODS[] = {
    {"compile", compile, METH_VARARGS,
     "compile(literals: list[bytes], fold: bool) -> bytes: the search table of the literals (each at least 3 bytes; "
     "with fold, given lower-cased)"},
    {"scan", scan, METH_VARARGS,
     "scan(table, offsets, data, valid, offset, length, large, out, method=-1) -> int: out[i] = 1 where row i of the "
     "string array (its buffers; valid None for no nulls; large: 64-bit offsets) holds a literal (with fold, or a byte "
     ">= 0x80), 0 elsewhere and where the row is null; returns how many rows are 1. method: 0 the Wu-Manber search, "
     "1 the SIMD one (where the processor has SSSE3), -1 the faster there is"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_prefilter", "Compiled literal prefilter.", -1, METHODS};

PyMODINIT_FUNC PyInit__prefilter(void) { return PyModule_Create(&MODULE); }
