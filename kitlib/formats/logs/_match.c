/*
 * Template matching in compiled code: the hot loops of kitlib/formats/logs/matching.py.
 *
 * Each template of the catalogue is an RE2 pattern there (``template_regex``): an optional prefix
 * on the first line ending in one of ``]:,)>`` and a space, the template's literal pieces with each
 * run of blanks as ``\s+``, a lazy wildcard (any character, newlines too) for each slot, then
 * blanks up to a newline or the end of the text. This file decides the same question (does the
 * text match the pattern?) by searching for the literal pieces directly, and finds each record's
 * candidate templates by its words, as the Python path does with Arrow's kernels. The Python path
 * stays the reference; the tests hold the two equal, and compare this search with RE2's.
 *
 * load(pieces, vocab, key_order, key_bounds, pairs, ntemplates) takes the compiled catalogue once
 * per process; keys(), verify(), assign() and lookup() read texts from the buffers of an Arrow
 * large_string array (int64 offsets, UTF-8 data) and release the GIL while they run. block() runs
 * every step of matching.py's _assign_compiled for one block in one call, with the memos of texts
 * and of shapes kept here (one block at a time: a lock).
 */
#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef unsigned char uc;
typedef Py_ssize_t ssize;

#define WS 0 /* a byte of a piece's program: a run of blanks (RE2's \s+) */
#define MATCH_CHARS 4096 /* characters of a text a template is matched on */
#define KEY_CHARS 512    /* characters of a text searched for key words */

typedef struct {
    const uc *p; /* the program: literal bytes, WS for a run of blanks */
    ssize len;
    ssize minlen; /* fewest text bytes it can match */
    ssize lit;    /* length of its leading literal run (0: it starts with WS or is empty) */
} Piece;

typedef struct {
    Piece *pieces;
    int n;
    int digits; /* a digit among its literal text: it tells one digit from another */
} Tmpl;

static Tmpl *TMPL;
static int NT;
static PyObject *KEEP; /* the bytes the pieces point into */
static int64_t *KEY_ORDER, *KEY_BOUNDS, *PAIRS;
static ssize NPAIRS, NVOCAB;
/* the key words: open addressing on a hash of the word, slot -> key index + 1 */
static const uc **VOC;
static ssize *VOC_LEN;
static int32_t *VSLOT;
static uint64_t VMASK;

static inline int blank(uc c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }
static inline int alnum(uc c) { return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z'); }

static inline uint64_t fmix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* a word's hash from its length and its first and last eight bytes (fewer: four and four, or one
 * at a time), whatever its length: a text's words are looked up among the key words by it, the
 * word itself compared after */
static inline uint64_t word_hash(const uc *p, ssize n) {
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, p, 4);
        memcpy(&y, p + n - 4, 4);
        a = x;
        b = y;
    } else
        for (ssize i = 0; i < n; i++)
            a = a << 8 | p[i];
    return fmix((a * 0x9E3779B97F4A7C15ULL) ^ fmix(b ^ ((uint64_t)n << 56)));
}

static ssize chars_end_fast(const uc *t, ssize n, ssize chars);

/* the piece matched at q: its end, or -1. A run of blanks followed by a literal takes the whole
 * run (the literal starts with a non-blank); one at the piece's end takes one blank (a wildcard
 * follows it, which can take the rest). */
static ssize piece_at(const uc *t, ssize n, ssize q, const Piece *P) {
    const uc *p = P->p;
    ssize i = 0, m = P->len;
    while (i < m) {
        if (p[i] == WS) {
            if (q >= n || !blank(t[q]))
                return -1;
            q++;
            if (i + 1 < m)
                while (q < n && blank(t[q]))
                    q++;
            i++;
        } else {
            ssize j = i;
            while (j < m && p[j] != WS)
                j++;
            if (q + (j - i) > n || memcmp(t + q, p + i, (size_t)(j - i)) != 0)
                return -1;
            q += j - i;
            i = j;
        }
    }
    return q;
}

/* the next position >= q where the piece may start (its leading literal found there, or a blank) */
static inline ssize next_start(const uc *t, ssize n, ssize q, const Piece *P) {
    if (q > n)
        return -1;
    if (P->lit) {
        const uc *f = memmem(t + q, (size_t)(n - q), P->p, (size_t)P->lit);
        return f ? f - t : -1;
    }
    while (q < n && !blank(t[q]))
        q++;
    return q < n ? q : -1;
}

/* blanks from e up to a newline or the end of the text */
static inline int ends_line(const uc *t, ssize n, ssize e) {
    while (e < n && blank(t[e])) {
        if (t[e] == '\n')
            return 1;
        e++;
    }
    return e == n;
}

/* the earliest end of the piece matched anywhere from q on, or -1 */
static ssize earliest_end(const uc *t, ssize n, ssize q, const Piece *P) {
    if (P->len == 0)
        return q;
    ssize best = -1;
    for (ssize s = next_start(t, n, q, P); s >= 0; s = next_start(t, n, s + 1, P)) {
        if (best >= 0 && s + P->minlen >= best)
            break;
        ssize e = piece_at(t, n, s, P);
        if (e >= 0 && (best < 0 || e < best))
            best = e;
    }
    return best;
}

/* does text t[0..n) match template T (see template_regex in matching.py)? */
static int match(const uc *t, ssize n, const Tmpl *T) {
    const Piece *first = &T->pieces[0];
    int k = T->n - 1;
    ssize best = -1;
    /* where the first piece may start: 0, or after one of ]:,)> and a space on the first line */
    for (ssize s = 0, j = 0;;) {
        if (k > 0 && best >= 0 && s >= best)
            break;
        ssize e = piece_at(t, n, s, first);
        if (e >= 0) {
            if (k == 0) {
                if (ends_line(t, n, e))
                    return 1;
            } else if (best < 0 || e < best)
                best = e;
        }
        for (; j + 1 < n && t[j] != '\n'; j++) {
            uc c = t[j];
            if ((c == ']' || c == ':' || c == ',' || c == ')' || c == '>') && t[j + 1] == ' ')
                break;
        }
        if (j + 1 >= n || t[j] == '\n') /* (j + 1 < n holds before t[j] is read) */
            break;
        s = j + 2;
        j++;
    }
    if (k == 0 || best < 0)
        return 0;
    ssize cur = best;
    for (int i = 1; i < k; i++) {
        cur = earliest_end(t, n, cur, &T->pieces[i]);
        if (cur < 0)
            return 0;
    }
    const Piece *last = &T->pieces[k];
    if (last->len == 0)
        return 1; /* a wildcard then the end of the text */
    for (ssize s = next_start(t, n, cur, last); s >= 0; s = next_start(t, n, s + 1, last)) {
        ssize e = piece_at(t, n, s, last);
        if (e >= 0 && ends_line(t, n, e))
            return 1;
    }
    return 0;
}

static inline int64_t vocab_index(const uc *w, ssize n) {
    uint64_t i = word_hash(w, n) & VMASK;
    for (;; i = (i + 1) & VMASK) {
        int32_t v = VSLOT[i];
        if (v == 0)
            return -1;
        if (VOC_LEN[v - 1] == n && memcmp(VOC[v - 1], w, (size_t)n) == 0)
            return v - 1;
    }
}

static inline int has_pair(int64_t code) {
    ssize lo = 0, hi = NPAIRS;
    while (lo < hi) {
        ssize mid = (lo + hi) / 2;
        if (PAIRS[mid] < code)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < NPAIRS && PAIRS[lo] == code;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the template of one text: its logger's own candidates first (most literal text first), then, for
 * a Kafka logger, every other candidate; -1 for none. `cand` has room for every template. */
static int64_t assign1(const uc *t, ssize n, int64_t glog, int kafka, int64_t *cand) {
    ssize kn = chars_end_fast(t, n, KEY_CHARS), nc = 0;
    for (ssize i = 0; i < kn;) {
        if (!alnum(t[i])) {
            i++;
            continue;
        }
        ssize j = i;
        while (j < kn && alnum(t[j]))
            j++;
        int64_t k = vocab_index(t + i, j - i);
        if (k >= 0)
            for (int64_t a = KEY_BOUNDS[k]; a < KEY_BOUNDS[k + 1]; a++)
                cand[nc++] = KEY_ORDER[a];
        i = j;
        if (nc > NT) { /* a key word met again: keep each template once */
            qsort(cand, (size_t)nc, sizeof *cand, cmp64);
            ssize u = 0;
            for (ssize a = 0; a < nc; a++)
                if (u == 0 || cand[a] != cand[u - 1])
                    cand[u++] = cand[a];
            nc = u;
        }
    }
    if (!nc)
        return -1;
    if (nc <= 32) /* the common few: sorted in place */
        for (ssize a = 1; a < nc; a++) {
            int64_t v = cand[a];
            ssize b = a;
            for (; b > 0 && cand[b - 1] > v; b--)
                cand[b] = cand[b - 1];
            cand[b] = v;
        }
    else
        qsort(cand, (size_t)nc, sizeof *cand, cmp64);
    ssize mn = chars_end_fast(t, n, MATCH_CHARS);
    for (int round = 0; round < 2; round++) {
        if (round == 1 && !kafka)
            break;
        int64_t prev = -1;
        for (ssize a = 0; a < nc; a++) {
            int64_t c = cand[a];
            if (c == prev)
                continue;
            prev = c;
            int own = glog >= 0 && has_pair(glog * NT + c);
            if (own != (round == 0))
                continue;
            if (match(t, mn, &TMPL[c]))
                return c;
        }
    }
    return -1;
}

typedef struct {
    Py_buffer off, data;
    const int64_t *o;
    const uc *d;
    ssize n; /* texts */
} Texts;

static int texts_get(Texts *x, PyObject *off, PyObject *data) {
    memset(x, 0, sizeof *x);
    if (PyObject_GetBuffer(off, &x->off, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(data, &x->data, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&x->off);
        return -1;
    }
    x->o = x->off.buf;
    x->d = x->data.buf;
    x->n = x->off.len / 8 - 1;
    if (x->n < 0)
        x->n = 0;
    /* every offset inside the data and none below the one before it: each text is read up to its
     * own next offset, so the first and last alone do not bound the texts between them */
    for (ssize i = 0; i <= x->n && x->n; i++) {
        if (x->o[i] < 0 || x->o[i] > x->data.len || (i && x->o[i] < x->o[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "offsets outside the data or decreasing");
            PyBuffer_Release(&x->off);
            PyBuffer_Release(&x->data);
            return -1;
        }
    }
    return 0;
}

static void texts_release(Texts *x) {
    PyBuffer_Release(&x->off);
    PyBuffer_Release(&x->data);
}

static int rows_get(Py_buffer *b, PyObject *o, ssize n_texts, ssize *nrows) {
    if (PyObject_GetBuffer(o, b, PyBUF_SIMPLE) < 0)
        return -1;
    *nrows = b->len / 8;
    const int64_t *r = b->buf;
    for (ssize i = 0; i < *nrows; i++)
        if (r[i] < 0 || r[i] >= n_texts) {
            PyErr_SetString(PyExc_IndexError, "row out of range");
            PyBuffer_Release(b);
            return -1;
        }
    return 0;
}

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

/* 0x80 in each byte of w that is an ASCII digit */
static inline uint64_t digit_bytes(uint64_t w) {
    uint64_t lo = w & ~HIGH;
    return ((lo + 0x50 * ONES) & ~(lo + 0x46 * ONES) & ~w & HIGH);
}

static inline uint64_t load8(const uc *p, ssize n) {
    uint64_t w = 0;
    memcpy(&w, p, (size_t)(n < 8 ? n : 8));
    return w;
}

/* byte length of the first `chars` characters, counted eight bytes at a time */
static ssize chars_end_fast(const uc *t, ssize n, ssize chars) {
    if (n <= chars)
        return n;
    ssize i = 0, seen = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w = load8(t + i, 8);
        uint64_t cont = w & ~(w << 1) & HIGH; /* bytes 10xxxxxx */
        ssize c = 8 - __builtin_popcountll(cont);
        if (seen + c > chars)
            break;
        seen += c;
    }
    for (; i < n; i++)
        if ((t[i] & 0xC0) != 0x80 && seen++ == chars)
            return i;
    return n;
}

/* a text's shape: its first `chars` characters with ASCII digits left out, hashed (bytes packed into
 * words, eight at a time where they are ASCII without a digit) */
static inline uint64_t shape_hash(const uc *t, ssize n, ssize chars) {
    uint64_t v = 0x9E3779B97F4A7C15ULL, acc = 0;
    int k = 0;
    ssize seen = 0, kept = 0, j = 0;
    while (j < n) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (j + 8 <= n && seen + 8 <= chars) {
            uint64_t w = load8(t + j, 8);
            uint64_t d = digit_bytes(w);
            if (!(w & HIGH) && !d) {
                uint64_t full = acc | (k ? w << (8 * k) : w);
                v = (v ^ full) * 0x9FB21C651E98DF25ULL;
                v ^= v >> 29;
                acc = k ? w >> (64 - 8 * k) : 0;
                j += 8;
                seen += 8;
                kept += 8;
                continue;
            }
            if (!(w & HIGH)) { /* ASCII with digits: the other bytes, one by one */
                for (uint64_t keep = ~d & HIGH; keep; keep &= keep - 1) {
                    acc |= ((w >> (__builtin_ctzll(keep) & ~7)) & 0xFF) << (8 * k);
                    kept++;
                    if (++k == 8) {
                        v = (v ^ acc) * 0x9FB21C651E98DF25ULL;
                        v ^= v >> 29;
                        acc = 0;
                        k = 0;
                    }
                }
                j += 8;
                seen += 8;
                continue;
            }
        }
#endif
        uc c = t[j++];
        if ((c & 0xC0) != 0x80 && seen++ == chars)
            break;
        if (c >= '0' && c <= '9')
            continue;
        acc |= (uint64_t)c << (8 * k);
        kept++;
        if (++k == 8) {
            v = (v ^ acc) * 0x9FB21C651E98DF25ULL;
            v ^= v >> 29;
            acc = 0;
            k = 0;
        }
    }
    return fmix(v ^ acc ^ ((uint64_t)kept << 48));
}

/* a text as matched (its first MATCH_CHARS characters) with each ASCII digit written as 0, hashed
 * in four lanes of eight bytes (32 bytes a step; the digits found 16 bytes at a time with SSE2) */
static inline uint64_t text_hash(const uc *t, ssize n) {
    ssize m = chars_end_fast(t, n, MATCH_CHARS);
    uint64_t a = 0x243F6A8885A308D3ULL, b = 0x13198A2E03707344ULL, c = 0xA4093822299F31D0ULL,
             d = 0x082EFA98EC4E6C89ULL;
    ssize i = 0;
#if defined(__SSE2__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const __m128i zero = _mm_set1_epi8('0'), flip = _mm_set1_epi8((char)0x80),
                  ten = _mm_set1_epi8((char)(0x80 + 10)), low = _mm_set1_epi8(0x0F);
    for (; i + 32 <= m; i += 32) {
        __m128i v1 = _mm_loadu_si128((const __m128i *)(t + i)), v2 = _mm_loadu_si128((const __m128i *)(t + i + 16));
        /* a digit: (byte - '0') below 10, unsigned (compared signed with the top bit flipped) */
        __m128i d1 = _mm_cmplt_epi8(_mm_xor_si128(_mm_sub_epi8(v1, zero), flip), ten);
        __m128i d2 = _mm_cmplt_epi8(_mm_xor_si128(_mm_sub_epi8(v2, zero), flip), ten);
        v1 = _mm_andnot_si128(_mm_and_si128(d1, low), v1);
        v2 = _mm_andnot_si128(_mm_and_si128(d2, low), v2);
        uint64_t w[4];
        _mm_storeu_si128((__m128i *)w, v1);
        _mm_storeu_si128((__m128i *)(w + 2), v2);
        a = (a ^ w[0]) * 0x9FB21C651E98DF25ULL;
        b = (b ^ w[1]) * 0xC2B2AE3D27D4EB4FULL;
        c = (c ^ w[2]) * 0xBF58476D1CE4E5B9ULL;
        d = (d ^ w[3]) * 0x94D049BB133111EBULL;
        a ^= a >> 31;
        b ^= b >> 29;
        c ^= c >> 30;
        d ^= d >> 27;
    }
#endif
    for (; i < m; i += 8) {
        /* whole words read as one load; the last part word (1-7 bytes) from the 8 bytes that end
         * the text where it is that long, shifted down to the same value load8 gives */
        uint64_t w;
        if (m - i >= 8)
            memcpy(&w, t + i, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        else if (m >= 8) {
            memcpy(&w, t + m - 8, 8);
            w >>= 8 * (8 - (m - i));
        }
#endif
        else
            w = load8(t + i, m - i);
        w &= ~((digit_bytes(w) >> 7) * 0x0F);
        a = (a ^ w) * 0x9FB21C651E98DF25ULL;
        a ^= a >> 31;
    }
    return fmix(a ^ fmix(b + (uint64_t)m) ^ fmix(c ^ (d * 0x9E3779B97F4A7C15ULL)));
}

/* Two hashes per text: its shape and its text as matched (digits as 0). */
static PyObject *keys(PyObject *self, PyObject *args) {
    PyObject *off, *data;
    Py_ssize_t chars;
    if (!PyArg_ParseTuple(args, "OOn", &off, &data, &chars))
        return NULL;
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    PyObject *sh = PyBytes_FromStringAndSize(NULL, x.n * 8), *hd = PyBytes_FromStringAndSize(NULL, x.n * 8);
    if (sh && hd) {
        uint64_t *hs = (uint64_t *)PyBytes_AS_STRING(sh), *hh = (uint64_t *)PyBytes_AS_STRING(hd);
        Py_BEGIN_ALLOW_THREADS;
        for (ssize r = 0; r < x.n; r++) {
            const uc *t = x.d + x.o[r];
            ssize n = x.o[r + 1] - x.o[r];
            hs[r] = shape_hash(t, n, chars);
            hh[r] = text_hash(t, n);
        }
        Py_END_ALLOW_THREADS;
    }
    texts_release(&x);
    if (!sh || !hd) {
        Py_XDECREF(sh);
        Py_XDECREF(hd);
        return NULL;
    }
    return Py_BuildValue("(NN)", sh, hd);
}

/* a 64-bit key from a shape key and a small number (a logger's code in the block), mixed */
static inline uint64_t mix_small(uint64_t a, int64_t b) {
    uint64_t h = a ^ (((uint64_t)b + 1) * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

/* group(keys, small=None) -> (first, inverse): the first row of each distinct key (or pair of key
 * and small[i], mixed into one key), in order of first appearance, and each row's group */
static PyObject *group(PyObject *self, PyObject *args) {
    PyObject *arg, *smallo = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &arg, &smallo))
        return NULL;
    Py_buffer kb, sb = {0};
    if (PyObject_GetBuffer(arg, &kb, PyBUF_SIMPLE) < 0)
        return NULL;
    if (smallo != Py_None) {
        if (PyObject_GetBuffer(smallo, &sb, PyBUF_SIMPLE) < 0) {
            PyBuffer_Release(&kb);
            return NULL;
        }
        if (sb.len != kb.len) {
            PyErr_SetString(PyExc_ValueError, "one small number per key");
            PyBuffer_Release(&sb);
            PyBuffer_Release(&kb);
            return NULL;
        }
    }
    ssize n = kb.len / 8;
    uint64_t size = 16;
    while (size < (uint64_t)n * 2)
        size *= 2;
    int64_t *slot = malloc(size * sizeof *slot), *first = malloc((size_t)(n ? n : 1) * sizeof *first);
    uint64_t *mixed = sb.obj ? malloc((size_t)(n ? n : 1) * sizeof *mixed) : NULL;
    PyObject *inv = PyBytes_FromStringAndSize(NULL, n * 8), *fst = NULL;
    ssize g = 0;
    if (!slot || !first || !inv || (sb.obj && !mixed)) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    const uint64_t *key = kb.buf;
    int64_t *iv = (int64_t *)PyBytes_AS_STRING(inv);
    Py_BEGIN_ALLOW_THREADS;
    if (mixed) {
        const int64_t *sm = sb.buf;
        for (ssize i = 0; i < n; i++)
            mixed[i] = mix_small(key[i], sm[i]);
        key = mixed;
    }
    memset(slot, 0xff, size * sizeof *slot);
    for (ssize i = 0; i < n; i++) {
        uint64_t s = fmix(key[i]) & (size - 1);
        for (;; s = (s + 1) & (size - 1)) {
            int64_t at = slot[s];
            if (at < 0) {
                slot[s] = g;
                first[g] = i;
                iv[i] = g++;
                break;
            }
            if (key[first[at]] == key[i]) {
                iv[i] = at;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS;
    fst = PyBytes_FromStringAndSize((const char *)first, g * 8);
done:
    free(slot);
    free(first);
    free(mixed);
    if (sb.obj)
        PyBuffer_Release(&sb);
    PyBuffer_Release(&kb);
    if (!fst) {
        Py_XDECREF(inv);
        return NULL;
    }
    return Py_BuildValue("(NN)", fst, inv);
}

static PyObject *verify(PyObject *self, PyObject *args) {
    PyObject *off, *data, *rows, *tmpl, *hash = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &off, &data, &rows, &tmpl, &hash))
        return NULL;
    if (!TMPL) {
        PyErr_SetString(PyExc_RuntimeError, "no catalogue loaded");
        return NULL;
    }
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    Py_buffer rb, tb;
    ssize nr, nt;
    if (rows_get(&rb, rows, x.n, &nr) < 0) {
        texts_release(&x);
        return NULL;
    }
    if (rows_get(&tb, tmpl, NT, &nt) < 0) {
        PyBuffer_Release(&rb);
        texts_release(&x);
        return NULL;
    }
    if (nt != nr) {
        PyErr_SetString(PyExc_ValueError, "rows and templates differ in length");
        PyBuffer_Release(&tb);
        PyBuffer_Release(&rb);
        texts_release(&x);
        return NULL;
    }
    /* with each text's hash (digits as 0), a template without digits of its own is tried once per
     * distinct hash: its pattern cannot tell one digit from another */
    Py_buffer hb = {0};
    uint64_t size = 16;
    int64_t *slot = NULL;
    if (hash != Py_None) {
        if (PyObject_GetBuffer(hash, &hb, PyBUF_SIMPLE) < 0)
            goto fail;
        if (hb.len != x.n * 8) {
            PyErr_SetString(PyExc_ValueError, "one hash per text");
            PyBuffer_Release(&hb);
            goto fail;
        }
        while (size < (uint64_t)nr * 2)
            size *= 2;
        if (!(slot = malloc(size * sizeof *slot))) {
            PyErr_NoMemory();
            PyBuffer_Release(&hb);
            goto fail;
        }
    }
    PyObject *res = PyBytes_FromStringAndSize(NULL, nr);
    if (res) {
        char *ok = PyBytes_AS_STRING(res);
        const int64_t *r = rb.buf, *tp = tb.buf;
        const uint64_t *hh = hb.buf;
        Py_BEGIN_ALLOW_THREADS;
        if (slot)
            memset(slot, 0xff, size * sizeof *slot);
        for (ssize i = 0; i < nr; i++) {
            const Tmpl *T = &TMPL[tp[i]];
            uint64_t s = 0;
            if (slot && !T->digits) {
                uint64_t key = hh[r[i]] ^ ((uint64_t)tp[i] * 0x9E3779B97F4A7C15ULL);
                for (s = fmix(key) & (size - 1);; s = (s + 1) & (size - 1)) {
                    int64_t at = slot[s];
                    if (at < 0)
                        break;
                    if (tp[at] == tp[i] && hh[r[at]] == hh[r[i]])
                        break;
                }
                if (slot[s] >= 0) {
                    ok[i] = ok[slot[s]];
                    continue;
                }
                slot[s] = i;
            }
            const uc *t = x.d + x.o[r[i]];
            ssize n = chars_end_fast(t, x.o[r[i] + 1] - x.o[r[i]], MATCH_CHARS);
            ok[i] = (char)match(t, n, T);
        }
        Py_END_ALLOW_THREADS;
    }
    free(slot);
    if (hb.obj)
        PyBuffer_Release(&hb);
    PyBuffer_Release(&rb);
    PyBuffer_Release(&tb);
    texts_release(&x);
    return res;
fail:
    PyBuffer_Release(&rb);
    PyBuffer_Release(&tb);
    texts_release(&x);
    return NULL;
}

static PyObject *assign(PyObject *self, PyObject *args) {
    PyObject *off, *data, *rows, *glog, *kafka;
    if (!PyArg_ParseTuple(args, "OOOOO", &off, &data, &rows, &glog, &kafka))
        return NULL;
    if (!TMPL) {
        PyErr_SetString(PyExc_RuntimeError, "no catalogue loaded");
        return NULL;
    }
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    Py_buffer rb, gb, kb;
    ssize nr;
    if (rows_get(&rb, rows, x.n, &nr) < 0) {
        texts_release(&x);
        return NULL;
    }
    if (PyObject_GetBuffer(glog, &gb, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&rb);
        texts_release(&x);
        return NULL;
    }
    if (PyObject_GetBuffer(kafka, &kb, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&gb);
        PyBuffer_Release(&rb);
        texts_release(&x);
        return NULL;
    }
    PyObject *res = NULL;
    int64_t *cand = NULL;
    if (gb.len != nr * 8 || kb.len != nr)
        PyErr_SetString(PyExc_ValueError, "rows, loggers and flags differ in length");
    else if (!(cand = malloc(sizeof(int64_t) * (size_t)(2 * NT + 2))))
        PyErr_NoMemory();
    else if ((res = PyBytes_FromStringAndSize(NULL, nr * 8))) {
        int64_t *out = (int64_t *)PyBytes_AS_STRING(res);
        const int64_t *r = rb.buf, *g = gb.buf;
        const char *kf = kb.buf;
        Py_BEGIN_ALLOW_THREADS;
        for (ssize i = 0; i < nr; i++) {
            const uc *t = x.d + x.o[r[i]];
            ssize n = x.o[r[i] + 1] - x.o[r[i]];
            out[i] = (g[i] >= 0 || kf[i]) ? assign1(t, n, g[i], kf[i], cand) : -1;
        }
        Py_END_ALLOW_THREADS;
    }
    free(cand);
    PyBuffer_Release(&kb);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&rb);
    texts_release(&x);
    return res;
}

static int64_t *copy64(PyObject *o, ssize *n) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    *n = b.len / 8;
    int64_t *a = malloc((size_t)(b.len ? b.len : 8));
    if (a)
        memcpy(a, b.buf, (size_t)b.len);
    else
        PyErr_NoMemory();
    PyBuffer_Release(&b);
    return a;
}

static PyObject *load(PyObject *self, PyObject *args) {
    PyObject *pieces, *vocab, *order, *bounds, *pairs;
    int nt;
    if (!PyArg_ParseTuple(args, "O!O!OOOi", &PyList_Type, &pieces, &PyList_Type, &vocab, &order, &bounds, &pairs,
                          &nt))
        return NULL;
    if (TMPL) /* once per process: texts may be matched on other threads */
        Py_RETURN_FALSE;
    if (PyList_GET_SIZE(pieces) != nt) {
        PyErr_SetString(PyExc_ValueError, "one list of pieces per template");
        return NULL;
    }
    ssize no, nb;
    Tmpl *tm = NULL;
    if (!(KEY_ORDER = copy64(order, &no)) || !(KEY_BOUNDS = copy64(bounds, &nb)) || !(PAIRS = copy64(pairs, &NPAIRS)))
        goto fail;
    NVOCAB = PyList_GET_SIZE(vocab);
    if (nt < 0 || nb != NVOCAB + 1)
        goto fail;
    for (ssize i = 0; i < no; i++)
        if (KEY_ORDER[i] < 0 || KEY_ORDER[i] >= nt)
            goto fail;
    /* a key word lists at most every template once: assign1's `cand` (2 * nt + 2) holds the
     * templates kept so far (at most nt) and one word's */
    for (ssize i = 0; i < nb; i++)
        if (KEY_BOUNDS[i] < 0 || KEY_BOUNDS[i] > no || (i && (KEY_BOUNDS[i] < KEY_BOUNDS[i - 1] ||
                                                              KEY_BOUNDS[i] - KEY_BOUNDS[i - 1] > nt)))
            goto fail;
    KEEP = PyList_New(0);
    tm = calloc((size_t)(nt ? nt : 1), sizeof(Tmpl));
    if (!KEEP || !tm)
        goto fail_tm;
    for (int i = 0; i < nt; i++) {
        PyObject *ps = PyList_GET_ITEM(pieces, i);
        if (!PyList_Check(ps) || PyList_GET_SIZE(ps) < 1)
            goto fail_tm;
        tm[i].n = (int)PyList_GET_SIZE(ps);
        tm[i].pieces = calloc((size_t)tm[i].n, sizeof(Piece));
        if (!tm[i].pieces)
            goto fail_tm;
        for (int j = 0; j < tm[i].n; j++) {
            PyObject *b = PyList_GET_ITEM(ps, j);
            if (!PyBytes_Check(b) || PyList_Append(KEEP, b) < 0)
                goto fail_tm;
            Piece *P = &tm[i].pieces[j];
            P->p = (const uc *)PyBytes_AS_STRING(b);
            P->len = PyBytes_GET_SIZE(b);
            P->minlen = P->len; /* each byte of the program takes at least one byte of text */
            for (ssize a = 0; a < P->len; a++)
                tm[i].digits |= P->p[a] >= '0' && P->p[a] <= '9';
            while (P->lit < P->len && P->p[P->lit] != WS)
                P->lit++;
        }
    }
    VOC = calloc((size_t)(NVOCAB ? NVOCAB : 1), sizeof *VOC);
    VOC_LEN = calloc((size_t)(NVOCAB ? NVOCAB : 1), sizeof *VOC_LEN);
    uint64_t size = 16;
    while (size < (uint64_t)NVOCAB * 4)
        size *= 2;
    VSLOT = calloc(size, sizeof *VSLOT);
    VMASK = size - 1;
    if (!VOC || !VOC_LEN || !VSLOT)
        goto fail_tm;
    for (ssize v = 0; v < NVOCAB; v++) {
        PyObject *w = PyList_GET_ITEM(vocab, v);
        if (!PyBytes_Check(w) || PyList_Append(KEEP, w) < 0)
            goto fail_tm;
        VOC[v] = (const uc *)PyBytes_AS_STRING(w);
        VOC_LEN[v] = PyBytes_GET_SIZE(w);
        uint64_t s = word_hash(VOC[v], VOC_LEN[v]) & VMASK;
        while (VSLOT[s])
            s = (s + 1) & VMASK;
        VSLOT[s] = (int32_t)(v + 1);
    }
    NT = nt;
    TMPL = tm;
    Py_RETURN_TRUE;
fail_tm:
    for (int i = 0; tm && i < nt; i++)
        free(tm[i].pieces);
    free(tm);
fail:
    free(KEY_ORDER);
    free(KEY_BOUNDS);
    free(PAIRS);
    free(VOC);
    free(VOC_LEN);
    free(VSLOT);
    KEY_ORDER = KEY_BOUNDS = PAIRS = NULL;
    VOC = NULL;
    VOC_LEN = NULL;
    VSLOT = NULL;
    Py_CLEAR(KEEP);
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "a malformed catalogue");
    return NULL;
}

/* prefixes(offsets, data, rows, width) -> bytes of 0/1: whether each text rows[i] opens with '[' and
 * has no "] " starting in its first width - 1 bytes (a text that may have a long prefix; matching.py's
 * _may_have_long_prefix) */
static PyObject *prefixes(PyObject *self, PyObject *args) {
    PyObject *off, *data, *rows;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "OOOn", &off, &data, &rows, &width))
        return NULL;
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    Py_buffer rb;
    ssize nr;
    if (rows_get(&rb, rows, x.n, &nr) < 0) {
        texts_release(&x);
        return NULL;
    }
    PyObject *res = PyBytes_FromStringAndSize(NULL, nr);
    if (res) {
        char *o = PyBytes_AS_STRING(res);
        const int64_t *r = rb.buf;
        for (ssize i = 0; i < nr; i++) {
            const uc *t = x.d + x.o[r[i]];
            ssize n = x.o[r[i] + 1] - x.o[r[i]], m = n < width ? n : width;
            int ok = n > 0 && t[0] == '[';
            for (ssize j = 0; ok && j + 1 < m; j++)
                if (t[j] == ']' && t[j + 1] == ' ')
                    ok = 0;
            o[i] = (char)ok;
        }
    }
    PyBuffer_Release(&rb);
    texts_release(&x);
    return res;
}

/* The texts met before, across blocks: a hash of the logger's number and of the text as matched
 * (digits as 0) -> the text's template and its shape's memo key. matching.py puts a text here only
 * where the answer holds for every text with the same hash (see _assign_compiled) and empties it
 * whenever it empties its memo of shapes. Open addressing; a key of 0 marks an empty slot. */
#define MEMO_SLOTS ((uint64_t)1 << 19)
#define MEMO_MAX (MEMO_SLOTS / 2) /* entries before it is emptied and filled again */
typedef struct {
    uint64_t key, shape;
    int64_t tmpl;
} Memo;
static Memo *MEMO;
static ssize MEMO_N;
static int64_t MEMO_EPOCH; /* how many times the memo was emptied */

/* a table's memory, zeroed */
static void *table_alloc(size_t bytes) { return calloc(1, bytes); }

static int memo_alloc(void) {
    MEMO = table_alloc(MEMO_SLOTS * sizeof *MEMO);
    return MEMO ? 0 : -1;
}

static inline uint64_t memo_key(uint64_t text, uint64_t name) {
    uint64_t k = fmix(text ^ ((name + 1) * 0x9E3779B97F4A7C15ULL));
    return k ? k : 1;
}

/* the shape's key of matching.py's memo (its _mix: a shape hash and a logger's number) */
static inline uint64_t shape_key(uint64_t shape, uint64_t name) {
    uint64_t h = shape ^ ((name + 1) * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 32);
}

static void memo_clear(void) {
    if (MEMO)
        memset(MEMO, 0, MEMO_SLOTS * sizeof *MEMO);
    MEMO_N = 0;
    MEMO_EPOCH++;
}

/* lookup(offsets, data, chars, names, valid) -> (shape keys, text hashes, templates), bytes of
 * uint64/uint64/int64: per text, the hash of its text as matched (digits as 0), and the template
 * of a text met before (-2 where none was remembered; a null text, valid[i] == 0, never is); the
 * shape's key (shape hash of the first `chars` characters mixed with names[i], or of the null
 * shape) of every text, remembered or made. */
static PyObject *lookup(PyObject *self, PyObject *args) {
    PyObject *off, *data, *names, *valid;
    Py_ssize_t chars;
    if (!PyArg_ParseTuple(args, "OOnOO", &off, &data, &chars, &names, &valid))
        return NULL;
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    Py_buffer nb, vb = {0};
    if (PyObject_GetBuffer(names, &nb, PyBUF_SIMPLE) < 0) {
        texts_release(&x);
        return NULL;
    }
    if (valid != Py_None && PyObject_GetBuffer(valid, &vb, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&nb);
        texts_release(&x);
        return NULL;
    }
    PyObject *mk = NULL, *th = NULL, *tp = NULL;
    if (nb.len != x.n * 8 || (vb.obj && vb.len != x.n)) {
        PyErr_SetString(PyExc_ValueError, "one logger number and one flag per text");
        goto done;
    }
    mk = PyBytes_FromStringAndSize(NULL, x.n * 8);
    th = PyBytes_FromStringAndSize(NULL, x.n * 8);
    tp = PyBytes_FromStringAndSize(NULL, x.n * 8);
    if (!mk || !th || !tp)
        goto done;
    {
        uint64_t *k = (uint64_t *)PyBytes_AS_STRING(mk), *h = (uint64_t *)PyBytes_AS_STRING(th);
        int64_t *o = (int64_t *)PyBytes_AS_STRING(tp);
        const uint64_t *nm = nb.buf;
        const char *ok = vb.obj ? vb.buf : NULL;
        Py_BEGIN_ALLOW_THREADS;
        /* a batch of texts hashed (their slots fetched meanwhile), then looked up */
        uint64_t mkey[32];
        for (ssize r0 = 0; r0 < x.n; r0 += 32) {
            ssize r1 = r0 + 32 < x.n ? r0 + 32 : x.n;
            for (ssize r = r0; r < r1; r++) {
                o[r] = -2;
                if (ok && !ok[r]) {
                    h[r] = 0;
                    k[r] = shape_key(0x9E3779B97F4A7C15ULL, nm[r]);
                    continue;
                }
                h[r] = text_hash(x.d + x.o[r], x.o[r + 1] - x.o[r]);
                if (MEMO_N) {
                    mkey[r - r0] = memo_key(h[r], nm[r]);
                    __builtin_prefetch(&MEMO[fmix(mkey[r - r0]) & (MEMO_SLOTS - 1)]);
                }
            }
            for (ssize r = r0; r < r1; r++) {
                if (ok && !ok[r])
                    continue;
                if (MEMO_N) {
                    uint64_t key = mkey[r - r0];
                    for (uint64_t s = fmix(key) & (MEMO_SLOTS - 1);; s = (s + 1) & (MEMO_SLOTS - 1)) {
                        if (!MEMO[s].key)
                            break;
                        if (MEMO[s].key == key) {
                            o[r] = MEMO[s].tmpl;
                            k[r] = MEMO[s].shape;
                            break;
                        }
                    }
                }
                if (o[r] == -2)
                    k[r] = shape_key(shape_hash(x.d + x.o[r], x.o[r + 1] - x.o[r], chars), nm[r]);
            }
        }
        Py_END_ALLOW_THREADS;
    }
done:
    if (vb.obj)
        PyBuffer_Release(&vb);
    PyBuffer_Release(&nb);
    texts_release(&x);
    if (PyErr_Occurred()) {
        Py_XDECREF(mk);
        Py_XDECREF(th);
        Py_XDECREF(tp);
        return NULL;
    }
    return Py_BuildValue("(NNN)", mk, th, tp);
}

/* remember(rows, text_hashes, names, shape_keys, templates): keep texts rows[i] (each array has one
 * entry per text of the block; rows index them) for later blocks; emptied first when full */
static PyObject *remember(PyObject *self, PyObject *args) {
    PyObject *rows, *objs[4];
    if (!PyArg_ParseTuple(args, "OOOOO", &rows, &objs[0], &objs[1], &objs[2], &objs[3]))
        return NULL;
    Py_buffer b[4];
    int got = 0;
    for (; got < 4; got++)
        if (PyObject_GetBuffer(objs[got], &b[got], PyBUF_SIMPLE) < 0)
            break;
    Py_buffer rb = {0};
    ssize nr = 0, n = got == 4 ? b[0].len / 8 : 0;
    if (got == 4) {
        for (int i = 1; i < 4; i++)
            if (b[i].len != n * 8) {
                PyErr_SetString(PyExc_ValueError, "one hash, logger number, shape key and template per text");
                break;
            }
        if (!PyErr_Occurred() && rows_get(&rb, rows, n, &nr) == 0 && !MEMO && nr) {
            MEMO_N = 0;
            if (memo_alloc() < 0)
                PyErr_NoMemory();
        }
    }
    if (!PyErr_Occurred()) {
        const int64_t *r = rb.buf, *tp = b[3].buf;
        const uint64_t *h = b[0].buf, *nm = b[1].buf, *sk = b[2].buf;
        for (ssize i = 0; i < nr; i++) {
            if (tp[r[i]] < -1 || tp[r[i]] >= NT) {
                PyErr_SetString(PyExc_ValueError, "template out of range");
                break;
            }
            if ((uint64_t)MEMO_N >= MEMO_MAX)
                memo_clear();
            uint64_t key = memo_key(h[r[i]], nm[r[i]]);
            uint64_t s = fmix(key) & (MEMO_SLOTS - 1);
            while (MEMO[s].key && MEMO[s].key != key)
                s = (s + 1) & (MEMO_SLOTS - 1);
            if (!MEMO[s].key)
                MEMO_N++;
            MEMO[s].key = key;
            MEMO[s].shape = sk[r[i]];
            MEMO[s].tmpl = tp[r[i]];
        }
    }
    if (rb.obj)
        PyBuffer_Release(&rb);
    for (int i = 0; i < got; i++)
        PyBuffer_Release(&b[i]);
    if (PyErr_Occurred())
        return NULL;
    return PyLong_FromSsize_t(MEMO_N);
}

/* The memo of shapes: a shape's key (shape hash mixed with the logger's number) -> the template its
 * first record got, kept across blocks; emptied with the memo of texts. Open addressing, grown when
 * half full; tmpl EMPTY marks a free slot. */
#define EMPTY INT64_MIN
typedef struct {
    uint64_t key;
    int64_t tmpl;
} Shape;
static Shape *SHAPES;
static uint64_t SHAPE_CAP;
static ssize SHAPE_N;

static void shapes_clear(void) {
    for (uint64_t i = 0; SHAPES && i < SHAPE_CAP; i++)
        SHAPES[i].tmpl = EMPTY;
    SHAPE_N = 0;
}

static int64_t shapes_get(uint64_t key) {
    if (!SHAPES)
        return -2;
    for (uint64_t s = fmix(key) & (SHAPE_CAP - 1);; s = (s + 1) & (SHAPE_CAP - 1)) {
        if (SHAPES[s].tmpl == EMPTY)
            return -2;
        if (SHAPES[s].key == key)
            return SHAPES[s].tmpl;
    }
}

/* put a shape's template (a key met again takes the later one); 0, or -1 out of memory */
static int shapes_put(uint64_t key, int64_t tmpl) {
    if (!SHAPES || (uint64_t)(SHAPE_N + 1) * 2 > SHAPE_CAP) {
        uint64_t cap = SHAPE_CAP ? SHAPE_CAP * 2 : ((uint64_t)1 << 16);
        Shape *t = table_alloc(cap * sizeof *t);
        if (!t)
            return -1;
        for (uint64_t i = 0; i < cap; i++)
            t[i].tmpl = EMPTY;
        for (uint64_t i = 0; SHAPES && i < SHAPE_CAP; i++)
            if (SHAPES[i].tmpl != EMPTY) {
                uint64_t s = fmix(SHAPES[i].key) & (cap - 1);
                while (t[s].tmpl != EMPTY)
                    s = (s + 1) & (cap - 1);
                t[s] = SHAPES[i];
            }
        free(SHAPES);
        SHAPES = t;
        SHAPE_CAP = cap;
    }
    uint64_t s = fmix(key) & (SHAPE_CAP - 1);
    while (SHAPES[s].tmpl != EMPTY && SHAPES[s].key != key)
        s = (s + 1) & (SHAPE_CAP - 1);
    if (SHAPES[s].tmpl == EMPTY)
        SHAPE_N++;
    SHAPES[s].key = key;
    SHAPES[s].tmpl = tmpl;
    return 0;
}

/* group's loop: the first row of each distinct key in order of first appearance (first[g]) and each
 * row's group (inv[i]); the number of groups, or -1 out of memory */
static ssize group_keys(const uint64_t *key, ssize n, int64_t *first, int64_t *inv, int64_t *slot, uint64_t cap) {
    uint64_t size = 16;
    while (size < (uint64_t)n * 2)
        size *= 2;
    if (size > cap)
        return -1;
    memset(slot, 0xff, size * sizeof *slot);
    ssize g = 0;
    for (ssize i = 0; i < n; i++) {
        uint64_t s = fmix(key[i]) & (size - 1);
        for (;; s = (s + 1) & (size - 1)) {
            int64_t at = slot[s];
            if (at < 0) {
                slot[s] = g;
                first[g] = i;
                inv[i] = g++;
                break;
            }
            if (key[first[at]] == key[i]) {
                inv[i] = at;
                break;
            }
        }
    }
    return g;
}

/* the block's working arrays, kept from one block to the next (one block at a time: the lock) and
 * grown as needed; NULL out of memory */
#define NSCRATCH 16
static void *SCRATCH[NSCRATCH];
static size_t SCRATCH_LEN[NSCRATCH];

typedef struct { /* a slot of a block's table of distinct texts */
    uint64_t h;   /* the text hash */
    uint32_t tag; /* logger code * 2 + 1 for a null text */
    int32_t g;    /* the distinct text's number, -1 for a free slot */
} Distinct;

static void *scratch(int i, size_t bytes) {
    if (bytes > SCRATCH_LEN[i]) {
        free(SCRATCH[i]);
        SCRATCH_LEN[i] = 0;
        if (!(SCRATCH[i] = malloc(bytes + bytes / 4)))
            return NULL;
        SCRATCH_LEN[i] = bytes + bytes / 4;
    }
    return SCRATCH[i];
}

/* matching.py's _long_prefix of one text: it opens with "[" and the first "] " among its first
 * chars + 2 characters starts at byte chars / 2 - 1 or later */
static int long_prefix(const uc *t, ssize n, ssize chars) {
    if (n == 0 || t[0] != '[')
        return 0;
    ssize m = chars_end_fast(t, n, chars + 2);
    for (ssize j = 0; j + 1 < m; j++)
        if (t[j] == ']' && t[j + 1] == ' ')
            return j + 2 > chars / 2;
    return 0;
}

static PyThread_type_lock LOCK; /* one block at a time: the memos are the process's */

typedef struct {
    const int64_t *o;
    const uc *d;
    const int64_t *code, *glog;
    const char *kafka, *ok;
    int64_t *cand;
} Ctx;

/* matching.py's match_alone for row r: its template by key words, -1 for a null text */
static inline int64_t alone1(const Ctx *c, ssize r) {
    if (c->ok && !c->ok[r])
        return -1;
    int64_t k = c->code[r], g = c->glog[k];
    int kf = c->kafka[k];
    return (g >= 0 || kf) ? assign1(c->d + c->o[r], c->o[r + 1] - c->o[r], g, kf, c->cand) : -1;
}

/* the steps of matching.py's _assign_compiled for one block, the GIL released (see there) */
static int block_run(const Texts *x, ssize chars, const Ctx *c, const uint64_t *names /* per logger */, ssize memo_size,
                     int64_t *out) {
    ssize n = x->n;
    const char *ok = c->ok;
    int rc = -1;
    ssize cap = n ? n : 1;
    uint64_t tsize = 16;
    while (tsize < (uint64_t)cap * 2)
        tsize *= 2;
    uint64_t dsize = 4096; /* the table of distinct texts, grown when half full */
    uint64_t *h = scratch(0, cap * 8), *key = scratch(1, cap * 8), *mixed = scratch(2, cap * 8);
    int64_t *first = scratch(3, cap * 8), *inv = scratch(4, cap * 8), *rep = scratch(5, cap * 8),
            *u = scratch(6, cap * 8), *ou = scratch(7, cap * 8), *tg = scratch(8, cap * 8),
            *gfirst = scratch(9, cap * 8), *slot = scratch(10, tsize * 8);
    uint64_t *gkey = scratch(11, cap * 8);
    int64_t *gout = scratch(12, cap * 8), *ins = scratch(13, cap * 8);
    uc *flag = scratch(14, cap);
    if (!h || !key || !mixed || !first || !inv || !rep || !u || !ou || !tg || !gfirst || !slot || !gkey || !gout ||
        !ins || !flag)
        goto done;
    memset(flag, 0, (size_t)cap);
    /* every text hashed (its text as matched, digits as 0), and the block's texts told apart by
     * that hash and their logger code (a null text by its logger code alone): the memo of texts is
     * looked up, and a shape hashed, once per distinct text, each in order of its first row. The
     * table of distinct texts holds the hash and the code in its slots (no reading back a row). */
    Distinct *dt = scratch(15, dsize * sizeof *dt);
    if (!dt)
        goto done;
    memset(dt, 0xff, dsize * sizeof *dt);
    ssize nt = 0;
    for (ssize r = 0; r < n; r++) {
        int null = ok && !ok[r];
        uint64_t hr = null ? 0 : text_hash(x->d + x->o[r], x->o[r + 1] - x->o[r]);
        uint32_t tag = (uint32_t)c->code[r] * 2 + (uint32_t)null;
        h[r] = hr;
        uint64_t s = mix_small(hr, tag) & (dsize - 1);
        for (;; s = (s + 1) & (dsize - 1)) {
            if (dt[s].g < 0) {
                dt[s].h = hr;
                dt[s].tag = tag;
                dt[s].g = (int32_t)nt;
                gfirst[nt] = r;
                tg[r] = nt++;
                break;
            }
            if (dt[s].h == hr && dt[s].tag == tag) {
                tg[r] = dt[s].g;
                break;
            }
        }
        if ((uint64_t)nt * 2 > dsize) { /* grown: the distinct texts put again */
            dsize *= 2;
            if (!(dt = scratch(15, dsize * sizeof *dt)))
                goto done;
            memset(dt, 0xff, dsize * sizeof *dt);
            for (ssize g = 0; g < nt; g++) {
                ssize f = gfirst[g];
                uint32_t tf = (uint32_t)c->code[f] * 2 + (uint32_t)(ok && !ok[f]);
                uint64_t q = mix_small(h[f], tf) & (dsize - 1);
                while (dt[q].g >= 0)
                    q = (q + 1) & (dsize - 1);
                dt[q].h = h[f];
                dt[q].tag = tf;
                dt[q].g = (int32_t)g;
            }
        }
    }
    /* the distinct texts looked up in the memo of texts, a batch at a time (their slots fetched
     * meanwhile); a text not remembered gets its shape's key made */
    uint64_t mkey[32];
    for (ssize g0 = 0; g0 < nt; g0 += 32) {
        ssize g1 = g0 + 32 < nt ? g0 + 32 : nt;
        for (ssize g = g0; g < g1; g++) {
            ssize r = gfirst[g];
            gout[g] = -2;
            if (ok && !ok[r])
                continue;
            if (MEMO_N) {
                mkey[g - g0] = memo_key(h[r], names[c->code[r]]);
                __builtin_prefetch(&MEMO[fmix(mkey[g - g0]) & (MEMO_SLOTS - 1)]);
            }
        }
        for (ssize g = g0; g < g1; g++) {
            ssize r = gfirst[g];
            if (ok && !ok[r]) {
                gkey[g] = shape_key(0x9E3779B97F4A7C15ULL, names[c->code[r]]);
                continue;
            }
            if (MEMO_N) {
                uint64_t k = mkey[g - g0];
                for (uint64_t s = fmix(k) & (MEMO_SLOTS - 1);; s = (s + 1) & (MEMO_SLOTS - 1)) {
                    if (!MEMO[s].key)
                        break;
                    if (MEMO[s].key == k) {
                        gout[g] = MEMO[s].tmpl;
                        gkey[g] = MEMO[s].shape;
                        break;
                    }
                }
            }
            if (gout[g] == -2)
                gkey[g] = shape_key(shape_hash(x->d + x->o[r], x->o[r + 1] - x->o[r], chars), names[c->code[r]]);
        }
    }
    for (ssize r = 0; r < n; r++) {
        out[r] = gout[tg[r]];
        key[r] = gkey[tg[r]];
    }
    /* shapes: grouped with the block's logger code, each looked up in the memo of shapes, new ones
     * matched on their first record and remembered. Grouped over the distinct texts in order of
     * their first rows: a shape's first distinct text holds the shape's first row. */
    for (ssize g = 0; g < nt; g++)
        mixed[g] = mix_small(gkey[g], c->code[gfirst[g]]);
    ssize ng = group_keys(mixed, nt, first, rep, slot, tsize); /* rep: each distinct text's shape */
    if (ng < 0)
        goto done;
    for (ssize r = 0; r < n; r++)
        inv[r] = rep[tg[r]];
    for (ssize g = 0; g < ng; g++)
        first[g] = gfirst[first[g]];
    ssize nnew = 0;
    enum { LEAD = 1, NEW = 2, CHECKED = 4, BAD = 8, ALONE = 16 };
    for (ssize g = 0; g < ng; g++) {
        if (SHAPES && g + 8 < ng) /* a later shape's slot fetched meanwhile */
            __builtin_prefetch(&SHAPES[fmix(key[first[g + 8]]) & (SHAPE_CAP - 1)]);
        flag[first[g]] |= LEAD;
        rep[g] = shapes_get(key[first[g]]);
        if (rep[g] == -2) {
            flag[first[g]] |= NEW;
            rep[g] = alone1(c, first[g]);
            nnew++;
        }
    }
    int cleared = 0;
    if (nnew) {
        if (SHAPE_N > memo_size) {
            shapes_clear();
            memo_clear();
            cleared = 1;
        }
        for (ssize g = 0; g < ng; g++)
            if (flag[first[g]] & NEW && shapes_put(key[first[g]], rep[g]) < 0)
                goto done;
    }
    /* the texts not remembered: each checked against its shape's template (once per distinct text
     * hash for a template without digits of its own), matched alone where that fails */
    ssize nu = 0;
    for (ssize r = 0; r < n; r++)
        if (out[r] < -1) {
            u[nu] = r;
            ou[nu++] = rep[inv[r]];
        }
    if (nu == 0) {
        rc = 0;
        goto done;
    }
    uint64_t size = 16;
    while (size < (uint64_t)nu * 2)
        size *= 2; /* at most tsize: the slots of the distinct texts serve again */
    memset(slot, 0xff, size * sizeof *slot);
    for (ssize i = 0; i < nu; i++) { /* i: a position in u; the slots hold positions */
        ssize r = u[i];
        if (flag[r] & LEAD || ou[i] < 0)
            continue;
        if (ok && !ok[r]) {
            flag[r] |= BAD;
            continue;
        }
        const Tmpl *T = &TMPL[ou[i]];
        int hit = -1;
        uint64_t s = 0;
        if (!T->digits) {
            uint64_t k = h[r] ^ ((uint64_t)ou[i] * 0x9E3779B97F4A7C15ULL);
            for (s = fmix(k) & (size - 1);; s = (s + 1) & (size - 1)) {
                int64_t at = slot[s];
                if (at < 0)
                    break;
                if (ou[at] == ou[i] && h[u[at]] == h[r])
                    break;
            }
            if (slot[s] >= 0)
                hit = (flag[u[slot[s]]] & CHECKED) != 0;
            else
                slot[s] = i;
        }
        if (hit < 0) {
            const uc *t = x->d + x->o[r];
            hit = match(t, chars_end_fast(t, x->o[r + 1] - x->o[r], MATCH_CHARS), T);
        }
        flag[r] |= hit ? CHECKED : BAD;
    }
    for (ssize i = 0; i < nu; i++)
        if (flag[u[i]] & BAD) {
            ou[i] = alone1(c, u[i]);
            flag[u[i]] |= ALONE;
        }
    /* a Kafka logger's record left without a template by its shape behind a long prefix: matched
     * alone once per distinct (text hash, logger code) */
    ssize nre = 0;
    for (ssize i = 0; i < nu; i++) {
        ssize r = u[i];
        if (flag[r] & (NEW | ALONE) || ou[i] >= 0 || (ok && !ok[r]) || !c->kafka[c->code[r]])
            continue;
        if (!long_prefix(x->d + x->o[r], x->o[r + 1] - x->o[r], chars))
            continue;
        first[nre] = i; /* first, inv and mixed are free again: the retried positions */
        mixed[nre++] = mix_small(h[r], c->code[r]);
    }
    if (nre) {
        int64_t *one = rep, *back = inv; /* free again too */
        ssize ng2 = group_keys(mixed, nre, one, back, slot, tsize);
        if (ng2 < 0)
            goto done;
        for (ssize g = 0; g < ng2; g++)
            one[g] = alone1(c, u[first[one[g]]]);
        for (ssize j = 0; j < nre; j++) {
            ou[first[j]] = one[back[j]];
            flag[u[first[j]]] |= ALONE;
        }
    }
    for (ssize i = 0; i < nu; i++)
        out[u[i]] = ou[i];
    if (!cleared) {
        /* what holds for every text with the same hash and logger while its shape is remembered;
         * a text's later rows hold the same, so a distinct text already put in since the memo was
         * last emptied is not put again (the memo would not change) */
        for (ssize g = 0; g < nt; g++)
            ins[g] = -1;
        ssize nk = 0; /* the rows kept (positions in u, in first) and their memo keys (in mixed) */
        for (ssize i = 0; i < nu; i++) {
            ssize r = u[i];
            int f = flag[r];
            int kept = (f & CHECKED && !TMPL[ou[i]].digits) || (ou[i] < 0 && !c->kafka[c->code[r]]);
            if (!kept || (ok && !ok[r]) || f & (BAD | ALONE | NEW))
                continue;
            first[nk] = i;
            mixed[nk++] = memo_key(h[r], names[c->code[r]]);
        }
        if (nk && !MEMO && memo_alloc() < 0)
            goto done;
        for (ssize j = 0; j < nk && j < 8; j++)
            __builtin_prefetch(&MEMO[fmix(mixed[j]) & (MEMO_SLOTS - 1)]);
        for (ssize j = 0; j < nk; j++) {
            if (j + 8 < nk) /* the slot of a later row fetched meanwhile */
                __builtin_prefetch(&MEMO[fmix(mixed[j + 8]) & (MEMO_SLOTS - 1)]);
            ssize i = first[j], r = u[i];
            if (ins[tg[r]] == MEMO_EPOCH && (uint64_t)MEMO_N < MEMO_MAX)
                continue;
            if ((uint64_t)MEMO_N >= MEMO_MAX)
                memo_clear();
            ins[tg[r]] = MEMO_EPOCH;
            uint64_t k = mixed[j];
            uint64_t s = fmix(k) & (MEMO_SLOTS - 1);
            while (MEMO[s].key && MEMO[s].key != k)
                s = (s + 1) & (MEMO_SLOTS - 1);
            if (!MEMO[s].key)
                MEMO_N++;
            MEMO[s].key = k;
            MEMO[s].shape = key[r];
            MEMO[s].tmpl = ou[i];
        }
    }
    rc = 0;
done:
    return rc;
}

/* block(offsets, data, chars, codes, glog, kafka, names, valid, memo_size) -> bytearray of int64: each
 * text's template (-1 for none), the whole of matching.py's _assign_compiled in one call. codes[i]:
 * text i's logger in the block (0..k); glog, kafka, names: per logger (k + 1 entries) its catalogue
 * index (-1: none), 1 for a Kafka logger, its number; valid: 0/1 per text or None. */
static PyObject *block(PyObject *self, PyObject *args) {
    PyObject *off, *data, *codes, *glog, *kafka, *names, *valid;
    Py_ssize_t chars, memo_size;
    if (!PyArg_ParseTuple(args, "OOnOOOOOn", &off, &data, &chars, &codes, &glog, &kafka, &names, &valid, &memo_size))
        return NULL;
    if (!TMPL || !LOCK) {
        PyErr_SetString(PyExc_RuntimeError, "no catalogue loaded");
        return NULL;
    }
    Texts x;
    if (texts_get(&x, off, data) < 0)
        return NULL;
    Py_buffer b[5] = {{0}};
    PyObject *objs[5] = {codes, glog, kafka, names, valid};
    PyObject *res = NULL;
    int got = 0;
    for (; got < 5; got++)
        if (objs[got] != Py_None && PyObject_GetBuffer(objs[got], &b[got], PyBUF_SIMPLE) < 0)
            goto done;
    ssize nl = b[1].len / 8;
    if (!b[0].obj || !b[1].obj || !b[2].obj || !b[3].obj || b[0].len != x.n * 8 || b[2].len != nl ||
        b[3].len != nl * 8 || (b[4].obj && b[4].len != x.n)) {
        PyErr_SetString(PyExc_ValueError, "one code (and flag) per text, one index, flag and number per logger");
        goto done;
    }
    const int64_t *cd = b[0].buf, *gl = b[1].buf;
    if (nl > INT32_MAX / 2 || x.n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many loggers or texts in one block");
        goto done;
    }
    for (ssize i = 0; i < x.n; i++)
        if (cd[i] < 0 || cd[i] >= nl) {
            PyErr_SetString(PyExc_IndexError, "logger code out of range");
            goto done;
        }
    if (!(res = PyByteArray_FromStringAndSize(NULL, x.n * 8)))
        goto done;
    int64_t *cand = malloc(sizeof(int64_t) * (size_t)(2 * NT + 2));
    if (!cand) {
        Py_CLEAR(res);
        PyErr_NoMemory();
        goto done;
    }
    Ctx c = {x.o, x.d, cd, gl, b[2].buf, b[4].obj ? b[4].buf : NULL, cand};
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    PyThread_acquire_lock(LOCK, WAIT_LOCK);
    rc = block_run(&x, chars, &c, b[3].buf, memo_size, (int64_t *)PyByteArray_AS_STRING(res));
    PyThread_release_lock(LOCK);
    Py_END_ALLOW_THREADS;
    free(cand);
    if (rc < 0) {
        Py_CLEAR(res);
        PyErr_NoMemory();
    }
done:
    for (int i = 0; i < got; i++)
        if (b[i].obj)
            PyBuffer_Release(&b[i]);
    texts_release(&x);
    return res;
}

static PyObject *forget(PyObject *self, PyObject *unused) {
    if (LOCK) {
        Py_BEGIN_ALLOW_THREADS;
        PyThread_acquire_lock(LOCK, WAIT_LOCK);
        Py_END_ALLOW_THREADS;
    }
    memo_clear();
    shapes_clear();
    if (LOCK)
        PyThread_release_lock(LOCK);
    Py_RETURN_NONE;
}

static PyMethodDef METHODS[] = {
    {"load", load, METH_VARARGS,
     "load(pieces, vocab, key_order, key_bounds, pairs, ntemplates) -> bool: take the compiled catalogue (once per "
     "process; False when one is loaded already)"},
    {"keys", keys, METH_VARARGS,
     "keys(offsets, data, chars) -> (shapes, texts) as bytes of uint64: a hash of each text's first `chars` "
     "characters with ASCII digits left out, and one of its first 4096 characters with each ASCII digit as 0"},
    {"group", group, METH_VARARGS,
     "group(keys, small=None) -> (first, inverse) as bytes of int64: the first row of each distinct uint64 key "
     "(with small: of each distinct pair of key and int64 small[i]), in order of first appearance, and each row's "
     "group"},
    {"prefixes", prefixes, METH_VARARGS,
     "prefixes(offsets, data, rows, width) -> bytes of 0/1: whether text rows[i] opens with '[' and has no '] ' "
     "starting in its first width - 1 bytes"},
    {"verify", verify, METH_VARARGS,
     "verify(offsets, data, rows, templates, hashes=None) -> bytes of 0/1: whether text rows[i] matches template "
     "templates[i] (with the texts' hashes from keys(), once per distinct hash for a template without digits)"},
    {"assign", assign, METH_VARARGS,
     "assign(offsets, data, rows, logger_index, kafka) -> bytes of int64: each row's template (-1 for none)"},
    {"lookup", lookup, METH_VARARGS,
     "lookup(offsets, data, chars, names, valid) -> (shape keys, text hashes, templates) as bytes of uint64, uint64, "
     "int64: each text's template where one like it was remembered (-2 where not), its hash (digits as 0) and its "
     "shape's key (for the shape memo)"},
    {"remember", remember, METH_VARARGS,
     "remember(rows, text_hashes, names, shape_keys, templates) -> int: keep those texts' templates for later "
     "blocks; the number kept"},
    {"forget", forget, METH_NOARGS, "forget() -> None: drop every text and shape remembered"},
    {"block", block, METH_VARARGS,
     "block(offsets, data, chars, codes, glog, kafka, names, valid, memo_size) -> bytearray of int64: each text's "
     "template (-1 for none), a block matched in one call with the memos of texts and shapes"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_match", "Compiled template matching.", -1, METHODS};

PyMODINIT_FUNC PyInit__match(void) {
    if (!LOCK && !(LOCK = PyThread_allocate_lock()))
        return PyErr_NoMemory();
    return PyModule_Create(&MODULE);
}
