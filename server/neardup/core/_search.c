/* Compiled corpus search, the Python glue: the module neardup.core._search (the bound rule of both search paths,
 * the in-memory index Index, Export, and the index file's functions). Every entry point checks what it is given
 * through one helper, arguments(), then its own conditions through require(); the work is done in
 * _search_index.c (the index: building, searching, the bound rule) and _search_file.c (the index file's format).
 * _search_index.h describes the index and what the three files share. */
#include <stdarg.h>

#include "_search_index.h"

/* ---- arguments: how every entry point checks what it is given ---- */

typedef int (*converter)(PyObject *, void *);

/* What an entry point was given: its METH_VARARGS tuple (args; and for the constructor, kwargs and the keywords'
 * names), or its METH_O argument (one); nothing for METH_NOARGS. */
typedef struct {
    PyObject *args, *kwargs;
    char **keywords;
    PyObject *one;
} given;

#define TUPLE(args) ((given){.args = (args)})
#define ONE(arg) ((given){.one = (arg)})
#define NO_ARGUMENTS ((given){0})

/* An entry point's arguments, checked in one place and in one order: the index is usable (index: NULL for a
 * module function, an Export's method or the constructor), then what it was given is converted by format: a tuple
 * as PyArg_ParseTuple (or, with keywords, PyArg_ParseTupleAndKeywords) converts it, a METH_O argument by the
 * format's one "O&" converter. format NULL: nothing to convert. 0, or -1 with the error set and nothing held. */
static int arguments(SearchIndex *index, given call, const char *format, ...)
{
    if (index && !index->k) {
        PyErr_SetString(PyExc_RuntimeError, "Index is not initialised");
        return -1;
    }
    if (index && index->compacting) {
        PyErr_SetString(PyExc_RuntimeError, "Index is being compacted by another thread");
        return -1;
    }
    if (!format)
        return 0;
    va_list va;
    va_start(va, format);
    int converted;
    if (call.one) {
        converter convert = va_arg(va, converter);
        void *out = va_arg(va, void *);
        converted = convert(call.one, out) != 0;
    } else if (call.keywords)
        converted = PyArg_VaParseTupleAndKeywords(call.args, call.kwargs, format, call.keywords, va);
    else
        converted = PyArg_VaParse(call.args, format, va);
    va_end(va);
    return converted ? 0 : -1;
}

/* An entry point's own condition on its arguments: 0 when it holds, else -1 with `type`(message) set. */
static int require(int holds, PyObject *type, const char *message)
{
    if (holds)
        return 0;
    PyErr_SetString(type, message);
    return -1;
}

/* The converters ("O&"): 1, or 0 with the error set. */

/* An article number: a non-negative int below 2**32 - 1 (uint32_t). */
static int docno_arg(PyObject *object, void *docno)
{
    unsigned long long value = PyLong_AsUnsignedLongLong(object);
    if (value == (unsigned long long)-1 && PyErr_Occurred())
        return 0;
    if (value > 0xFFFFFFFEull) {
        PyErr_SetString(PyExc_ValueError, "docno must be below 2**32 - 1");
        return 0;
    }
    *(uint32_t *)docno = (uint32_t)value;
    return 1;
}

/* A buffer (Py_buffer), readable or writable; released by PyArg when a later argument fails, else by the caller. */
static int buffer_of(PyObject *object, Py_buffer *view, int flags)
{
    if (!object) { /* PyArg's clean-up call */
        PyBuffer_Release(view);
        return 1;
    }
    return PyObject_GetBuffer(object, view, flags) < 0 ? 0 : Py_CLEANUP_SUPPORTED;
}

static int readable_arg(PyObject *object, void *view)
{
    return buffer_of(object, view, PyBUF_SIMPLE);
}

static int writable_arg(PyObject *object, void *view)
{
    return buffer_of(object, view, PyBUF_WRITABLE);
}

/* A sketch (bytes of at most K uint32 values) for an index: `what` names it in the error. */
typedef struct {
    const SearchIndex *index;
    const char *what;
    PyObject *bytes;
} sketch_arg;

static int sketch_of(PyObject *object, void *out)
{
    sketch_arg *sketch = out;
    if (!PyBytes_Check(object)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes, not %.100s", sketch->what, Py_TYPE(object)->tp_name);
        return 0;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(object);
    if (size % 4 || size / 4 > sketch->index->k) {
        PyErr_Format(PyExc_ValueError, "%s is %zd bytes: not a sketch of at most K=%zd uint32 values", sketch->what,
                     size, sketch->index->k);
        return 0;
    }
    sketch->bytes = object;
    return 1;
}

static int check_metric(int metric)
{
    if (!KNOWN_METRIC(metric)) {
        PyErr_Format(PyExc_ValueError, "unknown metric code %d", metric);
        return -1;
    }
    return 0;
}

/* Raises compact()'s error (the GIL held); returns -1. */
static int compact_failed(int error)
{
    if (error == COMPACT_TOO_MANY)
        PyErr_SetString(PyExc_MemoryError, "the search index holds more than 2**32 postings");
    else if (error == COMPACT_MAPPED)
        PyErr_SetString(PyExc_RuntimeError, "the index's base is a file: write a new file instead of compacting");
    else
        PyErr_NoMemory();
    return -1;
}

/* ---- module functions: writing and reading a file ---- */

PyDoc_STRVAR(file_size_doc, "file_size(docno_limit, articles, pool_values, id_bytes, hot_postings) -> int\n\n"
                            "The bytes to give a file before init_header and build_file fill it (its hot sections\n"
                            "have room for every possible run; build_file says the final size).");

static PyObject *search_file_size(PyObject *module, PyObject *args)
{
    unsigned long long limit, articles, pool_values, id_bytes, hot_postings;
    if (arguments(NULL, TUPLE(args), "KKKKK:file_size", &limit, &articles, &pool_values, &id_bytes,
                  &hot_postings) < 0 ||
        require(pool_values <= UINT32_MAX && limit <= NO_DOCNO, PyExc_ValueError,
                "an index file holds at most 2**32 - 1 articles and 2**32 values") < 0)
        return NULL;
    file_header h;
    return PyLong_FromUnsignedLongLong(plan_file(&h, limit, articles, pool_values, id_bytes, (size_t)hot_postings));
}

PyDoc_STRVAR(init_header_doc,
             "init_header(buffer, k, hot_postings, generation, config, docno_limit, articles, pool_values, id_bytes,\n"
             "            built_at) -> dict\n\n"
             "Writes a new file's header into buffer (file_size bytes at least) and returns its sections' offsets:\n"
             "the caller then writes the pool, pool_offsets, ids and id_offsets sections, and build_file the rest.");

static PyObject *search_init_header(PyObject *module, PyObject *args)
{
    PyObject *object;
    unsigned int k, hot_postings;
    unsigned long long generation, limit, articles, pool_values, id_bytes, built_at;
    const char *config;
    Py_ssize_t config_length;
    Py_buffer view;
    if (arguments(NULL, TUPLE(args), "OIIKs#KKKKK:init_header", &object, &k, &hot_postings, &generation, &config,
                  &config_length, &limit, &articles, &pool_values, &id_bytes, &built_at) < 0 ||
        require(config_length <= 16 && k >= 1 && k <= 65535 && pool_values <= UINT32_MAX && limit <= NO_DOCNO,
                PyExc_ValueError, "init_header: config is at most 16 bytes, k in 1..65535, at most 2**32 values and "
                                  "2**32 - 1 articles") < 0 ||
        arguments(NULL, ONE(object), "O&", writable_arg, &view) < 0)
        return NULL;
    file_header h;
    uint64_t end = plan_file(&h, limit, articles, pool_values, id_bytes, hot_postings);
    if ((uint64_t)view.len < end) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "init_header: the buffer has %zd bytes, the file needs %llu", view.len,
                     (unsigned long long)end);
        return NULL;
    }
    h.k = k;
    h.hot_postings = hot_postings;
    h.generation = generation;
    h.built_at = built_at;
    write_header(view.buf, &h, config, (size_t)config_length, end);
    PyBuffer_Release(&view);
    PyObject *offsets = PyDict_New();
    for (int s = 0; offsets && s < SECTIONS; s++) {
        PyObject *at = PyLong_FromUnsignedLongLong(h.offset[s]);
        if (!at || PyDict_SetItemString(offsets, section_names[s], at) < 0) {
            Py_XDECREF(at);
            Py_CLEAR(offsets);
        } else
            Py_DECREF(at);
    }
    return offsets;
}

PyDoc_STRVAR(build_file_doc,
             "build_file(buffer, window=0) -> int\n\n"
             "Fills a new file's directory, base, id table and hot sections from its pool and ids (written by the\n"
             "caller after init_header), without the GIL; returns the file's final size (the caller cuts the file\n"
             "there after seal). The base is built `window` entries at a time (0: FILE_WINDOW_ENTRIES) in memory\n"
             "of its own and written to the file in order.");

static PyObject *search_build_file(PyObject *module, PyObject *args)
{
    PyObject *object;
    Py_ssize_t window = 0;
    Py_buffer view;
    if (arguments(NULL, TUPLE(args), "O|n:build_file", &object, &window) < 0 ||
        arguments(NULL, ONE(object), "O&", writable_arg, &view) < 0)
        return NULL;
    PyObject *result = build_file(view.buf, (size_t)view.len, window > 0 ? (size_t)window : 0);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(seal_doc, "seal(buffer, file_bytes) -> int\n\nWrites the checksum of the file's first file_bytes bytes "
                       "into its header (without the GIL) and returns it.");

static PyObject *search_seal(PyObject *module, PyObject *args)
{
    PyObject *object;
    unsigned long long bytes;
    Py_buffer view;
    if (arguments(NULL, TUPLE(args), "OK:seal", &object, &bytes) < 0 ||
        arguments(NULL, ONE(object), "O&", writable_arg, &view) < 0)
        return NULL;
    if (require(bytes >= HEADER_BYTES && bytes % 8 == 0 && bytes <= (unsigned long long)view.len, PyExc_ValueError,
                "seal: file_bytes must be a multiple of 8 within the buffer") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    uint64_t checksum;
    Py_BEGIN_ALLOW_THREADS
    checksum = file_checksum(view.buf, (size_t)bytes);
    Py_END_ALLOW_THREADS
    seal_file(view.buf, checksum);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(checksum);
}

PyDoc_STRVAR(checksum_doc, "checksum(buffer) -> int\n\nThe checksum of a whole file (its own word read as 0), "
                           "without the GIL.");

static PyObject *search_checksum(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (arguments(NULL, ONE(arg), "O&", readable_arg, &view) < 0)
        return NULL;
    if (require(view.len >= HEADER_BYTES && view.len % 8 == 0, PyExc_ValueError,
                "checksum: the file must be a multiple of 8 bytes, at least the header") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    uint64_t checksum;
    Py_BEGIN_ALLOW_THREADS
    checksum = file_checksum(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLongLong(checksum);
}

PyDoc_STRVAR(header_doc, "header(buffer) -> dict\n\nA file's header, checked (every count in range, every section "
                         "inside the file;\nnot the checksum: Index(file=...) verifies it): ValueError saying what "
                         "is wrong.");

static PyObject *search_header(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (arguments(NULL, ONE(arg), "O&", readable_arg, &view) < 0)
        return NULL;
    file_header h;
    int error = parse_header(view.buf, (size_t)view.len, &h, 0);
    PyBuffer_Release(&view);
    if (error < 0)
        return NULL;
    return Py_BuildValue("{sIsKsKsIsIsIsKsKsKsKsKsKsssKsK}", "version", h.version, "file_bytes",
                         (unsigned long long)h.file_bytes, "generation", (unsigned long long)h.generation, "k", h.k,
                         "hot_postings", h.hot_postings, "bits", h.bits, "docno_limit", (unsigned long long)h.limit,
                         "articles", (unsigned long long)h.articles, "pool_values",
                         (unsigned long long)h.pool_values, "id_bytes", (unsigned long long)h.id_bytes, "hot_runs",
                         (unsigned long long)h.n_hot, "id_slots", (unsigned long long)h.id_slots, "config",
                         h.config, "built_at", (unsigned long long)h.built_at, "checksum",
                         (unsigned long long)h.checksum);
}

/* ---- the index: Index(k, hot_postings, file=None) ---- */

static int index_init(SearchIndex *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"k", "hot_postings", "file", NULL};
    Py_ssize_t k, hot_postings;
    PyObject *file = Py_None;
    if (arguments(NULL, (given){.args = args, .kwargs = kwargs, .keywords = names}, "nn|O:Index", &k, &hot_postings,
                  &file) < 0 ||
        require(k >= 1 && k <= 65535 && hot_postings >= 0, PyExc_ValueError,
                "k must be in 1..65535 and hot_postings >= 0") < 0 ||
        require(!self->k, PyExc_RuntimeError, "Index is already initialised") < 0)
        return -1;
    self->k = k;
    self->hot_postings = (size_t)hot_postings;
    self->next_version = FIRST_VERSION;
    self->values = malloc(2 * (size_t)k * sizeof *self->values);
    self->run_start = malloc((size_t)k * sizeof(size_t));
    self->run_end = malloc((size_t)k * sizeof(size_t));
    self->run_short_end = malloc((size_t)k * sizeof(size_t));
    self->run_long = malloc((size_t)k * sizeof(size_t));
    self->hot_order = malloc((size_t)k * sizeof(uint32_t));
    if (!self->values || !self->run_start || !self->run_end || !self->run_short_end || !self->run_long ||
        !self->hot_order) {
        PyErr_NoMemory();
        return -1;
    }
    if (file != Py_None && map_file(self, file) < 0) {
        self->k = 0; /* unusable: every call is refused */
        return -1;
    }
    return 0;
}

static void index_dealloc(SearchIndex *self)
{
    free(self->offset);
    free(self->slot);
    free(self->pool);
    if (self->mapped)
        PyBuffer_Release(&self->file); /* the base was the file's */
    else {
        free(self->directory);
        free(self->base);
        free(self->hot_values);
        free(self->hot_short);
    }
    clear_delta(self);
    free(self->delta_docno);
    free(self->delta_version);
    free(self->delta_next);
    free(self->touched);
    free(self->values);
    free(self->run_start);
    free(self->run_end);
    free(self->run_short_end);
    free(self->run_long);
    free(self->hot_order);
    free(self->candidates);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void forget(SearchIndex *self, uint32_t docno)
{
    if (docno < self->limit && self->slot[docno].state != ABSENT) {
        self->slot[docno].state = ABSENT;
        self->pool_live -= self->slot[docno].length;
        self->articles--;
    }
}

PyDoc_STRVAR(put_doc, "put(docno, sketch)\n\nStores (or replaces) article docno's sketch; searchable at once.");

static PyObject *index_put(SearchIndex *self, PyObject *args)
{
    uint32_t docno;
    sketch_arg sketch = {self, "sketch", NULL};
    if (arguments(self, TUPLE(args), "O&O&:put", docno_arg, &docno, sketch_of, &sketch) < 0)
        return NULL;
    size_t length = (size_t)PyBytes_GET_SIZE(sketch.bytes) / 4;
    if (reserve_docnos(self, (size_t)docno + 1) < 0 || reserve_pool(self, self->pool_used + length) < 0)
        return NULL;
    int error;
    if (self->sealed && self->next_version == UINT32_MAX && (error = compact(self)) < 0)
        return compact_failed(error), NULL;
    forget(self, docno);
    uint32_t *values = self->pool + self->pool_used;
    decode_values(values, PyBytes_AS_STRING(sketch.bytes), length);
    self->offset[docno] = self->pool_used;
    self->slot[docno].length = (uint16_t)length;
    self->pool_used += length;
    self->pool_live += length;
    self->articles++;
    if (docno >= self->limit)
        self->limit = (size_t)docno + 1;
    uint32_t version = self->next_version++;
    self->slot[docno].state = version;
    if (self->sealed)
        for (size_t i = 0; i < length; i++)
            if (delta_add(self, values[i], docno, version) < 0) {
                forget(self, docno); /* never half indexed: the article is left out */
                return NULL;
            }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(remove_doc, "remove(docno) -> bool\n\nForgets article docno; whether it was stored.");

static PyObject *index_remove(SearchIndex *self, PyObject *arg)
{
    uint32_t docno;
    if (arguments(self, ONE(arg), "O&", docno_arg, &docno) < 0)
        return NULL;
    int stored = docno < self->limit && self->slot[docno].state != ABSENT;
    forget(self, docno);
    return PyBool_FromLong(stored);
}

PyDoc_STRVAR(sketch_doc, "sketch(docno) -> bytes | None\n\nThe stored sketch of article docno.");

static PyObject *index_sketch(SearchIndex *self, PyObject *arg)
{
    uint32_t docno;
    if (arguments(self, ONE(arg), "O&", docno_arg, &docno) < 0)
        return NULL;
    if (docno >= self->limit || self->slot[docno].state == ABSENT)
        Py_RETURN_NONE;
    size_t length = self->slot[docno].length;
    PyObject *sketch = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length * 4);
    if (!sketch)
        return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(sketch);
    const uint32_t *v = values_of(self, docno);
    for (size_t i = 0; i < length; i++) {
        out[4 * i] = (unsigned char)v[i];
        out[4 * i + 1] = (unsigned char)(v[i] >> 8);
        out[4 * i + 2] = (unsigned char)(v[i] >> 16);
        out[4 * i + 3] = (unsigned char)(v[i] >> 24);
    }
    return sketch;
}

PyDoc_STRVAR(compact_doc, "compact()\n\nRebuilds the base postings from every stored article and empties the delta\n"
                          "(the first call makes the index searchable). Runs without the GIL (seconds at a million\n"
                          "articles): other threads go on, and any call of theirs on this index meanwhile raises\n"
                          "RuntimeError.");

static PyObject *index_compact(SearchIndex *self, PyObject *unused)
{
    if (arguments(self, NO_ARGUMENTS, NULL) < 0)
        return NULL;
    int error;
    self->compacting = 1;
    Py_BEGIN_ALLOW_THREADS
    error = compact(self);
    Py_END_ALLOW_THREADS
    self->compacting = 0;
    if (error < 0)
        return compact_failed(error), NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(search_doc,
             "search(query, threshold, metric_code, exclude, above, max_candidates)\n"
             "    -> ([(docno, similarity)], exact)\n\n"
             "The stored articles that reach the threshold with the query sketch, in the order verified (the most\n"
             "shared values first, then docno), never `exclude` and only docnos over `above` (-1: no limit); exact\n"
             "unless more than max_candidates could reach it (the best-sharing ones are verified then).");

static PyObject *index_search(SearchIndex *self, PyObject *args)
{
    PyObject *query;
    double threshold;
    int metric;
    long long exclude, above;
    Py_ssize_t max_candidates;
    sketch_arg sketch = {self, "query", NULL};
    if (arguments(self, TUPLE(args), "OdiLLn:search", &query, &threshold, &metric, &exclude, &above,
                  &max_candidates) < 0 ||
        arguments(self, ONE(query), "O&", sketch_of, &sketch) < 0 || check_metric(metric) < 0 ||
        require(isfinite(threshold), PyExc_ValueError, "threshold must be a finite number") < 0 ||
        require(self->sealed, PyExc_RuntimeError, "the index is not built: call compact() first") < 0)
        return NULL;
    size_t n = (size_t)PyBytes_GET_SIZE(query) / 4, passed;
    PyObject *matches = PyList_New(0);
    if (!matches)
        return NULL;
    if (n == 0)
        return Py_BuildValue("(NO)", matches, Py_True);
    decode_values(self->values, PyBytes_AS_STRING(query), n);
    if (gather_candidates(self, n, threshold, metric, exclude, above, &passed) < 0) {
        Py_DECREF(matches);
        return NULL;
    }
    int exact = passed <= (size_t)(max_candidates > 0 ? max_candidates : 0);
    if (!exact)
        passed = (size_t)(max_candidates > 0 ? max_candidates : 0);
    for (size_t c = 0; c < passed; c++) {
        uint32_t d = (uint32_t)self->candidates[c];
        double similarity;
        if (!verify_candidate(self, n, d, metric, threshold, &similarity))
            continue;
        PyObject *match = Py_BuildValue("(Id)", (unsigned int)d, similarity);
        if (!match || PyList_Append(matches, match) < 0) {
            Py_XDECREF(match);
            Py_DECREF(matches);
            return NULL;
        }
        Py_DECREF(match);
    }
    return Py_BuildValue("(NO)", matches, exact ? Py_True : Py_False);
}

PyDoc_STRVAR(stats_doc, "stats() -> dict\n\nArticles, docno limit, base and delta entries, hot runs, bytes allocated,\n"
                        "hot values left unread by the searches so far.");

static PyObject *index_stats(SearchIndex *self, PyObject *unused)
{
    if (arguments(self, NO_ARGUMENTS, NULL) < 0)
        return NULL;
    size_t base_bytes = (self->sealed ? (((size_t)1 << self->bits) + 1) * sizeof *self->directory : 0)
                        + self->base_entries * sizeof *self->base + self->n_hot * 2 * sizeof(uint32_t);
    size_t bytes = self->capacity * (sizeof *self->offset + sizeof *self->slot)
                   + self->pool_capacity * sizeof *self->pool
                   + (self->mapped ? 0 : base_bytes)
                   + self->delta_slots * (sizeof *self->delta_keys + sizeof *self->delta_heads)
                   + self->delta_capacity * (sizeof *self->delta_docno + sizeof *self->delta_version +
                                             sizeof *self->delta_next)
                   + self->touched_capacity * (sizeof *self->touched + sizeof *self->candidates);
    return Py_BuildValue("{sn,sn,sn,sn,sn,sn,sn,sn,sn,sn,sn}", "mapped", (Py_ssize_t)self->mapped,
                         "file_bytes", (Py_ssize_t)(self->mapped ? self->file.len : 0), "hot_values_skipped", (Py_ssize_t)self->hot_values_skipped,
                         "articles", (Py_ssize_t)self->articles,
                         "docno_limit", (Py_ssize_t)self->limit, "base_entries", (Py_ssize_t)self->base_entries,
                         "delta_entries", (Py_ssize_t)self->delta_entries, "hot_runs", (Py_ssize_t)self->n_hot,
                         "pool_values", (Py_ssize_t)self->pool_used, "live_values", (Py_ssize_t)self->pool_live,
                         "bytes", (Py_ssize_t)bytes);
}

PyDoc_STRVAR(base_docno_doc, "base_docno(id: bytes) -> int | None\n\nThe docno the mapped file gives id (whatever "
                             "was written since), or None.");

/* base_docno's id: bytes. */
static int id_arg(PyObject *object, void *id)
{
    if (!PyBytes_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "base_docno: id must be bytes");
        return 0;
    }
    *(PyObject **)id = object;
    return 1;
}

static PyObject *index_base_docno(SearchIndex *self, PyObject *arg)
{
    PyObject *id;
    if (arguments(self, ONE(arg), "O&", id_arg, &id) < 0)
        return NULL;
    if (!self->mapped)
        Py_RETURN_NONE;
    uint32_t d = file_docno(self, PyBytes_AS_STRING(id), (size_t)PyBytes_GET_SIZE(id));
    if (d == NO_DOCNO)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLong(d);
}

PyDoc_STRVAR(base_id_doc, "base_id(docno) -> bytes | None\n\nThe id the mapped file gives docno, or None.");

static PyObject *index_base_id(SearchIndex *self, PyObject *arg)
{
    uint32_t d;
    if (arguments(self, ONE(arg), "O&", docno_arg, &d) < 0)
        return NULL;
    if (!self->mapped || d >= self->file_limit || self->id_offsets[d + 1] == self->id_offsets[d])
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(self->id_bytes + self->id_offsets[d],
                                     (Py_ssize_t)(self->id_offsets[d + 1] - self->id_offsets[d]));
}

/* ---- Export: what a new file's articles are, copied from an index at one moment (Index.export) ---- */

static PyTypeObject ExportType;

PyDoc_STRVAR(export_doc, "export(ids: dict[int, bytes]) -> Export\n\nA copy of what the index stores now, for a new "
                         "file (Export.write): ids gives the id of\nevery stored docno the mapped file does not hold "
                         "(all of them for an index of its own). The index\nmay change meanwhile.");

static void export_dealloc(Export *self)
{
    Py_XDECREF(self->index);
    free(self->slot);
    free(self->offset);
    free(self->pool);
    free(self->id_docnos);
    free(self->id_starts);
    free(self->id_data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* export's ids: a dict (of docno to bytes). */
static int ids_arg(PyObject *object, void *ids)
{
    if (!PyDict_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "export: ids must be a dict of docno to bytes");
        return 0;
    }
    *(PyObject **)ids = object;
    return 1;
}

static PyObject *index_export(SearchIndex *self, PyObject *arg)
{
    PyObject *ids;
    if (arguments(self, ONE(arg), "O&", ids_arg, &ids) < 0)
        return NULL;
    Export *export = PyObject_New(Export, &ExportType);
    if (!export)
        return NULL;
    Py_INCREF(self);
    export->index = self;
    export->limit = self->limit;
    export->articles = self->articles;
    export->pool_values = self->pool_live;
    export->id_bytes = 0;
    export->slot = malloc((self->limit ? self->limit : 1) * sizeof *export->slot);
    export->offset = malloc((self->limit ? self->limit : 1) * sizeof *export->offset);
    export->pool = malloc((self->pool_used ? self->pool_used : 1) * sizeof *export->pool);
    Py_ssize_t given = PyDict_Size(ids);
    export->n_ids = 0;
    export->id_docnos = malloc((given ? given : 1) * sizeof *export->id_docnos);
    export->id_starts = malloc((given + 1) * sizeof *export->id_starts);
    export->id_data = NULL;
    uint64_t *order = malloc((given ? given : 1) * sizeof *order);
    PyObject **values = malloc((given ? given : 1) * sizeof *values);
    if (!export->slot || !export->offset || !export->pool || !export->id_docnos || !export->id_starts || !order ||
        !values) {
        PyErr_NoMemory();
        goto fail;
    }
    if (self->limit) {
        memcpy(export->slot, self->slot, self->limit * sizeof *export->slot);
        memcpy(export->offset, self->offset, self->limit * sizeof *export->offset);
    }
    memcpy(export->pool, self->pool, self->pool_used * sizeof *export->pool);
    /* the ids given, by docno (only those of stored articles outside the mapped base count) */
    Py_ssize_t position = 0, n = 0;
    PyObject *key, *value;
    while (PyDict_Next(ids, &position, &key, &value)) {
        uint32_t d;
        if (!docno_arg(key, &d))
            goto fail;
        if (!PyBytes_Check(value) || PyBytes_GET_SIZE(value) < 1 || PyBytes_GET_SIZE(value) > MAX_ID_BYTES) {
            PyErr_Format(PyExc_ValueError, "export: the id of docno %u must be 1..%d bytes", d, MAX_ID_BYTES);
            goto fail;
        }
        if (d >= export->limit || export->slot[d].state == ABSENT || from_base(export, d))
            continue;
        values[n] = value;
        order[n] = (uint64_t)d << 32 | (uint64_t)n;
        n++;
    }
    qsort(order, (size_t)n, sizeof *order, compare_keys);
    size_t data = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        data += (size_t)PyBytes_GET_SIZE(values[(uint32_t)order[i]]);
    export->id_data = malloc(data ? data : 1);
    if (!export->id_data) {
        PyErr_NoMemory();
        goto fail;
    }
    data = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = values[(uint32_t)order[i]];
        export->id_docnos[i] = (uint32_t)(order[i] >> 32);
        export->id_starts[i] = data;
        memcpy(export->id_data + data, PyBytes_AS_STRING(id), (size_t)PyBytes_GET_SIZE(id));
        data += (size_t)PyBytes_GET_SIZE(id);
    }
    export->id_starts[n] = data;
    export->n_ids = (size_t)n;
    /* every stored article has an id: the file's, or one given */
    for (size_t d = 0; d < export->limit; d++) {
        if (export->slot[d].state == ABSENT)
            continue;
        if (from_base(export, d)) {
            export->id_bytes += (size_t)(self->id_offsets[d + 1] - self->id_offsets[d]);
            continue;
        }
        Py_ssize_t at = export_id(export, (uint32_t)d);
        if (at < 0) {
            PyErr_Format(PyExc_ValueError, "export: no id given for stored docno %zu", d);
            goto fail;
        }
        export->id_bytes += (size_t)(export->id_starts[at + 1] - export->id_starts[at]);
    }
    free(order);
    free(values);
    return (PyObject *)export;
fail:
    free(order);
    free(values);
    Py_DECREF(export);
    return NULL;
}

PyDoc_STRVAR(export_sizes_doc, "sizes() -> (docno_limit, articles, pool_values, id_bytes)\n\nWhat file_size and "
                               "init_header are given for this export.");

static PyObject *export_sizes(Export *self, PyObject *unused)
{
    return Py_BuildValue("(nnnn)", (Py_ssize_t)self->limit, (Py_ssize_t)self->articles,
                         (Py_ssize_t)self->pool_values, (Py_ssize_t)self->id_bytes);
}

PyDoc_STRVAR(export_write_doc, "write(buffer)\n\nWrites the pool, pool_offsets, ids and id_offsets sections of a new "
                               "file whose header init_header\nwrote with sizes(), without the GIL.");

static PyObject *export_write(Export *self, PyObject *arg)
{
    Py_buffer view;
    file_header h;
    if (arguments(NULL, ONE(arg), "O&", writable_arg, &view) < 0)
        return NULL;
    if (parse_header(view.buf, (size_t)view.len, &h, 1) < 0 ||
        require(h.limit == self->limit && h.articles == self->articles && h.pool_values == self->pool_values &&
                h.id_bytes == self->id_bytes && h.k == (uint32_t)self->index->k,
                PyExc_ValueError, "write: the file's header was not made with this export's sizes") < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int overflow;
    Py_BEGIN_ALLOW_THREADS
    overflow = write_articles(self, view.buf, &h) < 0;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (overflow) {
        PyErr_SetString(PyExc_RuntimeError, "write: the export's articles differ from its sizes");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef export_methods[] = {
    {"sizes", (PyCFunction)export_sizes, METH_NOARGS, export_sizes_doc},
    {"write", (PyCFunction)export_write, METH_O, export_write_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ExportType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup.core._search.Export",
    .tp_doc = PyDoc_STR("What Index.export copied: the articles of a new index file."),
    .tp_basicsize = sizeof(Export),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)export_dealloc,
    .tp_methods = export_methods,
};

static PyMethodDef index_methods[] = {
    {"put", (PyCFunction)index_put, METH_VARARGS, put_doc},
    {"remove", (PyCFunction)index_remove, METH_O, remove_doc},
    {"sketch", (PyCFunction)index_sketch, METH_O, sketch_doc},
    {"compact", (PyCFunction)index_compact, METH_NOARGS, compact_doc},
    {"search", (PyCFunction)index_search, METH_VARARGS, search_doc},
    {"stats", (PyCFunction)index_stats, METH_NOARGS, stats_doc},
    {"export", (PyCFunction)index_export, METH_O, export_doc},
    {"base_docno", (PyCFunction)index_base_docno, METH_O, base_docno_doc},
    {"base_id", (PyCFunction)index_base_id, METH_O, base_id_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "neardup.core._search.Index",
    .tp_doc = PyDoc_STR("Index(k, hot_postings, file=None): articles' bottom-K sketches by docno and their postings in\n"
                        "memory; put/remove keep it current, compact() builds the base (needed once before searching).\n"
                        "With file (a buffer holding an index file, e.g. a read-only mmap), the base is the file's,\n"
                        "searched in place (its hot_postings too); put/remove keep a delta in the index's own memory."),
    .tp_basicsize = sizeof(SearchIndex),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)index_init,
    .tp_dealloc = (destructor)index_dealloc,
    .tp_methods = index_methods,
};

/* ---- the bound rule for the store path (core/candidates.candidates) ---- */

PyDoc_STRVAR(hot_skipped_doc, "hot_skipped(hot, query_length, threshold, metric_code) -> int\n\n"
                              "How many of a query's hot values (hottest first) may be left unread.");

static PyObject *search_hot_skipped(PyObject *module, PyObject *args)
{
    Py_ssize_t hot, query_length;
    double threshold;
    int metric;
    if (arguments(NULL, TUPLE(args), "nndi:hot_skipped", &hot, &query_length, &threshold, &metric) < 0 ||
        check_metric(metric) < 0 ||
        require(hot >= 0 && query_length >= 1, PyExc_ValueError, "hot must be >= 0 and query_length >= 1") < 0)
        return NULL;
    return PyLong_FromSize_t(hot_skipped((size_t)hot, (size_t)query_length, threshold, metric));
}

PyDoc_STRVAR(may_reach_doc, "may_reach(shared, length, out, skipped, query_length, threshold, metric_code)\n\n"
                            "out[i] = whether article i, sharing shared[i] read values (int64) and of length class\n"
                            "length[i] (uint8: its values when short, 0 when long), may reach the threshold.");

static PyObject *search_may_reach(PyObject *module, PyObject *args)
{
    Py_buffer shared, length, out;
    Py_ssize_t skipped, query_length;
    double threshold;
    int metric;
    if (arguments(NULL, TUPLE(args), "y*y*w*nndi:may_reach", &shared, &length, &out, &skipped, &query_length,
                  &threshold, &metric) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = length.len;
    if (check_metric(metric) < 0 ||
        require(shared.len == n * 8 && out.len == n && skipped >= 0 && query_length >= 1, PyExc_ValueError,
                "may_reach: shared must hold int64 and out a byte per length; skipped >= 0, query_length >= 1") < 0)
        goto done;
    const int64_t *counts = shared.buf;
    const uint8_t *lengths = length.buf;
    uint8_t *passes = out.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        passes[i] = (uint8_t)may_reach((size_t)counts[i], lengths[i], (size_t)skipped, (size_t)query_length,
                                       threshold, metric);
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&shared);
    PyBuffer_Release(&length);
    PyBuffer_Release(&out);
    return result;
}

static PyMethodDef search_methods[] = {
    {"hot_skipped", search_hot_skipped, METH_VARARGS, hot_skipped_doc},
    {"may_reach", search_may_reach, METH_VARARGS, may_reach_doc},
    {"file_size", search_file_size, METH_VARARGS, file_size_doc},
    {"init_header", search_init_header, METH_VARARGS, init_header_doc},
    {"build_file", search_build_file, METH_VARARGS, build_file_doc},
    {"seal", search_seal, METH_VARARGS, seal_doc},
    {"checksum", search_checksum, METH_O, checksum_doc},
    {"header", search_header, METH_O, header_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef search_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._search",
    "Compiled corpus search: the bound rule of both search paths, and the in-memory index (Index).",
    -1, search_methods,
};

PyMODINIT_FUNC PyInit__search(void)
{
    if (PyType_Ready(&IndexType) < 0 || PyType_Ready(&ExportType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&search_module);
    if (!module)
        return NULL;
    Py_INCREF(&IndexType);
    if (PyModule_AddObject(module, "Index", (PyObject *)&IndexType) < 0) {
        Py_DECREF(&IndexType);
        Py_DECREF(module);
        return NULL;
    }
    Py_INCREF(&ExportType);
    if (PyModule_AddObject(module, "Export", (PyObject *)&ExportType) < 0 ||
        PyModule_AddIntConstant(module, "FILE_VERSION", FILE_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "HEADER_BYTES", HEADER_BYTES) < 0) {
        Py_DECREF(&ExportType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
