/*
 * One pass over a block of Kafka log4j text, in compiled code: the hot path of
 * kitlib/formats/logs/log4j.py.
 *
 * scan(block) reads the block once and returns the columns of its records (line of the
 * header, lines spanned, wall-clock milliseconds, level, logger, message) plus which
 * messages the secret pre-check flags. It handles the common case only: a block of valid UTF-8
 * with no NUL byte, whose first line is a record header, whose years fit the tables and whose
 * logger names are ASCII. For any other block it returns None and the caller parses it with the
 * numpy path, which is the reference: the tests check that both give the same tables.
 *
 * The rules (header shape, message and logger ranges, logger names) are the numpy path's,
 * written out per record; log4j.py's docstrings say what they mean.
 */
#define _GNU_SOURCE /* memrchr */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    char *data;
    Py_ssize_t len, cap;
    int fixed; /* memory not ours to grow (the message bytes object) */
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t more) {
    if (b->len + more <= b->cap)
        return 0;
    if (b->fixed)
        return -1;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *d = realloc(b->data, (size_t)cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *p, Py_ssize_t n) {
    if (buf_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return 0;
}

#define PUT(b, v)                                   \
    do {                                            \
        __typeof__(v) v_ = (v);                     \
        if (buf_put((b), &v_, sizeof v_)) goto nomem; \
    } while (0)

static const char *const LEVELS[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
static const Py_ssize_t LEVEL_LEN[] = {5, 5, 4, 4, 5, 5};

static inline int dec_digit(unsigned char c) { return c >= '0' && c <= '9' ? c - '0' : -1; }

/* days since 1970-01-01 of a proleptic Gregorian date (the numpy path's _epoch_ms) */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t mp = (m + 9) % 12;
    int64_t doy = (153 * mp + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The date and time of both styles once their digits are checked: the level's index or -1 when a
 * field is out of range */
static int wall_ms(const int d[17], int64_t *wall, int *far) {
    int year = d[0] * 1000 + d[1] * 100 + d[2] * 10 + d[3];
    int mon = d[4] * 10 + d[5], day = d[6] * 10 + d[7];
    int hh = d[8] * 10 + d[9], mi = d[10] * 10 + d[11], ss = d[12] * 10 + d[13];
    int ms = d[14] * 100 + d[15] * 10 + d[16];
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hh >= 24 || mi >= 60 || ss >= 61)
        return -1;
    *far = year < 1678 || year > 2261;
    *wall = (((days_from_civil(year, mon, day) * 24 + hh) * 60 + mi) * 60 + ss) * 1000 + ms;
    return 0;
}

/* Strimzi's header (%d{ISO8601} %p ): yyyy-mm-dd hh:mm:ss,SSS +LEVEL + . Returns the level
 * (0..5), or -1 when the line is no header of this form; sets *rest to where the message starts
 * (after the blanks that follow the level). The caller declines a block with a line that starts
 * with a digit and is not such a header: the general layout path may read it another way (a
 * 'T' in the date, another fraction, a zone, a level name in lower case). */
static int header_iso(const unsigned char *s, Py_ssize_t len, int64_t *wall, int *far, Py_ssize_t *rest) {
    if (len < 29 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' || s[19] != ',' ||
        s[23] != ' ')
        return -1;
    static const int pos[17] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22};
    int d[17];
    for (int k = 0; k < 17; k++) {
        d[k] = dec_digit(s[pos[k]]);
        if (d[k] < 0)
            return -1;
    }
    Py_ssize_t i = 24;
    while (i < len && s[i] == ' ')
        i++;
    int lvl = -1;
    for (int k = 0; k < 6; k++) {
        Py_ssize_t L = LEVEL_LEN[k];
        if (i + L < len && memcmp(s + i, LEVELS[k], (size_t)L) == 0 && s[i + L] == ' ') {
            lvl = k;
            i += L;
            break;
        }
    }
    if (lvl < 0 || wall_ms(d, wall, far) < 0)
        return -1;
    while (i < len && s[i] == ' ')
        i++;
    *rest = i;
    return lvl;
}

/* A record header: [yyyy-mm-dd hh:mm:ss,SSS] LEVEL( |end). Returns the level (0..5) or -1;
 * sets *wall (ms) and *far (year outside 1678..2261). */
static int header(const unsigned char *s, Py_ssize_t len, int64_t *wall, int *far) {
    if (len < 30 || s[0] != '[' || s[5] != '-' || s[8] != '-' || s[11] != ' ' || s[14] != ':' ||
        s[17] != ':' || s[20] != ',' || s[24] != ']' || s[25] != ' ')
        return -1;
    static const int pos[17] = {1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19, 21, 22, 23};
    int d[17];
    for (int k = 0; k < 17; k++) {
        d[k] = dec_digit(s[pos[k]]);
        if (d[k] < 0)
            return -1;
    }
    int lvl = -1;
    for (int i = 0; i < 6; i++) {
        Py_ssize_t L = LEVEL_LEN[i];
        if (26 + L <= len && memcmp(s + 26, LEVELS[i], (size_t)L) == 0 && (26 + L == len || s[26 + L] == ' ')) {
            lvl = i;
            break;
        }
    }
    if (lvl < 0 || wall_ms(d, wall, far) < 0)
        return -1;
    return lvl;
}

static inline Py_ssize_t trim_end(const unsigned char *a, Py_ssize_t s, Py_ssize_t e) {
    while (e > s && (a[e - 1] == ' ' || a[e - 1] == '\t'))
        e--;
    return e;
}

static inline int word_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The logger name in a[s:e) without Connect's ':<digits>' suffix; 0 when it is not a name
 * (^[A-Za-z_$][\w$.\-]*$ on ASCII), UNDECIDED when it holds a byte that is not ASCII. An
 * empty range is a valid, empty name. */
#define UNDECIDED 2
static int clean_logger(const unsigned char *a, Py_ssize_t s, Py_ssize_t *e) {
    if (*e <= s)
        return 1;
    for (Py_ssize_t i = s; i < *e; i++)
        if (a[i] >= 0x80)
            return UNDECIDED; /* Python's \w and \d know more than ASCII: the numpy path decides */
    Py_ssize_t k = *e;
    while (k > s && dec_digit(a[k - 1]) >= 0)
        k--;
    if (k < *e && k > s && a[k - 1] == ':')
        *e = k - 1;
    if (*e <= s)
        return 0;
    unsigned char c = a[s];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'))
        return 0;
    for (Py_ssize_t i = s + 1; i < *e; i++) {
        c = a[i];
        if (!(word_char(c) || c == '$' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

#include "../../redact/_precheck.h"

/* Strict UTF-8, as Python decodes it: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
        } else if (c < 0xC2) {
            return 0;
        } else if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c < 0xF0) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F))
                return 0;
            i += 3;
        } else if (c < 0xF5) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static int has_high_byte(const unsigned char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] >= 0x80)
            return 1;
    return 0;
}

/* ---- the block ------------------------------------------------------------------------------ */
typedef struct {
    Buf line, span, wall, level, msg_off, msg, log_idx, log_off, log, flagged, unsure;
    int64_t nrec;
    int ascii; /* the block holds no byte >= 0x80 */
    /* the logger names seen, each once (log_off/log), found again through an open-addressing
     * table of their indices (-1: free) */
    int32_t *slots;
    uint32_t nslots, nnames;
    /* what each '(...)' text met so far came to: the raw bytes (start and length in the block;
     * length -1: a free slot) and the name's index, or NOT_A_NAME; so each text is checked and
     * cleaned once, not once per record */
    struct Raw {
        Py_ssize_t start, len;
        int32_t name;
    } *raws;
    uint32_t nraw_slots, nraws;
} Out;

#define NOT_A_NAME (-2)
#define LEAVE_BLOCK (-3) /* a logger text only the numpy path can judge */

static void out_free(Out *o) {
    Buf *bs[] = {&o->line,    &o->span,    &o->wall, &o->level,   &o->msg_off, &o->msg,
                 &o->log_idx, &o->log_off, &o->log,  &o->flagged, &o->unsure};
    for (size_t i = 0; i < sizeof bs / sizeof *bs; i++)
        free(bs[i]->data);
    free(o->slots);
    free(o->raws);
}

/* a hash of a name from its length and its first and last eight bytes (names that share those
 * only cost a longer probe: every match is compared byte for byte) */
static uint32_t name_hash(const unsigned char *p, Py_ssize_t n) {
    uint64_t head = 0, tail = 0;
    if (n >= 8) {
        memcpy(&head, p, 8);
        memcpy(&tail, p + n - 8, 8);
    } else if (n > 0) {
        memcpy(&head, p, (size_t)n);
    }
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull ^ head * 0xC2B2AE3D27D4EB4Full ^ tail * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32));
}

static const unsigned char *name_at(const Out *o, int32_t k, Py_ssize_t *len) {
    const int64_t *off = (const int64_t *)o->log_off.data;
    *len = (Py_ssize_t)(off[k + 1] - off[k]);
    return (const unsigned char *)o->log.data + off[k];
}

static int grow_slots(Out *o) {
    uint32_t n = o->nslots ? o->nslots * 2 : 256;
    int32_t *s = malloc(sizeof(int32_t) * n);
    if (!s)
        return -1;
    memset(s, 0xff, sizeof(int32_t) * n);
    for (int32_t k = 0; k < (int32_t)o->nnames; k++) {
        Py_ssize_t len;
        const unsigned char *p = name_at(o, k, &len);
        uint32_t i = name_hash(p, len) & (n - 1);
        while (s[i] >= 0)
            i = (i + 1) & (n - 1);
        s[i] = k;
    }
    free(o->slots);
    o->slots = s;
    o->nslots = n;
    return 0;
}

/* the index of the logger name a[s:e), entered when new; -1: out of memory */
static int32_t name_index(Out *o, const unsigned char *p, Py_ssize_t n) {
    if ((o->nnames + 1) * 2 > o->nslots && grow_slots(o))
        return -1;
    uint32_t i = name_hash(p, n) & (o->nslots - 1);
    for (; o->slots[i] >= 0; i = (i + 1) & (o->nslots - 1)) {
        Py_ssize_t len;
        const unsigned char *q = name_at(o, o->slots[i], &len);
        if (len == n && (n == 0 || memcmp(p, q, (size_t)n) == 0)) /* memcmp on NULL is undefined, even for 0 bytes */
            return o->slots[i];
    }
    if (buf_put(&o->log, p, n))
        return -1;
    int64_t end = (int64_t)o->log.len;
    if (buf_put(&o->log_off, &end, sizeof end))
        return -1;
    o->slots[i] = (int32_t)o->nnames;
    return (int32_t)o->nnames++;
}

static int grow_raws(Out *o, const unsigned char *a) {
    uint32_t n = o->nraw_slots ? o->nraw_slots * 2 : 256;
    struct Raw *t = malloc(sizeof *t * n);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        t[i].len = -1;
    for (uint32_t k = 0; k < o->nraw_slots; k++) {
        struct Raw *r = &o->raws[k];
        if (r->len < 0)
            continue;
        uint32_t i = name_hash(a + r->start, r->len) & (n - 1);
        while (t[i].len >= 0)
            i = (i + 1) & (n - 1);
        t[i] = *r;
    }
    free(o->raws);
    o->raws = t;
    o->nraw_slots = n;
    return 0;
}

/* the name index of the logger text a[s:e) (Connect's ':line' dropped), NOT_A_NAME when it is
 * no logger name, LEAVE_BLOCK when it is not ASCII, -1: out of memory */
static int32_t logger_index(Out *o, const unsigned char *a, Py_ssize_t s, Py_ssize_t e) {
    if ((o->nraws + 1) * 2 > o->nraw_slots && grow_raws(o, a))
        return -1;
    Py_ssize_t n = e - s;
    uint32_t i = name_hash(a + s, n) & (o->nraw_slots - 1);
    for (; o->raws[i].len >= 0; i = (i + 1) & (o->nraw_slots - 1)) {
        struct Raw *r = &o->raws[i];
        if (r->len == n && memcmp(a + r->start, a + s, (size_t)n) == 0)
            return r->name;
    }
    Py_ssize_t ce = e;
    int clean = clean_logger(a, s, &ce);
    if (clean == UNDECIDED)
        return LEAVE_BLOCK;
    int32_t name = clean ? name_index(o, a + s, ce - s) : NOT_A_NAME;
    if (name == -1)
        return -1;
    o->raws[i].start = s;
    o->raws[i].len = n;
    o->raws[i].name = name;
    o->nraws++;
    return name;
}

typedef struct {
    Py_ssize_t hs, heff, hnl; /* header line: start, end without '\r', its '\n' (or block end) */
    int64_t hline, wall;
    int lvl;
    Py_ssize_t ls, leff, ps, peff; /* last line of the record, and the line before it */
    int64_t span;
    /* Strimzi's style: where the message starts, the last line that is not empty (start, end
     * without '\r', its '\n') and the line before that one */
    Py_ssize_t rest, nbs, nbeff, nbnl, pnbs, pnbeff;
} Rec;

/* one record out: its message is a[r1s:r1e] + a[r2s:r2e], its logger the name index ``name`` */
static int put_record(Out *o, const unsigned char *a, const Rec *r, Py_ssize_t r1s, Py_ssize_t r1e, Py_ssize_t r2s,
                      Py_ssize_t r2e, int32_t name) {
    if (r1e < r1s)
        r1e = r1s;
    if (r2e < r2s)
        r2e = r2s;
    int64_t mstart = (int64_t)o->msg.len;
    if (buf_put(&o->msg, a + r1s, r1e - r1s) || buf_put(&o->msg, a + r2s, r2e - r2s))
        return -1;
    const unsigned char *m = (const unsigned char *)o->msg.data + mstart;
    Py_ssize_t mlen = o->msg.len - mstart;
    if (!o->ascii && has_high_byte(m, mlen))
        PUT(&o->unsure, (int64_t)o->nrec); /* RE2 folds case beyond ASCII (ſ, K): it checks these */
    else if (suspect(m, mlen, r->span == 1))
        PUT(&o->flagged, (int64_t)o->nrec);
    PUT(&o->msg_off, (int64_t)o->msg.len);
    PUT(&o->log_idx, name);
    PUT(&o->line, (int64_t)(r->hline + 1));
    PUT(&o->span, (int32_t)r->span);
    PUT(&o->wall, (int64_t)r->wall);
    PUT(&o->level, (int8_t)r->lvl);
    o->nrec++;
    return 0;
nomem:
    return -1;
}

static inline int logger_char(unsigned char c) { return word_char(c) || c == '$' || c == '.' || c == '-'; }

/* a[s:e) as %c of the general layout path ([A-Za-z_$][\w$.\-]*(?::\d+)?, ASCII): 1 and the name
 * without its ':line' in [s, *ne), or 0 */
static int layout_logger(const unsigned char *a, Py_ssize_t s, Py_ssize_t e, Py_ssize_t *ne) {
    if (e <= s)
        return 0;
    unsigned char c = a[s];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$'))
        return 0;
    Py_ssize_t i = s + 1;
    while (i < e && logger_char(a[i]))
        i++;
    *ne = i;
    if (i == e)
        return 1;
    if (a[i] != ':' || i + 1 == e)
        return 0;
    for (Py_ssize_t k = i + 1; k < e; k++)
        if (dec_digit(a[k]) < 0)
            return 0;
    return 1;
}

/* Strimzi's ' +(%c) +[%t]' ending the line a[s:e) (e: its '\n' or the block's end; blanks, tabs and
 * '\r' may follow), as the general layout path's tail expression finds it: searched for on a
 * header line, or making up the whole line after blanks (``alone``, a record's last line).
 * Returns 1 with *suf (where the blanks before '(' start) and the name [*ns, *ne), or 0 when the
 * line does not end so. */
static int thread_tail(const unsigned char *a, Py_ssize_t s, Py_ssize_t e, int alone, Py_ssize_t *suf, Py_ssize_t *ns,
                       Py_ssize_t *ne) {
    Py_ssize_t k = e;
    while (k > s && (a[k - 1] == ' ' || a[k - 1] == '\t' || a[k - 1] == '\r'))
        k--;
    if (k == s || a[k - 1] != ']')
        return 0;
    Py_ssize_t close = k - 1, open, p, j;
    if (alone) {
        /* ^[ \t]* +\(%c\) +\[[^\]\n]*\] : the first ']' after the '[' must be the last one */
        p = s;
        while (p < close && (a[p] == ' ' || a[p] == '\t'))
            p++;
        if (p == s || a[p] != '(' || a[p - 1] != ' ')
            return 0;
        j = p + 1;
        while (j < close && a[j] != ')')
            j++;
        if (j >= close || !layout_logger(a, p + 1, j, ne))
            return 0;
        Py_ssize_t q = j + 1;
        if (q >= close || a[q] != ' ')
            return 0;
        while (q < close && a[q] == ' ')
            q++;
        if (a[q] != '[')
            return 0;
        for (Py_ssize_t t = q + 1; t < close; t++)
            if (a[t] == ']')
                return 0;
        *ns = p + 1;
        *suf = s; /* not used for a last line */
        return 1;
    }
    /* searched for: the thread holds no ']', so its '[' is after the ']' before the last one; of
     * those, the leftmost that the rest fits around starts the leftmost match */
    Py_ssize_t from = close - 1;
    while (from >= s && a[from] != ']')
        from--;
    for (open = from + 1; open < close; open++) {
        if (a[open] != '[')
            continue;
        j = open - 1;
        if (j < s || a[j] != ' ')
            continue;
        while (j > s && a[j] == ' ')
            j--;
        if (a[j] != ')')
            continue;
        p = j - 1;
        while (p >= s && (logger_char(a[p]) || a[p] == ':'))
            p--;
        if (p <= s || a[p] != '(' || a[p - 1] != ' ' || !layout_logger(a, p + 1, j, ne))
            continue;
        *ns = p + 1;
        Py_ssize_t q = p - 1;
        while (q > s && a[q - 1] == ' ')
            q--;
        *suf = q;
        return 1;
    }
    return 0;
}

/* a record of Strimzi's layout */
static int emit_iso(Out *o, const unsigned char *a, const Rec *r) {
    Py_ssize_t rest = r->rest;
    Py_ssize_t hend = trim_end(a, r->hs, r->heff);
    Py_ssize_t r1s = rest, r1e = hend > rest ? hend : rest;
    int multi = r->nbs != r->hs;
    Py_ssize_t r2s = multi ? r->hnl : 0, r2e = multi ? r->nbeff : 0;
    Py_ssize_t suf = 0, ns = 0, ne = 0;
    int named = 0;
    if (thread_tail(a, r->hs, r->hnl, 0, &suf, &ns, &ne) && suf >= rest) {
        r1e = trim_end(a, r1s, suf > r1s ? suf : r1s);
        named = 1;
    } else if (multi && thread_tail(a, r->nbs, r->nbnl, 1, &suf, &ns, &ne) == 1) {
        named = 1;
        if (r->pnbs != r->hs) {
            r2e = trim_end(a, r->pnbs, r->pnbeff);
        } else {
            r2s = 0;
            r2e = 0;
        }
    }
    int32_t name = named ? name_index(o, a + ns, ne - ns) : name_index(o, a, 0);
    if (name < 0)
        return -1;
    return put_record(o, a, r, r1s, r1e, r2s, r2e, name);
}

static int emit(Out *o, const unsigned char *a, const Rec *r) {
    Py_ssize_t L = LEVEL_LEN[r->lvl];
    Py_ssize_t hend = trim_end(a, r->hs, r->heff);
    Py_ssize_t msg_start = r->hs + 26 + L + 1;
    if (msg_start > hend)
        msg_start = hend;
    /* the last '(' before hend - 1, when the line ends with ')' */
    Py_ssize_t po = -1;
    if (hend - 1 > msg_start && a[hend - 1] == ')') {
        const unsigned char *k = memrchr(a + msg_start, '(', (size_t)(hend - 1 - msg_start));
        po = k ? k - a : -1;
    }
    int hdr_logger = po >= msg_start && (po == msg_start || a[po - 1] == ' ');
    int multi = r->span > 1;
    Py_ssize_t le = trim_end(a, r->ls, r->leff);
    int tail_logger = multi && le - r->ls >= 4 && a[r->ls] == ' ' && a[r->ls + 1] == '(' && a[le - 1] == ')';

    Py_ssize_t r1s = msg_start, r1e = hend, r2s = 0, r2e = 0, gs = 0, ge = 0;
    if (hdr_logger && !tail_logger) {
        r1e = po - 1 > msg_start ? po - 1 : msg_start;
        gs = po + 1;
        ge = hend - 1;
    }
    if (multi && !tail_logger) {
        r2s = r->hnl;
        r2e = r->leff;
    }
    if (tail_logger) {
        Py_ssize_t pe = trim_end(a, r->ps, r->peff);
        r1e = pe > r1s ? pe : r1s;
        gs = r->ls + 2;
        ge = le - 1;
    }
    int32_t name = logger_index(o, a, gs, ge);
    if (name == -1)
        return -1;
    if (name == LEAVE_BLOCK)
        return 1;
    if (name == NOT_A_NAME) { /* a '(...)' that is no logger name stays in the message */
        r1e = tail_logger ? r->leff : hend;
        name = name_index(o, a, 0);
        if (name < 0)
            return -1;
    }
    return put_record(o, a, r, r1s, r1e, r2s, r2e, name);
}

/* The two layouts the scan reads: Kafka's [%d] %p %m (%c)%n, and Strimzi's
 * %d{ISO8601} %p %m (%c) [%t]%n (the general layout path is its reference, as the numpy path is
 * for Kafka's) */
#define KAFKA 0
#define STRIMZI 1

/* 0: scanned; 1: not the common case (the caller takes the numpy or general path); -1: out of
 * memory */
static int scan_block(const unsigned char *a, Py_ssize_t n, Out *o, int64_t *nlines_out, int style) {
    if (n == 0 || memchr(a, 0, (size_t)n))
        return 1;
    {
        uint64_t acc = 0;
        Py_ssize_t i = 0;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, a + i, 8);
            acc |= w;
        }
        for (; i < n; i++)
            acc |= a[i];
        o->ascii = !(acc & 0x8080808080808080ULL);
        if (!o->ascii && !utf8_valid(a, n))
            return 1; /* the numpy path names the lines that are not UTF-8 */
    }
    int rc;
    int64_t zero = 0;
    PUT(&o->msg_off, zero);
    PUT(&o->log_off, zero);
    Rec r;
    int have = 0;
    int64_t line = 0;
    Py_ssize_t s = 0, prev_s = 0, prev_eff = 0;
    while (s < n) {
        const unsigned char *nlp = memchr(a + s, '\n', (size_t)(n - s));
        Py_ssize_t e = nlp ? nlp - a : n;
        Py_ssize_t eff = (e > s && a[e - 1] == '\r') ? e - 1 : e;
        int64_t wall = 0;
        int far = 0, lvl = -1;
        Py_ssize_t rest = 0;
        if (style == KAFKA) {
            lvl = (a[s] == '[') ? header(a + s, eff - s, &wall, &far) : -1;
        } else if (s < n && dec_digit(a[s]) >= 0) {
            lvl = header_iso(a + s, eff - s, &wall, &far, &rest);
            if (lvl < 0)
                return 1; /* a line the general path may take for a header of another form */
        }
        if (lvl >= 0 && far)
            return 1;
        if (lvl >= 0) {
            if (have && (rc = style == KAFKA ? emit(o, a, &r) : emit_iso(o, a, &r)) != 0)
                return rc;
            have = 1;
            r.rest = s + rest;
            r.nbs = r.pnbs = s;
            r.nbeff = r.pnbeff = eff;
            r.nbnl = e;
            r.hs = s;
            r.heff = eff;
            r.hnl = e;
            r.hline = line;
            r.wall = wall;
            r.lvl = lvl;
            r.span = 1;
            r.ls = s;
            r.leff = eff;
            r.ps = s;
            r.peff = eff;
        } else {
            if (!have)
                return 1; /* lines before the first header */
            r.span++;
            r.ps = prev_s;
            r.peff = prev_eff;
            r.ls = s;
            r.leff = eff;
            if (eff > s) {
                r.pnbs = prev_s;
                r.pnbeff = prev_eff;
                r.nbs = s;
                r.nbeff = eff;
                r.nbnl = e;
            }
        }
        prev_s = s;
        prev_eff = eff;
        line++;
        s = e + 1;
    }
    if (have && (rc = style == KAFKA ? emit(o, a, &r) : emit_iso(o, a, &r)) != 0)
        return rc;
    *nlines_out = line;
    return 0;
nomem:
    return -1;
}

static PyObject *as_bytes(Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", b->len); }

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *arg;
    int style = KAFKA;
    if (!PyArg_ParseTuple(args, "O|i", &arg, &style))
        return NULL;
    if (style != KAFKA && style != STRIMZI) {
        PyErr_SetString(PyExc_ValueError, "style: 0 (Kafka's layout) or 1 (Strimzi's)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    /* the messages are written straight into the bytes object returned: they are disjoint parts
     * of the block, so the block's size bounds them */
    PyObject *msg = PyBytes_FromStringAndSize(NULL, view.len);
    if (!msg) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Out o;
    memset(&o, 0, sizeof o);
    o.msg.data = PyBytes_AS_STRING(msg);
    o.msg.cap = view.len;
    o.msg.fixed = 1;
    int64_t nlines = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS;
    rc = scan_block((const unsigned char *)view.buf, view.len, &o, &nlines, style);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    o.msg.data = NULL; /* owned by msg */
    PyObject *res = NULL;
    if (rc < 0)
        PyErr_NoMemory();
    else if (rc > 0)
        res = Py_NewRef(Py_None);
    else if (_PyBytes_Resize(&msg, o.msg.len) == 0) {
        res = Py_BuildValue("(LNNNNNONNNNN)", (long long)nlines, as_bytes(&o.line), as_bytes(&o.span),
                            as_bytes(&o.wall), as_bytes(&o.level), as_bytes(&o.msg_off), msg, as_bytes(&o.log_idx),
                            as_bytes(&o.log_off), as_bytes(&o.log), as_bytes(&o.flagged), as_bytes(&o.unsure));
    }
    Py_XDECREF(msg);
    out_free(&o);
    return res;
}

static PyObject *flag(PyObject *self, PyObject *args) {
    Py_buffer view;
    int hashed = 0;
    if (!PyArg_ParseTuple(args, "y*|p", &view, &hashed))
        return NULL;
    int hit;
    Py_BEGIN_ALLOW_THREADS;
    hit = suspect_by((const unsigned char *)view.buf, view.len, memchr(view.buf, '\n', (size_t)view.len) == NULL,
                     !hashed);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    return PyBool_FromLong(hit);
}

/* newline bytes in a buffer, eight at a time: a byte of x is zero where the text has '\n', and
 * ((x & 0x7f..) + 0x7f..) | x sets the top bit of every byte that is not zero, with no carry
 * between bytes. The per-byte 0/1 results are summed in the eight bytes of one word (at most 255
 * rounds, so no byte overflows), then added up in four 16-bit lanes and those with one multiply. */
static int64_t newlines(const unsigned char *p, Py_ssize_t n) {
    int64_t count = 0;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    /* 16 bytes a step: each newline adds 1 to its lane's byte counter (up to 255 steps), then
     * the counters are summed (psadbw) */
    const __m128i nlv = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        __m128i acc = zero;
        for (int round = 0; round < 255 && i + 16 <= n; round++, i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), nlv));
        const __m128i sums = _mm_sad_epu8(acc, zero);
        count += _mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums));
    }
#endif
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7fULL, nl = 0x0a0a0a0a0a0a0a0aULL, ones = 0x0101010101010101ULL;
    while (i + 8 <= n) {
        uint64_t sums = 0;
        for (int round = 0; round < 255 && i + 8 <= n; round++, i += 8) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            x ^= nl;
            sums += (~(((x & lo7) + lo7) | x) >> 7) & ones;
        }
        const uint64_t lanes = (sums & 0x00ff00ff00ff00ffULL) + ((sums >> 8) & 0x00ff00ff00ff00ffULL);
        count += (int64_t)((lanes * 0x0001000100010001ULL) >> 48);
    }
    for (; i < n; i++)
        count += p[i] == '\n';
    return count;
}

static PyObject *count_newlines(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    int64_t n;
    Py_BEGIN_ALLOW_THREADS;
    n = newlines((const unsigned char *)view.buf, view.len);
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&view);
    return PyLong_FromLongLong((long long)n);
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS,
     "scan(block, style=0) -> (nlines, line, span, wall_ms, level, msg_offsets, msg_data, logger_index, "
     "name_offsets, name_data, flagged, unsure) as bytes of int64/int32/int8 values, or None when the block needs "
     "the general parser; style 0: Kafka's layout, 1: Strimzi's; unsure: messages with non-ASCII text, which the "
     "caller checks with RE2"},
    {"flag", flag, METH_VARARGS,
     "flag(text: bytes, hashed=False) -> bool: whether the secret pre-check flags the text; hashed: by the "
     "hashed positions even where the CPU can look sixteen at a time (the scan's way without SSSE3)"},
    {"count_newlines", count_newlines, METH_O, "count_newlines(data) -> int: the newline bytes in data"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_scan", "Compiled log4j block scan.", -1, METHODS};

PyMODINIT_FUNC PyInit__scan(void) {
    precheck_init();
    return PyModule_Create(&MODULE);
}
