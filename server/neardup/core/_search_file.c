/* The index file: a base in a file, read in place by every process that maps it (_search_index.h describes the index).
 *
 * Little-endian, every section 64-byte aligned, in this order after a 256-byte header:
 *   pool          uint32[pool_values]      every stored article's sketch values, by docno
 *   pool_offsets  uint64[docno_limit + 1]  article d's values are pool[pool_offsets[d] .. pool_offsets[d + 1])
 *   ids           bytes[id_bytes]          every stored article's id (UTF-8), by docno
 *   id_offsets    uint64[docno_limit + 1]  article d's id is ids[id_offsets[d] .. id_offsets[d + 1]); empty: none
 *   directory     uint32[2**bits + 1]      base entries of bucket b: base[directory[b] .. directory[b + 1])
 *   base          entry[pool_values]       (tag, docno) as the in-memory base's, in the same order
 *   id_slots      uint32[id_slots]         an open-addressing table of docnos by id (FNV-1a), NO_DOCNO: empty
 *   hot_values    uint32[n_hot]            the values of the runs over hot_postings entries, ascending
 *   hot_short     uint32[n_hot]            their short entries
 * The header: magic "NDSRCHIX", format version, header bytes, file bytes, the store generation the base is at,
 * K, hot_postings, bits, docno_limit, articles, pool_values, id_bytes, n_hot, id_slots, the sketch configuration's
 * digest, the sections' offsets, when it was written, and a checksum (file_checksum, with its own word as 0) of
 * the whole file. Index(file=...) verifies the checksum and every offset and count against the file's size before
 * it reads anything, and bounds-checks what it reads at search time, so a damaged or forged file raises
 * ValueError or answers wrongly, never reads outside the file.
 *
 * Here: the checksum, laying out, writing and checking the header, building a new file's postings and id table in
 * place (build_file), writing an export's articles into it, and mapping a file into an index. */
#include "_search_index.h"

#define CHECKSUM_P1 0x9E3779B97F4A7C15ull
#define CHECKSUM_P2 0xC2B2AE3D27D4EB4Full
/* build_file builds the base this many entries at a time in memory of its own (384 MB), then writes it to the file
 * in order: a file's pages are written once, where scattering into the mapping itself dirties every page many
 * times over and leaves the kernel writing them back again and again. */
#define FILE_WINDOW_ENTRIES ((size_t)1 << 26)

const char *const section_names[SECTIONS] = {"pool", "pool_offsets", "ids", "id_offsets", "directory", "base",
                                             "id_slots", "hot_values", "hot_short"};

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap64(w);
#endif
    return w;
}

static inline uint32_t load32(const unsigned char *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap32(w);
#endif
    return w;
}

static inline void store64(unsigned char *p, uint64_t w)
{
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap64(w);
#endif
    memcpy(p, &w, 8);
}

static inline void store32(unsigned char *p, uint32_t w)
{
#if !PY_LITTLE_ENDIAN
    w = __builtin_bswap32(w);
#endif
    memcpy(p, &w, 4);
}

/* Words [first, first + words) of the checksummed stream, at data: word i goes into lane i mod 4. */
static void checksum_words(uint64_t h[4], const unsigned char *data, size_t words, size_t first)
{
    uint64_t h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3];
    const unsigned char *p = data, *stop = data + (first % 4 == 0 ? words / 4 * 32 : 0);
    for (; p < stop; p += 32) {
        h0 = rotl64((h0 ^ load64(p)) * CHECKSUM_P1, 31);
        h1 = rotl64((h1 ^ load64(p + 8)) * CHECKSUM_P1, 31);
        h2 = rotl64((h2 ^ load64(p + 16)) * CHECKSUM_P1, 31);
        h3 = rotl64((h3 ^ load64(p + 24)) * CHECKSUM_P1, 31);
    }
    h[0] = h0, h[1] = h1, h[2] = h2, h[3] = h3;
    for (size_t i = (size_t)(p - data) / 8; i < words; i++) {
        size_t lane = (first + i) & 3;
        h[lane] = rotl64((h[lane] ^ load64(data + 8 * i)) * CHECKSUM_P1, 31);
    }
}

/* The file's checksum: four lanes over its 64-bit words (word i into lane i mod 4; the checksum's own word read as
 * 0), then mixed with the length. Against damage (a cut, a flipped bit, a stray write), not against forgery. The
 * length must be a multiple of 8 and at least HEADER_BYTES. */
uint64_t file_checksum(const unsigned char *data, size_t bytes)
{
    uint64_t h[4] = {CHECKSUM_P1, CHECKSUM_P2, CHECKSUM_P1 ^ CHECKSUM_P2, ~CHECKSUM_P1};
    unsigned char header[HEADER_BYTES];
    memcpy(header, data, HEADER_BYTES);
    memset(header + CHECKSUM_AT, 0, 8);
    checksum_words(h, header, HEADER_BYTES / 8, 0);
    checksum_words(h, data + HEADER_BYTES, (bytes - HEADER_BYTES) / 8, HEADER_BYTES / 8);
    uint64_t x = (uint64_t)bytes * CHECKSUM_P2;
    for (int lane = 0; lane < 4; lane++)
        x = rotl64(x ^ (h[lane] * CHECKSUM_P2), 27) * CHECKSUM_P1;
    x ^= x >> 33;
    x *= CHECKSUM_P2;
    x ^= x >> 29;
    x *= CHECKSUM_P1;
    x ^= x >> 32;
    return x;
}

static uint64_t align64(uint64_t at)
{
    return (at + 63) & ~(uint64_t)63;
}

static uint64_t id_slots_for(uint64_t articles)
{
    uint64_t slots = 8;
    while (slots < 2 * articles + 1)
        slots *= 2;
    return slots;
}

/* Section sizes from the counts; the hot sections sized for n_hot runs. */
static void section_sizes(file_header *h)
{
    h->size[S_POOL] = h->pool_values * 4;
    h->size[S_POOL_OFFSETS] = (h->limit + 1) * 8;
    h->size[S_IDS] = h->id_bytes;
    h->size[S_ID_OFFSETS] = (h->limit + 1) * 8;
    h->size[S_DIRECTORY] = (((uint64_t)1 << h->bits) + 1) * 4;
    h->size[S_BASE] = h->pool_values * sizeof(entry);
    h->size[S_ID_SLOTS] = h->id_slots * 4;
    h->size[S_HOT_VALUES] = h->n_hot * 4;
    h->size[S_HOT_SHORT] = h->n_hot * 4;
}

/* The sections laid out one after the other from the header on; returns the end. */
static uint64_t lay_out(file_header *h)
{
    section_sizes(h);
    uint64_t at = HEADER_BYTES;
    for (int s = 0; s < SECTIONS; s++) {
        h->offset[s] = align64(at);
        at = h->offset[s] + h->size[s];
    }
    return (at + 7) & ~(uint64_t)7;
}

/* Reads and checks the header of a file of `bytes` bytes: ValueError (saying what is wrong) unless every count is
 * in range and every section lies inside the file. `building`: the file is being written (the hot sections have
 * room for every possible run; file_bytes is not yet final). */
int parse_header(const unsigned char *data, size_t bytes, file_header *h, int building)
{
    memset(h, 0, sizeof *h);
    if (bytes < 8 || memcmp(data, FILE_MAGIC, 8) != 0) {
        PyErr_SetString(PyExc_ValueError, "not a neardup search index file (no NDSRCHIX magic)");
        return -1;
    }
    if (bytes < HEADER_BYTES) {
        PyErr_Format(PyExc_ValueError, "damaged: %zu bytes, shorter than the header", bytes);
        return -1;
    }
    h->version = load32(data + 8);
    if (h->version != FILE_VERSION) {
        PyErr_Format(PyExc_ValueError, "format version %u; this neardup reads version %d", h->version,
                     FILE_VERSION);
        return -1;
    }
    if (load32(data + 12) != HEADER_BYTES) {
        PyErr_Format(PyExc_ValueError, "damaged: a header of %u bytes", load32(data + 12));
        return -1;
    }
    h->file_bytes = load64(data + 16);
    h->generation = load64(data + 24);
    h->k = load32(data + 32);
    h->hot_postings = load32(data + 36);
    h->bits = load32(data + 40);
    h->limit = load64(data + 48);
    h->articles = load64(data + 56);
    h->pool_values = load64(data + 64);
    h->id_bytes = load64(data + 72);
    h->n_hot = load64(data + 80);
    h->id_slots = load64(data + 88);
    memcpy(h->config, data + 96, 16);
    h->config[16] = 0;
    for (int s = 0; s < SECTIONS; s++)
        h->offset[s] = load64(data + 112 + 8 * s);
    h->built_at = load64(data + 184);
    h->checksum = load64(data + CHECKSUM_AT);
    if (!building && h->file_bytes != bytes) {
        PyErr_Format(PyExc_ValueError, "damaged: the header says %llu bytes, the file has %zu (cut short?)",
                     (unsigned long long)h->file_bytes, bytes);
        return -1;
    }
    const char *wrong = NULL;
    if (h->k < 1 || h->k > 65535)
        wrong = "K";
    else if (h->bits < MIN_BUCKET_BITS || h->bits > 31)
        wrong = "bucket bits";
    else if (h->limit > NO_DOCNO)
        wrong = "docno limit";
    else if (h->articles > h->limit)
        wrong = "article count";
    else if (h->pool_values > UINT32_MAX || h->pool_values > h->limit * h->k)
        wrong = "value count";
    else if (h->id_bytes > h->limit * MAX_ID_BYTES)
        wrong = "id bytes";
    else if (h->id_slots < 2 * h->articles + 1 || h->id_slots > ((uint64_t)1 << 34) ||
             (h->id_slots & (h->id_slots - 1)))
        wrong = "id table size";
    else if (h->n_hot > h->pool_values)
        wrong = "hot run count";
    else if ((uint64_t)1 << h->bits < (h->pool_values + ENTRIES_PER_BUCKET - 1) / ENTRIES_PER_BUCKET / 2)
        wrong = "bucket bits";
    if (wrong) {
        PyErr_Format(PyExc_ValueError, "damaged: the header's %s is out of range", wrong);
        return -1;
    }
    uint64_t n_hot = h->n_hot;
    if (building)
        h->n_hot = hot_capacity_of(h->pool_values, h->hot_postings);
    section_sizes(h);
    h->n_hot = n_hot;
    uint64_t end = building ? bytes : h->file_bytes;
    for (int s = 0; s < SECTIONS; s++)
        if (h->offset[s] % 8 || h->offset[s] < HEADER_BYTES || h->offset[s] > end ||
            h->size[s] > end - h->offset[s]) {
            PyErr_Format(PyExc_ValueError, "damaged: section %s (%llu bytes at %llu) is outside the file's %llu "
                         "bytes", section_names[s], (unsigned long long)h->size[s],
                         (unsigned long long)h->offset[s], (unsigned long long)end);
            return -1;
        }
    return 0;
}

static inline const uint64_t *u64_section(const unsigned char *data, const file_header *h, int s)
{
    return (const uint64_t *)(data + h->offset[s]);
}

/* The per-docno arrays of a file (its offsets into the pool and into the ids): 0, or a message. */
static const char *check_articles(const unsigned char *data, const file_header *h, uint64_t *articles)
{
    const uint64_t *pool_offsets = u64_section(data, h, S_POOL_OFFSETS), *id_offsets = u64_section(data, h,
                                                                                                  S_ID_OFFSETS);
    if (pool_offsets[0] != 0 || id_offsets[0] != 0)
        return "an offset array does not start at 0";
    uint64_t count = 0;
    for (uint64_t d = 0; d < h->limit; d++) {
        uint64_t length = pool_offsets[d + 1] - pool_offsets[d], id = id_offsets[d + 1] - id_offsets[d];
        if (pool_offsets[d + 1] < pool_offsets[d] || length > h->k)
            return "an article's values are out of range";
        if (id_offsets[d + 1] < id_offsets[d] || id > MAX_ID_BYTES)
            return "an article's id is out of range";
        if (id == 0 && length)
            return "an article without an id has values";
        count += id > 0;
    }
    if (pool_offsets[h->limit] != h->pool_values || id_offsets[h->limit] != h->id_bytes)
        return "an offset array does not end at its section's size";
    *articles = count;
    return NULL;
}

static uint64_t id_hash(const char *id, size_t length)
{
    uint64_t hash = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < length; i++) {
        hash ^= (unsigned char)id[i];
        hash *= 0x100000001B3ull;
    }
    return hash ^ (hash >> 29);
}

/* The docno of `id` in a file's id table, or NO_DOCNO. Every probe is bounds-checked; at most id_slots probes. */
uint32_t file_docno(const SearchIndex *self, const char *id, size_t length)
{
    size_t mask = self->id_slot_count - 1, at = (size_t)id_hash(id, length) & mask;
    for (size_t probes = 0; probes < self->id_slot_count; probes++, at = (at + 1) & mask) {
        uint32_t d = self->id_slots[at];
        if (d == NO_DOCNO)
            return NO_DOCNO;
        if (d < self->file_limit && self->id_offsets[d + 1] - self->id_offsets[d] == length &&
            memcmp(self->id_bytes + self->id_offsets[d], id, length) == 0)
            return d;
    }
    return NO_DOCNO;
}

typedef struct {
    const uint32_t *pool;
    const uint64_t *pool_offsets, *id_offsets;
} file_articles;

static int file_article(const void *context, size_t d, const uint32_t **values, size_t *length)
{
    const file_articles *file = context;
    *length = (size_t)(file->pool_offsets[d + 1] - file->pool_offsets[d]);
    *values = file->pool + file->pool_offsets[d];
    return file->id_offsets[d + 1] > file->id_offsets[d];
}

/* Writes a new file's header: h planned (plan_file; end: its bytes), with K, hot_postings, generation and
 * built_at set; config: the sketch configuration's digest (at most 16 bytes). */
void write_header(unsigned char *data, const file_header *h, const char *config, size_t config_length, uint64_t end)
{
    memset(data, 0, HEADER_BYTES);
    memcpy(data, FILE_MAGIC, 8);
    store32(data + 8, FILE_VERSION);
    store32(data + 12, HEADER_BYTES);
    store64(data + 16, end);
    store64(data + 24, h->generation);
    store32(data + 32, h->k);
    store32(data + 36, h->hot_postings);
    store32(data + 40, h->bits);
    store64(data + 48, h->limit);
    store64(data + 56, h->articles);
    store64(data + 64, h->pool_values);
    store64(data + 72, h->id_bytes);
    store64(data + 80, 0);
    store64(data + 88, h->id_slots);
    memcpy(data + 96, config, config_length);
    for (int s = 0; s < SECTIONS; s++)
        store64(data + 112 + 8 * s, h->offset[s]);
    store64(data + 184, h->built_at);
}

/* Fills a new file's directory, base, id table and hot sections from its pool and ids, without the GIL (the base
 * `window` entries at a time, 0: FILE_WINDOW_ENTRIES); the file's final size as a Python int, or NULL with
 * ValueError or MemoryError set. */
PyObject *build_file(unsigned char *data, size_t bytes, size_t window)
{
    file_header h;
    if (parse_header(data, bytes, &h, 1) < 0)
        return NULL;
    uint64_t articles;
    const char *wrong = check_articles(data, &h, &articles);
    if (wrong || articles != h.articles) {
        PyErr_Format(PyExc_ValueError, "build_file: %s", wrong ? wrong : "the article count differs");
        return NULL;
    }
    file_articles file = {(const uint32_t *)(data + h.offset[S_POOL]), u64_section(data, &h, S_POOL_OFFSETS),
                          u64_section(data, &h, S_ID_OFFSETS)};
    article_source source = {(size_t)h.limit, file_article, &file};
    postings_out out = {(int)h.bits, (size_t)h.pool_values, hot_capacity_of((size_t)h.pool_values, h.hot_postings),
                        0, (uint32_t *)(data + h.offset[S_DIRECTORY]), (entry *)(data + h.offset[S_BASE]),
                        (uint32_t *)(data + h.offset[S_HOT_VALUES]), NULL};
    int error;
    uint32_t *slots = (uint32_t *)(data + h.offset[S_ID_SLOTS]);
    const char *ids = (const char *)(data + h.offset[S_IDS]);
    uint64_t mask = h.id_slots - 1, end = 0;
    Py_BEGIN_ALLOW_THREADS
    memset(out.directory, 0, (size_t)h.size[S_DIRECTORY]);
    /* the hot runs' shorts go first to the room after the values' room, then right after the values found */
    out.hot_short = out.hot_values + out.hot_capacity;
    error = build_postings(&source, h.hot_postings, &out, window > 0 ? window : FILE_WINDOW_ENTRIES);
    if (error == 0) {
        h.n_hot = out.n_hot;
        section_sizes(&h);
        h.offset[S_HOT_SHORT] = align64(h.offset[S_HOT_VALUES] + h.size[S_HOT_VALUES]);
        memmove(data + h.offset[S_HOT_SHORT], out.hot_short, out.n_hot * 4);
        end = (h.offset[S_HOT_SHORT] + h.size[S_HOT_SHORT] + 7) & ~(uint64_t)7;
        memset(data + h.offset[S_HOT_SHORT] + h.size[S_HOT_SHORT], 0,
               (size_t)(end - h.offset[S_HOT_SHORT] - h.size[S_HOT_SHORT]));
        for (uint64_t s = 0; s < h.id_slots; s++)
            slots[s] = NO_DOCNO;
        for (uint64_t d = 0; d < h.limit; d++) {
            uint64_t length = file.id_offsets[d + 1] - file.id_offsets[d];
            if (!length)
                continue;
            uint64_t at = id_hash(ids + file.id_offsets[d], (size_t)length) & mask;
            while (slots[at] != NO_DOCNO)
                at = (at + 1) & mask;
            slots[at] = (uint32_t)d;
        }
    }
    Py_END_ALLOW_THREADS
    if (error < 0)
        return PyErr_NoMemory();
    store64(data + 80, h.n_hot);
    store64(data + 16, end);
    store64(data + 112 + 8 * S_HOT_SHORT, h.offset[S_HOT_SHORT]);
    return PyLong_FromUnsignedLongLong(end);
}

void seal_file(unsigned char *data, uint64_t checksum)
{
    store64(data + CHECKSUM_AT, checksum);
}

/* ---- a mapped index: Index(k, hot_postings, file=buffer) ---- */

/* Checks a file (its checksum, then its arrays) and points the index at it; the GIL released for the passes over
 * the file. 0, or -1 with ValueError set. */
int map_file(SearchIndex *self, PyObject *file)
{
#if !PY_LITTLE_ENDIAN
    PyErr_SetString(PyExc_ValueError, "index files are little-endian: this host cannot read them in place");
    return -1;
#endif
    if (PyObject_GetBuffer(file, &self->file, PyBUF_SIMPLE) < 0)
        return -1;
    self->mapped = 1; /* from here on, dealloc releases the buffer */
    const unsigned char *data = self->file.buf;
    size_t bytes = (size_t)self->file.len;
    file_header h;
    if (parse_header(data, bytes, &h, 0) < 0)
        return -1;
    if (h.k != (uint32_t)self->k) {
        PyErr_Format(PyExc_ValueError, "the file holds sketches of K=%u, the index is for K=%zd", h.k, self->k);
        return -1;
    }
    uint64_t checksum, articles = 0;
    const char *wrong = NULL;
    const uint32_t *directory = (const uint32_t *)(data + h.offset[S_DIRECTORY]);
    const uint32_t *hot_values = (const uint32_t *)(data + h.offset[S_HOT_VALUES]);
    Py_BEGIN_ALLOW_THREADS
    checksum = bytes % 8 ? 0 : file_checksum(data, bytes);
    if (checksum == h.checksum && bytes % 8 == 0) {
        wrong = check_articles(data, &h, &articles);
        if (!wrong && articles != h.articles)
            wrong = "the article count differs from the header's";
        size_t buckets = (size_t)1 << h.bits;
        if (!wrong && (directory[0] != 0 || directory[buckets] != h.pool_values))
            wrong = "the directory does not span the base";
        for (size_t b = 0; !wrong && b < buckets; b++)
            if (directory[b + 1] < directory[b])
                wrong = "the directory goes back";
        for (uint64_t i = 1; !wrong && i < h.n_hot; i++)
            if (hot_values[i] <= hot_values[i - 1])
                wrong = "the hot table is out of order";
    }
    Py_END_ALLOW_THREADS
    if (bytes % 8 || checksum != h.checksum) {
        PyErr_Format(PyExc_ValueError, "damaged: checksum %016llx, the header says %016llx",
                     (unsigned long long)checksum, (unsigned long long)h.checksum);
        return -1;
    }
    if (wrong) {
        PyErr_Format(PyExc_ValueError, "damaged: %s", wrong);
        return -1;
    }
    if (reserve_docnos(self, (size_t)h.limit) < 0)
        return -1;
    self->hot_postings = h.hot_postings;
    self->file_limit = self->limit = (size_t)h.limit;
    self->base_pool = (const uint32_t *)(data + h.offset[S_POOL]);
    self->base_offsets = u64_section(data, &h, S_POOL_OFFSETS);
    self->id_offsets = u64_section(data, &h, S_ID_OFFSETS);
    self->id_bytes = (const char *)(data + h.offset[S_IDS]);
    self->id_slots = (const uint32_t *)(data + h.offset[S_ID_SLOTS]);
    self->id_slot_count = (size_t)h.id_slots;
    self->directory = (uint32_t *)directory;
    self->base = (entry *)(data + h.offset[S_BASE]);
    self->hot_values = (uint32_t *)hot_values;
    self->hot_short = (uint32_t *)(data + h.offset[S_HOT_SHORT]);
    self->n_hot = (size_t)h.n_hot;
    self->bits = (int)h.bits;
    self->base_entries = self->pool_live = (size_t)h.pool_values;
    self->articles = (size_t)h.articles;
    for (size_t d = 0; d < self->limit; d++)
        if (self->id_offsets[d + 1] > self->id_offsets[d]) {
            self->slot[d].state = IN_BASE;
            self->slot[d].length = (uint16_t)(self->base_offsets[d + 1] - self->base_offsets[d]);
        }
    self->sealed = 1;
    return 0;
}

/* ---- writing an export's articles into a new file ---- */

/* The pool, pool_offsets, ids and id_offsets sections of a new file whose header h (parsed) was made with the
 * export's sizes; touches no Python object (runs without the GIL). 0, or -1 when the export's articles differ
 * from its sizes. */
int write_articles(const Export *export, unsigned char *data, const file_header *h)
{
    uint32_t *pool = (uint32_t *)(data + h->offset[S_POOL]);
    uint64_t *pool_offsets = (uint64_t *)(data + h->offset[S_POOL_OFFSETS]);
    char *ids = (char *)(data + h->offset[S_IDS]);
    uint64_t *id_offsets = (uint64_t *)(data + h->offset[S_ID_OFFSETS]);
    const SearchIndex *index = export->index;
    int overflow = 0;
    uint64_t pool_at = 0, id_at = 0;
    for (size_t d = 0; d < export->limit && !overflow; d++) {
        pool_offsets[d] = pool_at;
        id_offsets[d] = id_at;
        if (export->slot[d].state == ABSENT)
            continue;
        size_t length = export->slot[d].length, id_length;
        const uint32_t *values;
        const char *id;
        if (from_base(export, d)) {
            values = index->base_pool + index->base_offsets[d];
            id = index->id_bytes + index->id_offsets[d];
            id_length = (size_t)(index->id_offsets[d + 1] - index->id_offsets[d]);
        } else {
            Py_ssize_t at = export_id(export, (uint32_t)d);
            values = export->pool + export->offset[d];
            id = export->id_data + export->id_starts[at];
            id_length = (size_t)(export->id_starts[at + 1] - export->id_starts[at]);
        }
        if (pool_at + length > export->pool_values || id_at + id_length > export->id_bytes) {
            overflow = 1;
            break;
        }
        memcpy(pool + pool_at, values, length * sizeof *pool);
        memcpy(ids + id_at, id, id_length);
        pool_at += length;
        id_at += id_length;
    }
    pool_offsets[export->limit] = pool_at;
    id_offsets[export->limit] = id_at;
    overflow |= pool_at != export->pool_values || id_at != export->id_bytes;
    return overflow ? -1 : 0;
}

/* A new file's header laid out from its counts, the hot sections with room for every possible run (h zeroed
 * first); the file's bytes before build_file. */
uint64_t plan_file(file_header *h, uint64_t limit, uint64_t articles, uint64_t pool_values, uint64_t id_bytes,
                   size_t hot_postings)
{
    memset(h, 0, sizeof *h);
    h->limit = limit;
    h->articles = articles;
    h->pool_values = pool_values;
    h->id_bytes = id_bytes;
    h->bits = (uint32_t)bucket_bits((size_t)pool_values);
    h->id_slots = id_slots_for(articles);
    h->n_hot = hot_capacity_of((size_t)pool_values, hot_postings);
    return lay_out(h);
}
