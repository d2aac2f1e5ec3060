/* The secret pre-check in compiled code, one home for the log scan (kitlib/formats/logs/_scan.c)
 * and the pre-check over whole columns (kitlib/redact/_precheck.c): static functions, included by
 * each. precheck_init() fills the tables once, before any text is looked at. */
#ifndef KITLIB_PRECHECK_H
#define KITLIB_PRECHECK_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- the secret pre-check ------------------------------------------------------------------
 * A superset of kitlib.redact.PREFILTER: every message that expression matches is flagged here
 * (the rules then decide; a message flagged for nothing is left as it is). Words are matched
 * case-insensitively at any position; the tests hold the two side by side. */
static unsigned char LOWER[256];
static unsigned char B64[256];

static inline int eq_ci(const unsigned char *p, const unsigned char *end, const char *w) {
    for (; *w; w++, p++) {
        if (p >= end || LOWER[*p] != (unsigned char)*w)
            return 0;
    }
    return 1;
}

/* [._-] or any one byte (PREFILTER's '.'): how the key words are joined */
static inline int sep_any(const unsigned char *p, const unsigned char *end) { return p < end && *p != '\n'; }

/* word w, then "key" right after it or after any one byte (PREFILTER's w.?key) */
static inline int word_key(const unsigned char *p, const unsigned char *end, const char *w) {
    size_t n = strlen(w);
    return eq_ci(p, end, w) && (eq_ci(p + n, end, "key") || (sep_any(p + n, end) && eq_ci(p + n + 1, end, "key")));
}

static int word_at(const unsigned char *p, const unsigned char *end) {
    const unsigned char *q;
    switch (LOWER[*p]) {
    case 'p':
        return eq_ci(p, end, "pass") || eq_ci(p, end, "pwd") || word_key(p, end, "private");
    case 's':
        return eq_ci(p, end, "secret") || eq_ci(p, end, "sig=") || eq_ci(p, end, "signature=") ||
               word_key(p, end, "signing");
    case 't':
        return eq_ci(p, end, "token");
    case 'e':
        return eq_ci(p, end, "eyj") || word_key(p, end, "encryption");
    case 'l':
        return word_key(p, end, "license");
    case 'h':
        return word_key(p, end, "hmac");
    case 'm':
        return word_key(p, end, "master") || eq_ci(p, end, "monitorrole") || eq_ci(p, end, "mysql") ||
               eq_ci(p, end, "mariadb");
    case 'r':
        return eq_ci(p, end, "redis-cli");
    case '-':
        /* -u or -U and a blank (curl -u user:password), --user, --proxy-user */
        return (p + 2 < end && LOWER[p[1]] == 'u' && (p[2] == ' ' || p[2] == '\t')) || eq_ci(p, end, "--user") ||
               eq_ci(p, end, "--proxy-user");
    case 'a':
        if (word_key(p, end, "account"))
            return 1;
        if (eq_ci(p, end, "api") && p + 3 < end && (p[3] == '.' || p[3] == '_' || p[3] == '-') &&
            eq_ci(p + 4, end, "key"))
            return 1;
        if (eq_ci(p, end, "apikey") || eq_ci(p, end, "aiza") || eq_ci(p, end, "authorization"))
            return 1;
        if (eq_ci(p, end, "access") &&
            (eq_ci(p + 6, end, "key") || (sep_any(p + 6, end) && eq_ci(p + 7, end, "key"))))
            return 1;
        if (eq_ci(p, end, "auth") && sep_any(p + 4, end) && eq_ci(p + 5, end, "user") && sep_any(p + 9, end) &&
            eq_ci(p + 10, end, "info"))
            return 1;
        /* case-sensitive in PREFILTER; matched without case here (a superset) */
        return eq_ci(p, end, "akia") || eq_ci(p, end, "asia") || eq_ci(p, end, "abia") || eq_ci(p, end, "acca");
    case 'c':
        return eq_ci(p, end, "credential") || eq_ci(p, end, "cookie") || eq_ci(p, end, "controlrole") ||
               eq_ci(p, end, "curl") || word_key(p, end, "cipher");
    case 'b':
        return eq_ci(p, end, "bearer") || (eq_ci(p, end, "bind") && sep_any(p + 4, end) && eq_ci(p + 5, end, "pw"));
    case 'j':
        return eq_ci(p, end, "jaas") || eq_ci(p, end, "jdbc:oracle");
    case 'k':
        return eq_ci(p, end, "keystore") && sep_any(p + 8, end) && eq_ci(p + 9, end, "key");
    case 'u':
        return eq_ci(p, end, "user_");
    case 'g':
        if (eq_ci(p, end, "gh") && p + 3 < end && p[3] == '_') {
            unsigned char c = LOWER[p[2]];
            return c == 'p' || c == 'o' || c == 'u' || c == 's' || c == 'r';
        }
        return 0;
    case 'x':
        if (eq_ci(p, end, "xox") && p + 4 < end && p[4] == '-') {
            unsigned char c = LOWER[p[3]];
            return c == 'a' || c == 'b' || c == 'p' || c == 'r' || c == 's';
        }
        return 0;
    case ':':
        /* ://user:password@ */
        if (!(p + 2 < end && p[1] == '/' && p[2] == '/'))
            return 0;
        q = p + 3;
        {
            const unsigned char *u = q;
            while (q < end && *q != '/' && *q != ':' && *q != '@' && *q != ' ' && *q != '\t' && *q != '\n' &&
                   *q != '\r' && *q != '\f')
                q++;
            (void)u; /* the user may be empty (redis://:password@host) */
            if (q >= end || *q != ':')
                return 0;
            const unsigned char *v = ++q;
            while (q < end && *q != '@' && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != '\f')
                q++;
            return q > v && q < end && *q == '@';
        }
    default:
        return 0;
    }
}

/* a line that is only a base64 run of 40+ characters, blanks around it */
static int base64_line(const unsigned char *s, const unsigned char *e) {
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    int eq = 0;
    while (eq < 2 && e > s && e[-1] == '=') {
        e--;
        eq++;
    }
    if (e - s < 40)
        return 0;
    for (; s < e; s++)
        if (!B64[*s])
            return 0;
    return 1;
}

/* Where to look. Every second position is hashed: its four bytes (letters folded by | 0x20, other
 * bytes folded the same way on both sides) index a bitmap of 2^17 bits that holds, for each word
 * above, the four bytes a word starting there or one byte either side would put there: the word's
 * bytes 0-3 and 1-4 (a word of three or four letters: its first three after any byte, and before
 * any byte). A position whose bits are clear starts no word at itself or next to it; a hit is
 * checked with word_at() at those three places. */
#define HASH_BITS 17
static uint8_t STARTS[1 << (HASH_BITS - 3)];

static inline uint32_t fold4(const unsigned char *p) {
    uint32_t w;
    memcpy(&w, p, 4);
    return w | 0x20202020u;
}

static inline uint32_t hash4(uint32_t w) { return (w * 0x9E3779B1u) >> (32 - HASH_BITS); }

/* the same four-byte keys held exactly, so that the bitmap's collisions (most of its hits) end
 * in one probe rather than in word_at() three times; a folded key is never 0 (bit 5 of each byte) */
#define KEY_BITS 14
static uint32_t KEYS[1 << KEY_BITS];

static inline uint32_t key_slot(uint32_t w) { return (w * 0x85EBCA6Bu) >> (32 - KEY_BITS); }

static inline int is_key(uint32_t w) {
    for (uint32_t i = key_slot(w);; i = (i + 1) & ((1u << KEY_BITS) - 1)) {
        if (KEYS[i] == w)
            return 1;
        if (KEYS[i] == 0)
            return 0;
    }
}

static void enter(const char *w4) {
    uint32_t w = fold4((const unsigned char *)w4);
    uint32_t h = hash4(w);
    STARTS[h >> 3] |= (uint8_t)(1u << (h & 7));
    uint32_t i = key_slot(w);
    while (KEYS[i] != 0 && KEYS[i] != w)
        i = (i + 1) & ((1u << KEY_BITS) - 1);
    KEYS[i] = w;
}

static void enter_word(const char *w) {
    size_t n = strlen(w);
    if (n >= 5) {
        enter(w);
        enter(w + 1);
        return;
    }
    char buf[4];
    if (n == 4)
        enter(w);
    for (int c = 0; c < 256; c++) {
        buf[0] = (char)c;
        memcpy(buf + 1, w, 3);
        enter(buf);
        memcpy(buf, w, 3);
        buf[3] = (char)c;
        enter(buf);
    }
}

/* the first bytes (up to five) of every word word_at() finds, lower-case: a word starts with one
 * of these wherever word_at() finds it */
static const char *const WORDS[] = {
    "pass",  "pwd",   "priva", "secre", "token", "api.k", "api_k", "api-k", "apike", "aiza",
    "autho", "auth.", "auth_", "auth-", "acces", "akia",  "asia",  "abia",  "acca",  "crede", "beare",
    "bind",  "jaas",  "keyst", "user_", "eyj",   "://",   "ghp_",  "gho_",  "ghu_",  "ghs_",  "ghr_",
    "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "cooki", "accou", "encry", "signi", "licen", "hmac",
    "maste", "ciphe", "sig=",  "signa", "monit", "contr", "jdbc:", "mysql", "maria", "redis", "curl",
    "-u ",   "-u\t",  "--use", "--pro", NULL};

static void build_starts(void) {
    for (const char *const *w = WORDS; *w; w++)
        enter_word(*w);
    /* auth<any>user<any>info: "auth" and one byte of any kind */
    char buf[6] = {'a', 'u', 't', 'h', 0, 0};
    for (int c = 0; c < 256; c++) {
        buf[4] = (char)c;
        enter(buf + 1);
    }
    /* api<sep>key, access<any>key and bind<any>pw are entered through their first five bytes
     * above when <sep> is . _ -; "acces" and "bind" cover the rest */
}

/* the bytes word_at() may find a word at (its cases), so that the last positions of a text skip
 * the call where it cannot match */
static uint8_t FIRST[256];

static void build_first(void) {
    static const char firsts[] = "pstelhmr-acbjkugx:";
    for (const char *c = firsts; *c; c++) {
        FIRST[(unsigned char)*c] = 1;
        if (*c >= 'a' && *c <= 'z')
            FIRST[(unsigned char)(*c - 32)] = 1;
    }
}

/* whether word_at() finds a word anywhere in [p, end): every second position hashed (above) */
static int words_hashed(const unsigned char *p, const unsigned char *end) {
    const unsigned char *q = p;
    for (; q + 4 <= end; q += 2) {
        uint32_t w = fold4(q), h = hash4(w);
        if ((STARTS[h >> 3] >> (h & 7)) & 1 && is_key(w)) {
            if ((q > p && word_at(q - 1, end)) || word_at(q, end) || word_at(q + 1, end))
                return 1;
        }
    }
    /* the last positions, where four bytes do not fit */
    for (q = (q - 1 > p ? q - 1 : p); q < end; q++)
        if (FIRST[*q] && word_at(q, end))
            return 1;
    return 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <tmmintrin.h>
/* The same question sixteen positions at a time (SSSE3). Each word's first four bytes, either
 * case of a letter, are put in one of eight groups: the words of three bytes in the last group
 * (any fourth byte), the others by their first byte. For each of the four byte positions, a group
 * keeps the low and the high halves of the bytes its words have there. A position is a candidate
 * for a group when its four bytes' halves are all in that group's (two table lookups, PSHUFB, per
 * byte position); a candidate is then checked as the hashed way checks a position (the bitmap and
 * the exact four-byte key) and by word_at(). The halves admit more than the words, never fewer. */
static uint8_t HALF_LO[4][16], HALF_HI[4][16];
static int HALVES_READY;

static void build_halves(void) {
    unsigned char firsts[64];
    int nfirst = 0;
    for (const char *const *w = WORDS; *w; w++) {
        const unsigned char *b = (const unsigned char *)*w;
        size_t n = strlen(*w);
        uint8_t bit;
        if (n == 3) {
            bit = 1u << 7;
        } else {
            int g = 0;
            while (g < nfirst && firsts[g] != b[0])
                g++;
            if (g == nfirst)
                firsts[nfirst++] = b[0];
            bit = (uint8_t)(1u << (g % 7));
        }
        for (int k = 0; k < 4; k++) {
            if (k == 3 && n == 3) {
                for (int h = 0; h < 16; h++)
                    HALF_LO[k][h] |= bit, HALF_HI[k][h] |= bit;
                continue;
            }
            unsigned char c = b[k];
            HALF_LO[k][c & 15] |= bit;
            HALF_HI[k][c >> 4] |= bit;
            if (c >= 'a' && c <= 'z') {
                HALF_LO[k][(c - 32) & 15] |= bit;
                HALF_HI[k][(c - 32) >> 4] |= bit;
            }
        }
    }
    HALVES_READY = __builtin_cpu_supports("ssse3");
}

typedef struct {
    __m128i lo[4], hi[4];
} Halves;

/* the candidate positions among the sixteen that start at a (the bytes a[0..18] are read) */
__attribute__((target("ssse3"))) static inline unsigned candidates16(const Halves *t, const unsigned char *a) {
    const __m128i low = _mm_set1_epi8(15);
    __m128i hit = _mm_set1_epi8(-1);
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(a + k));
        __m128i lo = _mm_shuffle_epi8(t->lo[k], _mm_and_si128(v, low));
        __m128i hi = _mm_shuffle_epi8(t->hi[k], _mm_and_si128(_mm_srli_epi16(v, 4), low));
        hit = _mm_and_si128(hit, _mm_and_si128(lo, hi));
    }
    return ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(hit, _mm_setzero_si128())) & 0xFFFFu;
}

/* a candidate at q, its four bytes in the text, checked as the hashed way checks a position */
static inline int word_from(const unsigned char *q, const unsigned char *end) {
    uint32_t w = fold4(q), h = hash4(w);
    return (STARTS[h >> 3] >> (h & 7)) & 1 && is_key(w) && word_at(q, end);
}

__attribute__((target("ssse3"))) static int words_halved(const unsigned char *p, const unsigned char *end) {
    Halves t;
    for (int k = 0; k < 4; k++) {
        t.lo[k] = _mm_loadu_si128((const __m128i *)HALF_LO[k]);
        t.hi[k] = _mm_loadu_si128((const __m128i *)HALF_HI[k]);
    }
    Py_ssize_t n = end - p, i = 0;
    if (n < 19) { /* a short text: its bytes copied before zeros, its candidates checked in it */
        unsigned char tail[40] = {0};
        memcpy(tail, p, (size_t)n);
        for (int half = 0; half * 16 < n; half++) {
            unsigned bits = candidates16(&t, tail + half * 16);
            if (n - half * 16 < 16)
                bits &= (1u << (n - half * 16)) - 1;
            for (; bits; bits &= bits - 1)
                if (word_at(p + half * 16 + __builtin_ctz(bits), end))
                    return 1;
        }
        return 0;
    }
    for (; i + 19 <= n; i += 16)
        for (unsigned bits = candidates16(&t, p + i); bits; bits &= bits - 1)
            if (word_from(p + i + __builtin_ctz(bits), end))
                return 1;
    /* the positions left up to the last four bytes: the sixteen that end there (those looked at
     * above left out), then the last three positions (a word of three bytes) one by one */
    Py_ssize_t at = n - 19;
    unsigned bits = candidates16(&t, p + at) & ~((1u << (i - at)) - 1);
    for (; bits; bits &= bits - 1)
        if (word_from(p + at + __builtin_ctz(bits), end))
            return 1;
    for (const unsigned char *q = end - 3; q < end; q++)
        if (FIRST[*q] && word_at(q, end))
            return 1;
    return 0;
}
#else
#define HALVES_READY 0
static void build_halves(void) {}
static int words_halved(const unsigned char *p, const unsigned char *end) { return words_hashed(p, end); }
#endif

/* one_line: the text holds no newline (a record of one line), so it is one line for the base64
 * test, without looking for newlines in it; halved: words looked for sixteen positions at a time
 * (where the CPU can), else every second position hashed (flag(text, True): the tests hold the
 * two side by side) */
static int suspect_by(const unsigned char *p, Py_ssize_t len, int one_line, int halved) {
    const unsigned char *end = p + len;
    if (halved && HALVES_READY ? words_halved(p, end) : words_hashed(p, end))
        return 1;
    if (one_line)
        return len >= 40 && base64_line(p, end);
    /* base64 lines: only lines of 40+ bytes are looked at */
    const unsigned char *line = p;
    while (line < end) {
        const unsigned char *nl = memchr(line, '\n', (size_t)(end - line));
        const unsigned char *e = nl ? nl : end;
        if (e - line >= 40 && base64_line(line, e))
            return 1;
        line = e + 1;
    }
    return 0;
}

static int suspect(const unsigned char *p, Py_ssize_t len, int one_line) { return suspect_by(p, len, one_line, 1); }

static void precheck_init(void) {
    for (int c = 0; c < 256; c++) {
        LOWER[c] = (unsigned char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
        B64[c] = (unsigned char)((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                 c == '+' || c == '/');
    }
    build_starts();
    build_first();
    build_halves();
}

#endif
