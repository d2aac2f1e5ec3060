/* Cutting texts at fixed literal pieces, for the layouts of the extraction rules
 * (kitlib/extract/rules.py, Layout.cut): what Arrow's split_pattern, list_element and the empty-text
 * test did in one kernel pass per piece, here in one pass over the texts for all pieces.
 *
 * lead(): each row of a string array split at the first occurrence of a literal: whether the row
 * holds it, and the text after it (the rows that hold it, in order) as a new string array.
 * steps(): each row of a string array (no nulls) read as a series of cuts: each takes the text up
 * to the first (or the last) occurrence of its literal and goes on after it, or, without a literal,
 * takes all that is left (and the next cut reads it again). The pieces come back as string
 * arrays, null where empty.
 *
 * Arrays come and go as their buffers: offsets (32-bit, or 64-bit when large), data, and a
 * validity bitmap (None: no nulls), with the array's offset and length. Made arrays have 64-bit
 * offsets from 0. Bytes are compared as they are: a literal in UTF-8 only ever matches at a
 * character's start, as Arrow's search does. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *offs, *data, *valid;
    Py_ssize_t offset, length, data_len;
    int large;
} Texts;

static inline int64_t text_offset(const Texts *t, Py_ssize_t k) {
    if (t->large) {
        int64_t o;
        memcpy(&o, t->offs + (size_t)k * 8, 8);
        return o;
    }
    int32_t o32;
    memcpy(&o32, t->offs + (size_t)k * 4, 4);
    return o32;
}

/* the first occurrence of needle (n bytes, n > 0) in hay (h bytes), or NULL */
static const unsigned char *first_of(const unsigned char *hay, size_t h, const unsigned char *needle, size_t n) {
    if (n > h)
        return NULL;
    return (const unsigned char *)memmem(hay, h, needle, n);
}

/* the last occurrence of needle (n bytes, n > 0) in hay (h bytes), or NULL */
static const unsigned char *last_of(const unsigned char *hay, size_t h, const unsigned char *needle, size_t n) {
    if (n > h)
        return NULL;
    for (size_t at = h - n + 1; at-- > 0;) {
        if (hay[at] == needle[0] && memcmp(hay + at, needle, n) == 0)
            return hay + at;
    }
    return NULL;
}

/* the buffers of a string array given as Python objects, checked against its offset and length */
static int get_texts(PyObject *off_o, PyObject *data_o, PyObject *valid_o, Py_ssize_t offset, Py_ssize_t length,
                     int large, Py_buffer *ov, Py_buffer *dv, Py_buffer *vv, Texts *t) {
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset, length: not negative");
        return -1;
    }
    if (PyObject_GetBuffer(off_o, ov, PyBUF_SIMPLE) < 0)
        return -1;
    if (PyObject_GetBuffer(data_o, dv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(ov);
        return -1;
    }
    vv->obj = NULL;
    if (valid_o != Py_None && PyObject_GetBuffer(valid_o, vv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(dv);
        PyBuffer_Release(ov);
        return -1;
    }
    size_t width = large ? 8 : 4;
    if ((size_t)ov->len < ((size_t)offset + (size_t)length + 1) * width ||
        (vv->obj && (size_t)vv->len * 8 < (size_t)offset + (size_t)length)) {
        PyErr_SetString(PyExc_ValueError, "buffers: too short for offset and length");
        goto fail;
    }
    t->offs = ov->buf;
    t->data = dv->buf;
    t->valid = vv->obj ? vv->buf : NULL;
    t->offset = offset;
    t->length = length;
    t->data_len = dv->len;
    t->large = large;
    /* every row's bounds within the data, in order: checked once, so the passes below need not */
    int64_t prev = text_offset(t, offset);
    if (prev < 0 || prev > dv->len)
        goto bad;
    for (Py_ssize_t i = 1; i <= length; i++) {
        int64_t o = text_offset(t, offset + i);
        if (o < prev || o > dv->len)
            goto bad;
        prev = o;
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "offsets: not those of a valid string array");
fail:
    if (vv->obj)
        PyBuffer_Release(vv);
    PyBuffer_Release(dv);
    PyBuffer_Release(ov);
    return -1;
}

static void release_texts(Py_buffer *ov, Py_buffer *dv, Py_buffer *vv) {
    if (vv->obj)
        PyBuffer_Release(vv);
    PyBuffer_Release(dv);
    PyBuffer_Release(ov);
}

static inline int is_valid(const Texts *t, Py_ssize_t k) {
    return !t->valid || ((t->valid[k >> 3] >> (k & 7)) & 1);
}

static PyObject *lead(PyObject *self, PyObject *args) {
    PyObject *off_o, *data_o, *valid_o;
    Py_ssize_t offset, length;
    int large;
    const char *needle;
    Py_ssize_t nlen;
    if (!PyArg_ParseTuple(args, "OOOnnpy#", &off_o, &data_o, &valid_o, &offset, &length, &large, &needle, &nlen))
        return NULL;
    if (nlen <= 0) {
        PyErr_SetString(PyExc_ValueError, "lead: not empty");
        return NULL;
    }
    Py_buffer ov, dv, vv;
    Texts t;
    if (get_texts(off_o, data_o, valid_o, offset, length, large, &ov, &dv, &vv, &t) < 0)
        return NULL;
    PyObject *has = PyBytes_FromStringAndSize(NULL, length);
    PyObject *rest_off = NULL, *rest_data = NULL;
    if (!has)
        goto fail;
    unsigned char *h = (unsigned char *)PyBytes_AS_STRING(has);
    /* first pass: where each row's lead ends (-1: none), and the sizes of what follows */
    int64_t *after = PyMem_Malloc(sizeof(int64_t) * (size_t)(length ? length : 1));
    if (!after) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t rows = 0;
    int64_t bytes = 0;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_ssize_t k = offset + i;
        after[i] = -1;
        h[i] = 0;
        if (!is_valid(&t, k))
            continue;
        int64_t a = text_offset(&t, k), b = text_offset(&t, k + 1);
        const unsigned char *at = first_of(t.data + a, (size_t)(b - a), (const unsigned char *)needle, (size_t)nlen);
        if (!at)
            continue;
        after[i] = (int64_t)(at - t.data) + nlen;
        h[i] = 1;
        rows++;
        bytes += b - after[i];
    }
    Py_END_ALLOW_THREADS;
    rest_off = PyBytes_FromStringAndSize(NULL, (rows + 1) * 8);
    rest_data = PyBytes_FromStringAndSize(NULL, bytes);
    if (!rest_off || !rest_data) {
        PyMem_Free(after);
        goto fail;
    }
    int64_t *ro = (int64_t *)PyBytes_AS_STRING(rest_off);
    unsigned char *rd = (unsigned char *)PyBytes_AS_STRING(rest_data);
    Py_BEGIN_ALLOW_THREADS;
    int64_t pos = 0;
    Py_ssize_t r = 0;
    ro[0] = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (after[i] < 0)
            continue;
        int64_t b = text_offset(&t, offset + i + 1);
        memcpy(rd + pos, t.data + after[i], (size_t)(b - after[i]));
        pos += b - after[i];
        ro[++r] = pos;
    }
    Py_END_ALLOW_THREADS;
    PyMem_Free(after);
    release_texts(&ov, &dv, &vv);
    PyObject *out = Py_BuildValue("(NNNn)", has, rest_off, rest_data, rows);
    return out;
fail:
    Py_XDECREF(has);
    Py_XDECREF(rest_off);
    Py_XDECREF(rest_data);
    release_texts(&ov, &dv, &vv);
    return NULL;
}

typedef struct {
    const unsigned char *end;
    Py_ssize_t len;
    int last, keep;
    int64_t *starts, *stops; /* each row's piece (kept steps only) */
} Step;

static PyObject *steps(PyObject *self, PyObject *args) {
    PyObject *off_o, *data_o, *valid_o, *steps_o;
    Py_ssize_t offset, length;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnpO", &off_o, &data_o, &valid_o, &offset, &length, &large, &steps_o))
        return NULL;
    PyObject *seq = PySequence_Fast(steps_o, "steps: a sequence of (end: bytes, last: bool, keep: bool)");
    if (!seq)
        return NULL;
    Py_ssize_t ns = PySequence_Fast_GET_SIZE(seq);
    Step *st = PyMem_Calloc((size_t)(ns ? ns : 1), sizeof(Step));
    if (!st) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    Py_buffer ov, dv, vv;
    Texts t;
    int have = 0;
    PyObject *result = NULL;
    for (Py_ssize_t s = 0; s < ns; s++) {
        const char *e;
        Py_ssize_t elen;
        int last, keep;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, s), "y#pp", &e, &elen, &last, &keep))
            goto done;
        st[s].end = (const unsigned char *)e;
        st[s].len = elen;
        st[s].last = last;
        st[s].keep = keep;
    }
    if (get_texts(off_o, data_o, valid_o, offset, length, large, &ov, &dv, &vv, &t) < 0)
        goto done;
    have = 1;
    if (t.valid) {
        PyErr_SetString(PyExc_ValueError, "texts: no nulls here");
        goto done;
    }
    for (Py_ssize_t s = 0; s < ns; s++) {
        if (!st[s].keep)
            continue;
        st[s].starts = PyMem_Malloc(sizeof(int64_t) * (size_t)(length ? length : 1));
        st[s].stops = PyMem_Malloc(sizeof(int64_t) * (size_t)(length ? length : 1));
        if (!st[s].starts || !st[s].stops) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_ssize_t missing = 0; /* rows where a piece's end is not found: a layout that does not fit them */
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < length; i++) {
        int64_t a = text_offset(&t, offset + i), b = text_offset(&t, offset + i + 1);
        for (Py_ssize_t s = 0; s < ns; s++) {
            int64_t piece_end = b, next = a; /* no end: all that is left, which the next step reads again */
            if (st[s].len > 0) {
                next = b;
                const unsigned char *hay = t.data + a, *at;
                size_t h = (size_t)(b - a);
                at = st[s].last ? last_of(hay, h, st[s].end, (size_t)st[s].len)
                                : first_of(hay, h, st[s].end, (size_t)st[s].len);
                if (at) {
                    piece_end = (int64_t)(at - t.data);
                    next = piece_end + st[s].len;
                } else
                    missing++;
            }
            if (st[s].keep) {
                st[s].starts[i] = a;
                st[s].stops[i] = piece_end;
            }
            a = next;
        }
    }
    Py_END_ALLOW_THREADS;
    result = PyList_New(0);
    if (!result)
        goto done;
    for (Py_ssize_t s = 0; s < ns; s++) {
        if (!st[s].keep)
            continue;
        int64_t bytes = 0;
        Py_ssize_t nulls = 0;
        for (Py_ssize_t i = 0; i < length; i++) {
            int64_t n = st[s].stops[i] - st[s].starts[i];
            bytes += n;
            nulls += n == 0;
        }
        PyObject *po = PyBytes_FromStringAndSize(NULL, (length + 1) * 8);
        PyObject *pd = PyBytes_FromStringAndSize(NULL, bytes);
        PyObject *pv = PyBytes_FromStringAndSize(NULL, (length + 7) / 8);
        if (!po || !pd || !pv) {
            Py_XDECREF(po);
            Py_XDECREF(pd);
            Py_XDECREF(pv);
            Py_CLEAR(result);
            goto done;
        }
        int64_t *o = (int64_t *)PyBytes_AS_STRING(po);
        unsigned char *d = (unsigned char *)PyBytes_AS_STRING(pd), *v = (unsigned char *)PyBytes_AS_STRING(pv);
        memset(v, 0, (size_t)((length + 7) / 8));
        int64_t pos = 0;
        o[0] = 0;
        for (Py_ssize_t i = 0; i < length; i++) {
            int64_t n = st[s].stops[i] - st[s].starts[i];
            memcpy(d + pos, t.data + st[s].starts[i], (size_t)n);
            pos += n;
            o[i + 1] = pos;
            if (n)
                v[i >> 3] |= (unsigned char)(1u << (i & 7));
        }
        PyObject *item = Py_BuildValue("(NNNn)", po, pd, pv, nulls);
        if (!item || PyList_Append(result, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(item);
    }
    if (result) {
        PyObject *both = Py_BuildValue("(Nn)", result, missing);
        result = both;
    }
done:
    for (Py_ssize_t s = 0; s < ns; s++) {
        PyMem_Free(st[s].starts);
        PyMem_Free(st[s].stops);
    }
    PyMem_Free(st);
    if (have)
        release_texts(&ov, &dv, &vv);
    Py_DECREF(seq);
    return result;
}

/* which rows of a string array hold a newline: one byte a row (1: it does), read with memchr over
 * each row's bytes (a null row's too, as a scan of the array's bytes finds them) */
static PyObject *newlines(PyObject *self, PyObject *args) {
    PyObject *off_o, *data_o, *valid_o;
    Py_ssize_t offset, length;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnp", &off_o, &data_o, &valid_o, &offset, &length, &large))
        return NULL;
    Py_buffer ov, dv, vv;
    Texts t;
    if (get_texts(off_o, data_o, valid_o, offset, length, large, &ov, &dv, &vv, &t) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, length);
    if (out) {
        unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < length; i++) {
            int64_t a = text_offset(&t, offset + i), b = text_offset(&t, offset + i + 1);
            o[i] = b > a && memchr(t.data + a, '\n', (size_t)(b - a)) != NULL;
        }
        Py_END_ALLOW_THREADS;
    }
    release_texts(&ov, &dv, &vv);
    return out;
}

static PyMethodDef METHODS[] = {
    {"lead", lead, METH_VARARGS,
     "lead(offsets, data, valid, offset, length, large, lead: bytes) -> (has: bytes, offsets: bytes, data: bytes, "
     "rows): has[i] = 1 where row i of the string array (its buffers; valid None for no nulls; large: 64-bit offsets) "
     "holds ``lead`` (0 where null); the text after its first ``lead`` of each such row, in order, as the buffers of a "
     "string array with 64-bit offsets and ``rows`` rows"},
    {"steps", steps, METH_VARARGS,
     "steps(offsets, data, valid, offset, length, large, steps) -> (pieces, missing): each row of the string array "
     "(no nulls) cut by ``steps``, a list of (end: bytes, last: bool, keep: bool): each takes the text up to the first "
     "(last, with ``last``) ``end`` and goes on after it, or all that is left when ``end`` is empty (the next step "
     "reads it again) or not found (counted in ``missing``); for each kept step, its pieces as (offsets, data, validity, nulls), the buffers of a "
     "string array with 64-bit offsets, null where the piece is empty"},
    {"newlines", newlines, METH_VARARGS,
     "newlines(offsets, data, valid, offset, length, large) -> bytes: 1 for each row of the string array that holds "
     "a newline, else 0"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_cut", "Compiled cuts of texts at literal pieces.", -1,
                                    METHODS};

PyMODINIT_FUNC PyInit__cut(void) { return PyModule_Create(&MODULE); }
