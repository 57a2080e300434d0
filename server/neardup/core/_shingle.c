/* The sketcher's per-shingle loops, compiled: CRC-32 of every word n-gram of a text in one call, as a set
 * (sketcher._ngram_hashes) or as its distinct values with their counts (sketcher._ngram_counts), and the K smallest
 * values outside the stop-list as sketch bytes (Sketcher.sketch_hashes), or the 64-bit SimHash fingerprint of
 * the values, each weighing 1 or a weight of its count (reference.simhash and reference.shingle_weight are the
 * specification; tests hold them equal).
 *
 * The Python loop made one crcmod call and one bytes slice per n-gram, which cost more than the CRC itself.
 * Here the loop is crcmod's own (_crcfunext.c, _crc32r: crc = table[byte ^ (crc & 0xFF)] ^ (crc >> 8)) over
 * crcmod's table, passed in by sketch.py, so the values are crcmod's CRC-32 of each n-gram's UTF-8 bytes
 * (tests/core/test_sketch.py holds them equal).
 *
 * stemmed_words is the tokenizer before them: the words of a lowercased text as re.findall(r"[^\W_]+") finds them
 * (a run of characters str.isalnum() accepts, which is what the pattern's class is in CPython's re), those of at
 * least min_len characters, each replaced by its stem from a memo dict, as one UTF-8 string joined by single
 * spaces: what " ".join(map(stem, words)).encode() made in Python (sketcher.reference_words is the
 * specification; tests/core/test_sketch_compiled.py holds them equal on arbitrary text).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc32_update(const unsigned char *data, Py_ssize_t length, uint32_t crc, const uint32_t *table)
{
    while (length--)
        crc = table[*data++ ^ (crc & 0xFF)] ^ (crc >> 8);
    return crc;
}

static int add_hash(PyObject *hashes, uint32_t value)
{
    PyObject *item = PyLong_FromUnsignedLong(value);
    if (!item)
        return -1;
    int status = PySet_Add(hashes, item);
    Py_DECREF(item);
    return status;
}

/* The arguments both n-gram functions take: (data, n, table, mask). */
typedef struct {
    Py_buffer data, table;
    Py_ssize_t n;
    uint32_t init;
} ngram_args;

/* 0, or -1 with an exception set (and nothing left to release). */
static int ngram_parse(PyObject *args, const char *format, ngram_args *a)
{
    unsigned long mask;
    if (!PyArg_ParseTuple(args, format, &a->data, &a->n, &a->table, &mask))
        return -1;
    a->init = (uint32_t)mask;
    if (a->n < 1 || a->table.len != 256 * 4) {
        PyErr_SetString(PyExc_ValueError, "n must be at least 1 and the table 256 uint32 values");
        PyBuffer_Release(&a->data);
        PyBuffer_Release(&a->table);
        return -1;
    }
    return 0;
}

static void ngram_release(ngram_args *a)
{
    PyBuffer_Release(&a->data);
    PyBuffer_Release(&a->table);
}

/* The CRC-32 of every n consecutive words of the data (UTF-8 words joined by single spaces; of all of it when it
 * has at most n words, none when empty), in text order, into *values: a new PyMem array with room for `room`
 * times their number (the rest is the caller's scratch). Their number, or -1 with MemoryError set. */
static Py_ssize_t ngram_values(const ngram_args *a, Py_ssize_t room, uint32_t **values)
{
    const unsigned char *bytes = a->data.buf;
    Py_ssize_t length = a->data.len, n = a->n, words = length ? 1 : 0;
    const uint32_t *crc_table = a->table.buf;
    for (Py_ssize_t i = 0; i < length; i++)
        words += bytes[i] == ' ';
    Py_ssize_t shingles = words == 0 ? 0 : words <= n ? 1 : words - n + 1;
    /* word w is bytes[starts[w] .. starts[w + 1] - 1); starts[words] is one past the end */
    Py_ssize_t *starts = NULL;
    if (!(*values = PyMem_Malloc((size_t)(room * shingles + 1) * sizeof **values)) ||
        !(starts = PyMem_Malloc((size_t)(words + 1) * sizeof *starts))) {
        PyMem_Free(*values);
        *values = NULL;
        PyErr_NoMemory();
        return -1;
    }
    if (words && words <= n) {
        (*values)[0] = a->init ^ crc32_update(bytes, length, a->init, crc_table);
    } else if (words) {
        Py_ssize_t w = 0;
        starts[w++] = 0;
        for (Py_ssize_t i = 0; i < length; i++)
            if (bytes[i] == ' ')
                starts[w++] = i + 1;
        starts[words] = length + 1;
        for (Py_ssize_t first = 0; first < shingles; first++) {
            Py_ssize_t begin = starts[first], end = starts[first + n] - 1;
            (*values)[first] = a->init ^ crc32_update(bytes + begin, end - begin, a->init, crc_table);
        }
    }
    PyMem_Free(starts);
    return shingles;
}

PyDoc_STRVAR(ngram_hashes_doc,
             "ngram_hashes(data, n, table, mask) -> set[int]\n\n"
             "CRC-32 (crcmod's table; initial value and final xor `mask`) of every n consecutive words of `data`, "
             "UTF-8 words joined by single spaces; of all of `data` when it has at most n words, none when empty.");

static PyObject *ngram_hashes(PyObject *module, PyObject *args)
{
    ngram_args a;
    if (ngram_parse(args, "y*ny*k:ngram_hashes", &a) < 0)
        return NULL;
    uint32_t *values = NULL;
    PyObject *hashes = NULL;
    Py_ssize_t count = ngram_values(&a, 1, &values);
    if (count >= 0 && (hashes = PySet_New(NULL)))
        for (Py_ssize_t i = 0; i < count; i++)
            if (add_hash(hashes, values[i]) < 0) {
                Py_CLEAR(hashes);
                break;
            }
    PyMem_Free(values);
    ngram_release(&a);
    return hashes;
}

/* LSD radix sort of n uint32 values, 8 bits a pass, through `scratch` (n values); short arrays by insertion. */
static void sort_uint32(uint32_t *values, uint32_t *scratch, Py_ssize_t n)
{
    if (n < 48) {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint32_t value = values[i];
            Py_ssize_t j = i;
            for (; j > 0 && values[j - 1] > value; j--)
                values[j] = values[j - 1];
            values[j] = value;
        }
        return;
    }
    uint32_t *from = values, *to = scratch;
    for (int shift = 0; shift < 32; shift += 8) {
        Py_ssize_t offsets[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++)
            offsets[((from[i] >> shift) & 0xFF) + 1]++;
        for (int digit = 0; digit < 256; digit++)
            offsets[digit + 1] += offsets[digit];
        for (Py_ssize_t i = 0; i < n; i++)
            to[offsets[(from[i] >> shift) & 0xFF]++] = from[i];
        uint32_t *swap = from;
        from = to;
        to = swap;
    }
    /* four passes: the sorted values are back in `values` */
}

PyDoc_STRVAR(ngram_counts_doc,
             "ngram_counts(data, n, table, mask) -> (bytes, bytes)\n\n"
             "The n-gram CRC-32 values of ngram_hashes(data, n, table, mask), distinct and ascending, and how many "
             "times each occurs, as two arrays of native-endian uint32 of one length.");

static PyObject *ngram_counts(PyObject *module, PyObject *args)
{
    ngram_args a;
    if (ngram_parse(args, "y*ny*k:ngram_counts", &a) < 0)
        return NULL;
    uint32_t *hashes = NULL;
    PyObject *result = NULL;
    /* hashes[0 .. shingles) and a scratch half for the sort; counts reuse the scratch half */
    Py_ssize_t shingles = ngram_values(&a, 2, &hashes);
    if (shingles >= 0) {
        uint32_t *scratch = hashes + shingles;
        sort_uint32(hashes, scratch, shingles);
        Py_ssize_t distinct = 0;
        for (Py_ssize_t i = 0; i < shingles; i++) {
            if (distinct && hashes[distinct - 1] == hashes[i]) {
                scratch[distinct - 1]++;
            } else {
                hashes[distinct] = hashes[i];  /* distinct <= i: in place */
                scratch[distinct++] = 1;
            }
        }
        result = Py_BuildValue("(y#y#)", (const char *)hashes, distinct * (Py_ssize_t)sizeof *hashes,
                               (const char *)scratch, distinct * (Py_ssize_t)sizeof *scratch);
    }
    PyMem_Free(hashes);
    ngram_release(&a);
    return result;
}

/* A max-heap of the k smallest values seen: heap[0] is the largest kept. */
static void sift_down(uint32_t *heap, Py_ssize_t size, Py_ssize_t at)
{
    for (;;) {
        Py_ssize_t largest = at, left = 2 * at + 1, right = left + 1;
        if (left < size && heap[left] > heap[largest])
            largest = left;
        if (right < size && heap[right] > heap[largest])
            largest = right;
        if (largest == at)
            return;
        uint32_t swap = heap[at];
        heap[at] = heap[largest];
        heap[largest] = swap;
        at = largest;
    }
}

static int ascending(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The distinct values of an iterable outside a stop-list set, one at a time (bottom_k's and simhash's loop). */
typedef struct {
    PyObject *unique, *iterator, *stoplist;
    const char *overflow; /* the OverflowError's message for a value outside [0, 2**32) */
} kept_values;

/* 0, or -1 with an exception set (kept_close still to be called). */
static int kept_open(kept_values *kept, PyObject *values, PyObject *stoplist, const char *overflow)
{
    kept->stoplist = stoplist;
    kept->overflow = overflow;
    kept->iterator = NULL;
    kept->unique = PyAnySet_Check(values) ? (Py_INCREF(values), values) : PySet_New(values);
    if (!kept->unique)
        return -1;
    kept->iterator = PyObject_GetIter(kept->unique);
    return kept->iterator ? 0 : -1;
}

/* 1 with the next kept value in *value, 0 when there is none left, -1 with an exception set. */
static int kept_next(kept_values *kept, uint32_t *value)
{
    PyObject *item;
    while ((item = PyIter_Next(kept->iterator))) {
        int stopped = PySet_GET_SIZE(kept->stoplist) ? PySet_Contains(kept->stoplist, item) : 0;
        unsigned long number = stopped ? 0 : PyLong_AsUnsignedLong(item);
        Py_DECREF(item);
        if (stopped < 0 || (number == (unsigned long)-1 && PyErr_Occurred()))
            return -1;
        if (stopped)
            continue;
        if (number > 0xFFFFFFFFul) {
            PyErr_SetString(PyExc_OverflowError, kept->overflow);
            return -1;
        }
        *value = (uint32_t)number;
        return 1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

static void kept_close(kept_values *kept)
{
    Py_XDECREF(kept->iterator);
    Py_XDECREF(kept->unique);
}

PyDoc_STRVAR(bottom_k_doc,
             "bottom_k(values, stoplist, k) -> bytes\n\n"
             "The k smallest distinct values of the iterable `values` that are not in the set `stoplist`, as "
             "ascending little-endian uint32 bytes. OverflowError for a value outside [0, 2**32).");

static PyObject *bottom_k(PyObject *module, PyObject *args)
{
    PyObject *values, *stoplist;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OO!n:bottom_k", &values, &PyFrozenSet_Type, &stoplist, &k))
        return NULL;
    if (k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be at least 1");
        return NULL;
    }
    kept_values kept;
    uint32_t *heap = NULL, value;
    PyObject *result = NULL;
    Py_ssize_t capacity = 0, size = 0;
    int status;
    if (kept_open(&kept, values, stoplist, "sketch values must fit in 32 bits") < 0)
        goto done;
    capacity = PySet_GET_SIZE(kept.unique) < k ? PySet_GET_SIZE(kept.unique) : k;
    heap = PyMem_Malloc((size_t)(capacity ? capacity : 1) * sizeof *heap);
    if (!heap) {
        PyErr_NoMemory();
        goto done;
    }
    while ((status = kept_next(&kept, &value)) > 0) {
        if (size < capacity) {
            Py_ssize_t at = size++;
            heap[at] = value;
            while (at && heap[(at - 1) / 2] < heap[at]) {  /* sift up */
                uint32_t swap = heap[at];
                heap[at] = heap[(at - 1) / 2];
                heap[(at - 1) / 2] = swap;
                at = (at - 1) / 2;
            }
        } else if (value < heap[0]) {
            heap[0] = value;
            sift_down(heap, size, 0);
        }
    }
    if (status < 0)
        goto done;
    qsort(heap, (size_t)size, sizeof *heap, ascending);
    if (!(result = PyBytes_FromStringAndSize(NULL, size * 4)))
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < size; i++) {
        out[4 * i] = (unsigned char)heap[i];
        out[4 * i + 1] = (unsigned char)(heap[i] >> 8);
        out[4 * i + 2] = (unsigned char)(heap[i] >> 16);
        out[4 * i + 3] = (unsigned char)(heap[i] >> 24);
    }
done:
    kept_close(&kept);
    PyMem_Free(heap);
    return result;
}

/* splitmix64 (Steele, Lea and Flood): a shingle's CRC-32 spread over 64 bits for SimHash. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The votes of a fingerprint: ones[b] sums the weights of the values whose spread hash has bit b set, total
 * all weights; bit b is set when its votes (ones[b] - (total - ones[b])) sum above 0. */
typedef struct {
    int64_t ones[64];
    int64_t total;
} Votes;

static void vote(Votes *votes, uint32_t value, int64_t weight)
{
    uint64_t hash = splitmix64((uint64_t)value);
    for (int bit = 0; bit < 64; bit++)
        votes->ones[bit] += weight & -(int64_t)((hash >> bit) & 1);
    votes->total += weight;
}

/* 8 little-endian bytes, or b"" when nothing voted. */
static PyObject *fingerprint_bytes(const Votes *votes, int any)
{
    if (!any)
        return PyBytes_FromStringAndSize(NULL, 0);
    uint64_t fingerprint = 0;
    for (int bit = 0; bit < 64; bit++)
        fingerprint |= (uint64_t)(2 * votes->ones[bit] > votes->total) << bit;
    unsigned char out[8];
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(fingerprint >> (8 * i));
    return PyBytes_FromStringAndSize((const char *)out, 8);
}

PyDoc_STRVAR(simhash_doc,
             "simhash(values, stoplist) -> bytes\n\n"
             "Charikar's 64-bit SimHash of the distinct values of the iterable `values` that are not in the set\n"
             "`stoplist`, each weighing 1: bit b is set when more than half of the values' splitmix64 hashes have\n"
             "bit b set. 8 little-endian bytes, or b'' when no value is left. OverflowError for a value outside\n"
             "[0, 2**32). (simhash_counts weighs each value by its count.)");

static PyObject *simhash(PyObject *module, PyObject *args)
{
    PyObject *values, *stoplist;
    if (!PyArg_ParseTuple(args, "OO!:simhash", &values, &PyFrozenSet_Type, &stoplist))
        return NULL;
    kept_values kept;
    PyObject *result = NULL;
    Votes votes = {{0}, 0};
    uint32_t value;
    int status = kept_open(&kept, values, stoplist, "shingle hashes must fit in 32 bits");
    if (status == 0)
        while ((status = kept_next(&kept, &value)) > 0)
            vote(&votes, value, 1);
    if (status == 0)
        result = fingerprint_bytes(&votes, votes.total > 0);
    kept_close(&kept);
    return result;
}

/* Weightings of simhash_counts, as reference.WEIGHTINGS orders them. */
enum { WEIGHT_UNIT, WEIGHT_TF, WEIGHT_LOG_TF };
#define WEIGHT_ONE (1 << 16)
#define LN2_Q32 UINT64_C(2977044472)

/* log2(count) in 16-bit fixed point by integers only, as reference._log2_q16. */
static uint64_t log2_q16(uint32_t count)
{
    int whole = 31;
    while (!(count >> whole))
        whole--;
    uint64_t mantissa = (uint64_t)count << (31 - whole);  /* in [2^31, 2^32): count < 2^32, never shifted right */
    uint64_t result = (uint64_t)whole << 16;
    for (int bit = 15; bit >= 0; bit--) {
        mantissa = mantissa * mantissa >> 31;
        if (mantissa >> 32) {
            mantissa >>= 1;
            result |= UINT64_C(1) << bit;
        }
    }
    return result;
}

static int64_t shingle_weight(uint32_t count, int weighting)
{
    switch (weighting) {
    case WEIGHT_TF:
        return count;
    case WEIGHT_LOG_TF:
        return WEIGHT_ONE + (int64_t)(log2_q16(count) * LN2_Q32 >> 32);
    default:
        return 1;
    }
}

/* Whether value is in the ascending array stop[0 .. size). */
static int stopped(const uint32_t *stop, Py_ssize_t size, uint32_t value)
{
    Py_ssize_t low = 0, high = size;
    while (low < high) {
        Py_ssize_t middle = low + (high - low) / 2;
        if (stop[middle] < value)
            low = middle + 1;
        else
            high = middle;
    }
    return low < size && stop[low] == value;
}

PyDoc_STRVAR(simhash_counts_doc,
             "simhash_counts(hashes, counts, stoplist, weighting) -> bytes\n\n"
             "Charikar's 64-bit SimHash of a document's distinct shingle hashes (`hashes`, native uint32, strictly\n"
             "ascending) that are not in `stoplist` (native uint32, ascending), each voting with the weight of its\n"
             "count (`counts`, native uint32 >= 1, one per hash): weighting 0 weighs 1, 1 the count, 2 1 + ln count\n"
             "in 16-bit fixed point (reference.shingle_weight). 8 little-endian bytes, or b'' when no hash is left.");

static PyObject *simhash_counts(PyObject *module, PyObject *args)
{
    Py_buffer hashes, counts, stop;
    int weighting;
    if (!PyArg_ParseTuple(args, "y*y*y*i:simhash_counts", &hashes, &counts, &stop, &weighting))
        return NULL;
    PyObject *result = NULL;
    if (hashes.len % 4 || counts.len != hashes.len || stop.len % 4) {
        PyErr_SetString(PyExc_ValueError, "hashes, counts and stoplist must be uint32 arrays, counts one per hash");
        goto done;
    }
    if (weighting < WEIGHT_UNIT || weighting > WEIGHT_LOG_TF) {
        PyErr_SetString(PyExc_ValueError, "weighting must be 0 (unit), 1 (tf) or 2 (log-tf)");
        goto done;
    }
    const uint32_t *hash = hashes.buf, *count = counts.buf, *stoplist = stop.buf;
    Py_ssize_t size = hashes.len / 4, stop_size = stop.len / 4;
    Votes votes = {{0}, 0};
    int any = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        if ((i && hash[i] <= hash[i - 1]) || !count[i]) {
            PyErr_SetString(PyExc_ValueError, "hashes must be strictly ascending and counts at least 1");
            goto done;
        }
        if (stop_size && stopped(stoplist, stop_size, hash[i]))
            continue;
        vote(&votes, hash[i], shingle_weight(count[i], weighting));
        any = 1;
    }
    result = fingerprint_bytes(&votes, any);
done:
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&stop);
    return result;
}

/* A growable byte buffer (PyMem). */
typedef struct {
    char *bytes;
    Py_ssize_t size, capacity;
} Buffer;

static int buffer_append(Buffer *buffer, const char *bytes, Py_ssize_t size)
{
    if (buffer->size + size > buffer->capacity) {
        Py_ssize_t capacity = buffer->capacity ? buffer->capacity : 256;
        while (capacity < buffer->size + size)
            capacity *= 2;
        char *grown = PyMem_Realloc(buffer->bytes, (size_t)capacity);
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        buffer->bytes = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->size, bytes, (size_t)size);
    buffer->size += size;
    return 0;
}

/* Py_UNICODE_ISALNUM of the ASCII characters, looked up once at import: the character class of [^\W_]. */
static unsigned char ascii_alnum[128];

static inline int is_word_char(Py_UCS4 c)
{
    return c < 128 ? ascii_alnum[c] : Py_UNICODE_ISALNUM(c);
}

PyDoc_STRVAR(stemmed_words_doc,
             "stemmed_words(text, min_len, memo) -> bytes\n\n"
             "The words of `text` (runs of characters str.isalnum() accepts, as re.findall(r'[^\\W_]+', text) finds "
             "them) of at least min_len characters, each replaced by memo[word] (a dict of str; a key it lacks is "
             "looked up by memo[word], so a dict subclass's __missing__ stems and stores it), joined by single "
             "spaces, UTF-8. `memo` None keeps the words as they are.");

static PyObject *stemmed_words(PyObject *module, PyObject *args)
{
    PyObject *text, *memo;
    Py_ssize_t min_len;
    if (!PyArg_ParseTuple(args, "UnO:stemmed_words", &text, &min_len, &memo))
        return NULL;
    if (memo != Py_None && !PyDict_Check(memo)) {
        PyErr_SetString(PyExc_TypeError, "memo must be a dict or None");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), at = 0;
    Buffer out = {NULL, 0, 0};
    PyObject *result = NULL;
    while (at < length) {
        if (!is_word_char(PyUnicode_READ(kind, data, at))) {
            at++;
            continue;
        }
        Py_ssize_t start = at;
        while (at < length && is_word_char(PyUnicode_READ(kind, data, at)))
            at++;
        if (at - start < min_len)
            continue;
        PyObject *word = PyUnicode_Substring(text, start, at), *stem;
        if (!word)
            goto done;
        if (memo == Py_None) {
            stem = word;
        } else {
            stem = PyDict_GetItemWithError(memo, word);
            if (stem)
                Py_INCREF(stem);
            else if (!PyErr_Occurred())
                stem = PyObject_GetItem(memo, word);
            Py_DECREF(word);
            if (!stem)
                goto done;
            if (!PyUnicode_Check(stem)) {
                PyErr_Format(PyExc_TypeError, "a stem must be a str, not %.100s", Py_TYPE(stem)->tp_name);
                Py_DECREF(stem);
                goto done;
            }
        }
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(stem, &size);
        int failed = !utf8 || (out.size && buffer_append(&out, " ", 1) < 0) || buffer_append(&out, utf8, size) < 0;
        Py_DECREF(stem);
        if (failed)
            goto done;
    }
    result = PyBytes_FromStringAndSize(out.bytes ? out.bytes : "", out.size);
done:
    PyMem_Free(out.bytes);
    return result;
}

PyDoc_STRVAR(ngram_bottom_k_doc,
             "ngram_bottom_k(data, n, table, mask, stoplist, k) -> bytes\n\n"
             "bottom_k(ngram_hashes(data, n, table, mask), stoplist, k) without the set in between: the k smallest "
             "distinct n-gram CRC-32 values not in `stoplist` (native uint32, ascending), as ascending "
             "little-endian uint32 bytes.");

static PyObject *ngram_bottom_k(PyObject *module, PyObject *args)
{
    ngram_args a;
    Py_buffer stop;
    Py_ssize_t k;
    PyObject *result = NULL;
    unsigned long mask;
    if (!PyArg_ParseTuple(args, "y*ny*ky*n:ngram_bottom_k", &a.data, &a.n, &a.table, &mask, &stop, &k))
        return NULL;
    a.init = (uint32_t)mask;
    uint32_t *values = NULL;
    if (a.n < 1 || a.table.len != 256 * 4 || stop.len % 4 || k < 1) {
        PyErr_SetString(PyExc_ValueError, "n and k must be at least 1, the table 256 uint32 values and the "
                                          "stoplist uint32 values");
        goto done;
    }
    Py_ssize_t shingles = ngram_values(&a, 2, &values);
    if (shingles < 0)
        goto done;
    sort_uint32(values, values + shingles, shingles);
    const uint32_t *stoplist = stop.buf;
    Py_ssize_t stop_size = stop.len / 4, kept = 0;
    for (Py_ssize_t i = 0; i < shingles && kept < k; i++) {
        if ((i && values[i] == values[i - 1]) || (stop_size && stopped(stoplist, stop_size, values[i])))
            continue;
        values[kept++] = values[i];  /* kept <= i: in place */
    }
    if (!(result = PyBytes_FromStringAndSize(NULL, kept * 4)))
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < kept; i++) {
        out[4 * i] = (unsigned char)values[i];
        out[4 * i + 1] = (unsigned char)(values[i] >> 8);
        out[4 * i + 2] = (unsigned char)(values[i] >> 16);
        out[4 * i + 3] = (unsigned char)(values[i] >> 24);
    }
done:
    PyMem_Free(values);
    ngram_release(&a);
    PyBuffer_Release(&stop);
    return result;
}

static PyMethodDef shingle_methods[] = {
    {"ngram_hashes", ngram_hashes, METH_VARARGS, ngram_hashes_doc},
    {"ngram_counts", ngram_counts, METH_VARARGS, ngram_counts_doc},
    {"bottom_k", bottom_k, METH_VARARGS, bottom_k_doc},
    {"simhash", simhash, METH_VARARGS, simhash_doc},
    {"simhash_counts", simhash_counts, METH_VARARGS, simhash_counts_doc},
    {"stemmed_words", stemmed_words, METH_VARARGS, stemmed_words_doc},
    {"ngram_bottom_k", ngram_bottom_k, METH_VARARGS, ngram_bottom_k_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef shingle_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._shingle",
    "Compiled word n-gram hashing of neardup's sketcher: the words of a text, stemmed through a memo, as one\n"
    "UTF-8 string; crcmod's CRC-32 loop over every n-gram in one call (a set, distinct values and counts, or the\n"
    "bottom-K cut); the bottom-K cut and the SimHash fingerprint (unweighted or weighted).",
    -1, shingle_methods,
};

PyMODINIT_FUNC PyInit__shingle(void)
{
    for (Py_UCS4 c = 0; c < 128; c++)
        ascii_alnum[c] = Py_UNICODE_ISALNUM(c) ? 1 : 0;
    return PyModule_Create(&shingle_module);
}
