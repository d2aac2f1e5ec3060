/* The secret pre-check over a whole Arrow string array (kitlib/redact/columns.py): the compiled
 * pre-check of the log scan (_precheck.h) run on each value of a column, so that RE2 reads only
 * the values it leaves in. */
#include "_precheck.h"

/* Whether the n bytes at p hold a byte >= 0x80 (high), one that is not plain text (odd: not tab,
 * newline, carriage return or printable ASCII) and a newline (nl). Eight bytes at a time where
 * none is below 0x20 or at or above 0x7f (most of a log's text), byte by byte otherwise. */
static void scan_bytes(const unsigned char *p, Py_ssize_t n, int *high, int *odd, int *nl) {
    const uint64_t ones = 0x0101010101010101ULL, tops = 0x8080808080808080ULL;
    Py_ssize_t j = 0;
    for (; j + 8 <= n; j += 8) {
        uint64_t w;
        memcpy(&w, p + j, 8);
        /* a byte below 0x20, or at or above 0x7f (its top bit, or 0x7f + 1 carrying into it) */
        uint64_t special = ((w - 0x2020202020202020ULL) | (w + ones) | w) & tops;
        if (!special)
            continue;
        for (int k = 0; k < 8; k++) {
            unsigned char c = p[j + k];
            if (c >= 0x7f) {
                *odd = 1;
                *high |= c >= 0x80;
            } else if (c < 0x20) {
                if (c == '\n')
                    *nl = 1;
                else if (c != '\t' && c != '\r')
                    *odd = 1;
            }
        }
    }
    for (; j < n; j++) {
        unsigned char c = p[j];
        if (c >= 0x7f) {
            *odd = 1;
            *high |= c >= 0x80;
        } else if (c < 0x20) {
            if (c == '\n')
                *nl = 1;
            else if (c != '\t' && c != '\r')
                *odd = 1;
        }
    }
}

/* The pre-check over a whole Arrow string array (kitlib.redact.columns): one byte a value, bit 1
 * set where the value may hold a secret (it holds a byte >= 0x80, where RE2 folds case beyond
 * ASCII, or ``suspect`` flags it: together a superset of what PREFILTER matches), bit 2 where it
 * is not plain (a byte other than tab, newline, carriage return and the printable ASCII ones).
 * A null value is 0. The offsets are checked before any byte is read. */
static PyObject *suspects(PyObject *self, PyObject *args) {
    PyObject *off_o, *data_o, *valid_o;
    Py_ssize_t offset, length;
    int large;
    if (!PyArg_ParseTuple(args, "OOOnnp", &off_o, &data_o, &valid_o, &offset, &length, &large))
        return NULL;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset, length: not negative");
        return NULL;
    }
    Py_buffer ov, dv, vv;
    vv.obj = NULL;
    if (PyObject_GetBuffer(off_o, &ov, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(data_o, &dv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&ov);
        return NULL;
    }
    if (valid_o != Py_None && PyObject_GetBuffer(valid_o, &vv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&dv);
        PyBuffer_Release(&ov);
        return NULL;
    }
    PyObject *res = NULL;
    size_t width = large ? 8 : 4;
    if ((size_t)ov.len < ((size_t)offset + (size_t)length + 1) * width ||
        (vv.obj && (size_t)vv.len * 8 < (size_t)offset + (size_t)length)) {
        PyErr_SetString(PyExc_ValueError, "buffers: too short for offset and length");
        goto done;
    }
    const unsigned char *data = dv.buf, *valid = vv.obj ? vv.buf : NULL;
#define OFF(k) (large ? ((const int64_t *)ov.buf)[k] : (int64_t)((const int32_t *)ov.buf)[k])
    int64_t prev = OFF(offset);
    if (prev < 0 || prev > dv.len)
        goto bad;
    for (Py_ssize_t i = 1; i <= length; i++) {
        int64_t o = OFF(offset + i);
        if (o < prev || o > dv.len)
            goto bad;
        prev = o;
    }
    res = PyBytes_FromStringAndSize(NULL, length);
    if (res == NULL)
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(res);
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_ssize_t k = offset + i;
        if (valid && !((valid[k >> 3] >> (k & 7)) & 1)) {
            out[i] = 0;
            continue;
        }
        const unsigned char *p = data + OFF(k);
        Py_ssize_t n = (Py_ssize_t)(OFF(k + 1) - OFF(k));
        int high = 0, odd = 0, nl = 0;
        scan_bytes(p, n, &high, &odd, &nl);
        out[i] = (unsigned char)((high || suspect(p, n, !nl) ? 1 : 0) | (odd ? 2 : 0));
    }
    Py_END_ALLOW_THREADS;
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "offsets: not those of a valid string array");
done:
#undef OFF
    if (vv.obj)
        PyBuffer_Release(&vv);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&ov);
    return res;
}

static PyMethodDef METHODS[] = {
    {"suspects", suspects, METH_VARARGS,
     "suspects(offsets, data, valid, offset, length, large) -> bytes: a byte a value of a string array, 1 where "
     "the secret pre-check may match it (a superset of PREFILTER), 2 where it is not plain ASCII text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_precheck", "Compiled secret pre-check over columns.",
                                    -1, METHODS};

PyMODINIT_FUNC PyInit__precheck(void) {
    precheck_init();
    return PyModule_Create(&MODULE);
}
