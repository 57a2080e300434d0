/* Whole on purpose: the three entry points (bottom-K, SimHash, scored pairs) share one call's pipeline (arena,
 * candidate matrix, groupings, answer building) as static helpers the compiler inlines into each hot loop. */
/* The hot path of neardup: groups one ranked result set of bottom-K sketches in one call, with the GIL
 * released when the set is large (release_gil_for). It returns exactly what reference.dedup returns (tests compare
 * them); reference.py is the specification of the similarity, of min_shared and of both groupings.
 *
 * Why it is fast:
 *  - candidates: one hash table over every value of the set (home slot -> chain of the occurrences whose
 *    value hashes there: mostly one value's) finds the pairs that share at least one value; every other pair
 *    has no shared value, so it cannot be a duplicate and is never compared;
 *  - the same pass counts, per pair, the values the two share (a byte per pair, for sets of up to
 *    COUNTED_MAX_RESULTS). For sorted sketches that count is exactly what the card's merge would find
 *    (every shared value lies below both caps), so a counted pair is decided without merging, by one
 *    division (the score grows with the count, so reaching min_shared's count is reaching the threshold);
 *    the counted pairs are then marked in a triangular bit matrix from their counts (16 at a time);
 *  - pairs the count cannot settle (a value held by very many sketches, a count past 254, a set too large
 *    for the byte matrix) are merged with the card's early termination (stop once `needed` shared values
 *    are found, or once they can no longer be);
 *  - greedy compares j only with kept candidates (a bitwise AND of two rows), components skips pairs that
 *    are already in one component.
 *
 * Where a call's time goes, on real result sets (100 results, thousands of values, many of them repeats; perf,
 * cachegrind and a cycle count per phase; benchmarks/bench_kernel_real.py times it against the kernel
 * before these choices):
 *  - inserting the values: two-byte slots and records (sets under 65,535 values and results; four-byte
 *    ones above), 4 slots a value, so 128 KB; a value goes first in its home slot's chain without a branch at
 *    all. An open-addressing table (a slot per value, the value compared on insert) spent twice as long here:
 *    a collision with another value is a branch that waits on the slot read and on the read of the value it
 *    points to, tens of cycles lost each time it is mispredicted; branch-free probing of two
 *    slots made every store wait on those reads instead and was slower still;
 *  - counting: a sketch's repeats (occurrences with a nonempty chain) are listed while inserting and
 *    counted afterwards, the latest earlier occurrence of each, then the rest of the deep ones' chains,
 *    without a branch on whether an occurrence holds the same value (a pair that is not one counts on the
 *    row's spare diagonal), by a plain byte increment when no sketch holds more than 254 values (no count can
 *    then reach COUNT_SATURATED). Counting in the insert loop (the count's address then waits on the slot
 *    read) and one record per occurrence (value, sketch and previous together) were measured slower;
 *  - memory: the buffers (~300 KB) come from an arena block kept in a small pool (arena_take). Allocated and
 *    freed per call, glibc gave the pages back to the system whenever the heap's top was free (a caller's
 *    main thread with little else allocated) and the next call faulted them in again: ~120 page faults, 3-4x
 *    the call's time.
 *
 * SimHash result sets (dedup_simhash) share the candidate matrix and the three groupings: each sketch is one
 * 64-bit fingerprint, the matrix marks every pair of present fingerprints within the maximum Hamming distance
 * (one popcount of a ^ b per pair), and is_duplicate decides a pair by that same popcount
 * (reference.dedup_simhash is the specification).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "_pair.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { GREEDY = 0, COMPONENTS = 1, COMPLETE = 2 };

/* Multiply-shift hashing with a random odd multiplier per process (seeded at import), so crafted values
 * cannot force long chains. */
static uint64_t hash_multiplier;

/* The most values the 32-bit occurrence indices can address. */
#define MAX_TOTAL_VALUES ((Py_ssize_t)INT32_MAX - 1)
/* The most results: the candidate matrix of a million already takes 64 GB. */
#define MAX_RESULTS ((Py_ssize_t)1 << 20)

/* Hash table slots per value (rounded up to a power of two): a sparse table keeps most chains to one value
 * (another value in a chain costs count_repeats a compare and a count on the diagonal). 2 (more of them)
 * and 8 (a table twice the size to clear) were measured slower. */
#define TABLE_SLOTS_PER_VALUE 4

/* Chains deeper than this are marked by mark_long_chains: past it, OR-ing rows beats m²/2 single bits.
 * Pairs marked that way are not counted; they are merged. */
#define MAX_PAIRWISE_DEPTH(n) (((size_t)(n) >> 6) + 8)

/* Sets of up to this many results count shared values per pair (a byte each: 8 MB at the most). */
#define COUNTED_MAX_RESULTS 4096

/* A table larger than the L2 cache misses on most probes: the fill then prefetches a sketch's slots before
 * inserting its values (inserts are independent). In cache, prefetching only costs. */
#define PREFETCH_MIN_TABLE_BYTES ((size_t)1 << 20)

#if defined(__GNUC__) || defined(__clang__)
#define LOWEST_BIT(word) ((unsigned)__builtin_ctzll(word))
#define PREFETCH(address) __builtin_prefetch(address, 1)
#define PREFETCH_READ(address) __builtin_prefetch(address, 0)
#else
static unsigned LOWEST_BIT(uint64_t word)
{
    unsigned bit = 0;
    while (!(word & 1)) {
        word >>= 1;
        bit++;
    }
    return bit;
}
#define PREFETCH(address) ((void)(address))
#define PREFETCH_READ(address) ((void)(address))
#endif

/* ---- candidate pairs ---- */

/* The value table, chained by home slot. Occurrences are numbered from 1 in input order (0 = none):
 * occurrence o holds values[o - 1] (values[-1] exists, so reading the value of none needs no branch). A slot
 * holds the latest occurrence whose value has it as home slot (0 = none), `previous` the one before it in the
 * same chain: the earlier occurrences of the same value, and those of any other value with the same home slot
 * (few, in a sparse table). Sets of fewer than 65,535 values and results (every real result set) use two-byte
 * slots and records, the others four: the smaller they are, the more of them stays in the cache. */
typedef struct {
    void *slots;    /* uint16_t or uint32_t, by wide, as are previous and owner */
    void *previous; /* per occurrence: the previous occurrence in its chain, 0 at the first */
    void *owner;    /* per occurrence: the sketch holding it */
    uint16_t *depth; /* per deep repeat (count_repeats): how many occurrences its chain holds up to it */
    int wide;
    int bits;
    const uint32_t *values;
} value_table;

/* Sets of fewer values (and results) than this use two-byte slots and records. */
#define NARROW_MAX_VALUES 65535

#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define UNLIKELY(condition) __builtin_expect(!!(condition), 0)
#define NOINLINE __attribute__((noinline))
#else
#define ALWAYS_INLINE inline
#define UNLIKELY(condition) (condition)
#define NOINLINE
#endif

/* Element i of a uint16_t (narrow) or uint32_t (wide) array. */
static ALWAYS_INLINE uint32_t get(const void *array, size_t i, int wide)
{
    return wide ? ((const uint32_t *)array)[i] : ((const uint16_t *)array)[i];
}

static ALWAYS_INLINE void put(void *array, size_t i, uint32_t value, int wide)
{
    if (wide)
        ((uint32_t *)array)[i] = value;
    else
        ((uint16_t *)array)[i] = (uint16_t)value;
}

/* The slot whose chain holds a value's occurrences: multiply-shift hashing (the product's top `bits` bits). */
static ALWAYS_INLINE uint64_t home_slot(uint64_t multiplier, uint32_t value, int bits)
{
    return (multiplier * value) >> (64 - bits);
}

/* How shared values are counted: by a byte per pair that cannot overflow (no sketch holds more than 254
 * values, so no pair shares more), by one that saturates at COUNT_SATURATED, or not at all (candidates are
 * marked in the matrix instead). Counted pairs are marked from their counts afterwards (mark_counted_pairs). */
enum { COUNT_PLAIN, COUNT_SATURATING, MARK_ONLY };

/* Counts (or marks) pair (i, s) in sketch s's row. i = s is the row's spare diagonal entry, where what makes
 * no pair goes in place of a branch: an earlier occurrence of another value in the chain, or of the same
 * value in the same (unsorted) sketch. */
static ALWAYS_INLINE void count_at(uint8_t *count, uint64_t *matrix_row, size_t i, int mode)
{
    if (mode == MARK_ONLY)
        matrix_row[i >> 6] |= (uint64_t)1 << (i & 63);
    else if (mode == COUNT_SATURATING)
        *count += *count != COUNT_SATURATED;
    else
        (*count)++;
}

/* Inserts the occurrences first..end of one sketch: each goes first in the chain of its home slot, which
 * holds the earlier occurrences of its value and those of the few other values with the same home slot
 * (count_repeats tells them apart). No branch depends on what a slot holds, so nothing here waits on the
 * table's reads. Lists in `repeats` the occurrences whose chain is not empty and returns how many. */
static ALWAYS_INLINE size_t insert_values_width(const value_table *table, uint32_t first, uint32_t end,
                                                uint32_t *restrict repeats, int wide)
{
    /* locals the stores below cannot alias, so nothing is reloaded in the loop */
    const uint32_t *restrict values = table->values;
    void *restrict slots = table->slots;
    void *restrict previous = table->previous;
    const uint64_t multiplier = hash_multiplier;
    const int bits = table->bits;
    size_t n_repeats = 0;
    for (uint32_t o = first; o <= end; o++) {
        uint64_t at = home_slot(multiplier, values[o - 1], bits);
        uint32_t held = get(slots, at, wide);
        put(slots, at, o, wide);
        put(previous, o, held, wide);
        repeats[n_repeats] = o;
        n_repeats += held != 0;
    }
    return n_repeats;
}

/* Apart, so that the loop has the registers to itself. */
static NOINLINE size_t insert_values_narrow(const value_table *table, uint32_t first, uint32_t end,
                                            uint32_t *repeats)
{
    return insert_values_width(table, first, end, repeats, 0);
}

static NOINLINE size_t insert_values_wide(const value_table *table, uint32_t first, uint32_t end,
                                          uint32_t *repeats)
{
    return insert_values_width(table, first, end, repeats, 1);
}

/* i if `same` (0 or 1), else other: by a mask, as compilers make a branch of a conditional here, and it would
 * not be predictable. */
static ALWAYS_INLINE size_t same_or(size_t i, size_t same, size_t other)
{
    return other ^ ((i ^ other) & ((size_t)0 - same));
}

/* The repeats of sketch s (occurrences with earlier ones in their chain): the sketch of each earlier occurrence
 * of the same value is counted (or marked) in s's row. Most values are held by two or three sketches, and most
 * chains hold one value: a first loop counts every repeat's latest earlier occurrence and keeps, in place, the
 * deep repeats (with two or more), whose chains a second loop goes on with. Neither branches on whether an
 * occurrence holds the same value (one that does not counts on the row's diagonal). A deep repeat whose chain
 * has grown past max_depth counts no further: the chain is listed in long_chains once (when it first outgrows
 * max_depth) and its pairs are left to mark_long_chains (the counts of its pairs are then not used). */
static ALWAYS_INLINE size_t count_repeats(const value_table *table, uint32_t *repeats, size_t n_repeats,
                                          size_t s, size_t max_depth, uint64_t *matrix_row, uint8_t *count_row,
                                          uint32_t *long_chains, size_t n_long, int wide, int mode)
{
    const void *previous = table->previous, *owner = table->owner;
    const uint32_t *values = table->values;
    uint16_t *depths = table->depth;
    size_t saturated = max_depth + 2; /* any depth past max_depth + 1 is the same: stored as this */
    size_t n_deep = 0;
    for (size_t r = 0; r < n_repeats; r++) {
        uint32_t o = repeats[r], f = get(previous, o, wide);
        size_t i = same_or(get(owner, f, wide), values[f - 1] == values[o - 1], s);
        count_at(mode == MARK_ONLY ? NULL : count_row + i, matrix_row, i, mode);
        repeats[n_deep] = o;
        n_deep += get(previous, f, wide) != 0;
    }
    for (size_t r = 0; r < n_deep; r++) {
        uint32_t o = repeats[r], f = get(previous, o, wide), before = get(previous, f, wide);
        uint32_t third = get(previous, before, wide);
        /* how many occurrences the chain holds up to o: f's depth plus one if f is deep itself (third != 0;
         * its depth is then stored), else 3; arithmetic rather than a branch, which would not be predictable */
        size_t depth = 3 + (size_t)(third != 0) * ((size_t)depths[f] - 2);
        depth = depth < saturated ? depth : saturated;
        depths[o] = (uint16_t)depth;
        if (UNLIKELY(depth > max_depth)) {
            if (depth == max_depth + 1)
                long_chains[n_long++] = o;
            continue;
        }
        uint32_t value = values[o - 1];
        size_t i = same_or(get(owner, before, wide), values[before - 1] == value, s);
        count_at(mode == MARK_ONLY ? NULL : count_row + i, matrix_row, i, mode);
        for (f = third; f; f = get(previous, f, wide)) {
            i = same_or(get(owner, f, wide), values[f - 1] == value, s);
            count_at(mode == MARK_ONLY ? NULL : count_row + i, matrix_row, i, mode);
        }
    }
    return n_long;
}

/* Inserts every value, chaining it to the earlier occurrences in its home slot; for each short chain counts
 * each value for each pair it makes (or, without counts, marks the pairs as candidates); lists an occurrence
 * of each chain that grew too long for pairwise work. Sketch by sketch: its values are inserted
 * (insert_values_width), then its repeats counted (count_repeats). */
static ALWAYS_INLINE size_t fill_and_mark_mode(const value_table *table, const result_set *set, size_t n,
                                               size_t max_depth, uint64_t *matrix, uint8_t *counts,
                                               uint32_t *long_chains, uint32_t *repeats, int wide, int mode)
{
    size_t n_long = 0;
    int prefetch = ((size_t)(wide ? 4 : 2) << table->bits) > PREFETCH_MIN_TABLE_BYTES;
    for (size_t s = 0; s < n; s++) {
        uint32_t first = set->start[s], end = set->start[s + 1];
        if (prefetch)
            for (uint32_t e = first; e < end; e++) {
                uint64_t at = home_slot(hash_multiplier, set->values[e], table->bits);
                PREFETCH(wide ? (void *)&((uint32_t *)table->slots)[at] : (void *)&((uint16_t *)table->slots)[at]);
            }
        size_t n_repeats = wide ? insert_values_wide(table, first + 1, end, repeats)
                                : insert_values_narrow(table, first + 1, end, repeats);
        n_long = count_repeats(table, repeats, n_repeats, s, max_depth, matrix + row_offset(s),
                               counts ? counts + count_index(s, 0) : NULL, long_chains, n_long, wide, mode);
    }
    return n_long;
}

/* fill_and_mark_mode for each way of counting, at one width (a constant in each of the two callers below). */
static ALWAYS_INLINE size_t fill_and_mark_width(const value_table *table, const result_set *set, size_t n,
                                                size_t max_depth, uint64_t *matrix, uint8_t *counts, int saturate,
                                                uint32_t *long_chains, uint32_t *repeats, int wide)
{
    if (!counts)
        return fill_and_mark_mode(table, set, n, max_depth, matrix, NULL, long_chains, repeats, wide, MARK_ONLY);
    if (saturate)
        return fill_and_mark_mode(table, set, n, max_depth, matrix, counts, long_chains, repeats, wide,
                                  COUNT_SATURATING);
    return fill_and_mark_mode(table, set, n, max_depth, matrix, counts, long_chains, repeats, wide, COUNT_PLAIN);
}

static NOINLINE size_t fill_and_mark_narrow(const value_table *table, const result_set *set, size_t n,
                                            size_t max_depth, uint64_t *matrix, uint8_t *counts, int saturate,
                                            uint32_t *long_chains, uint32_t *repeats)
{
    return fill_and_mark_width(table, set, n, max_depth, matrix, counts, saturate, long_chains, repeats, 0);
}

static NOINLINE size_t fill_and_mark_wide(const value_table *table, const result_set *set, size_t n,
                                          size_t max_depth, uint64_t *matrix, uint8_t *counts, int saturate,
                                          uint32_t *long_chains, uint32_t *repeats)
{
    return fill_and_mark_width(table, set, n, max_depth, matrix, counts, saturate, long_chains, repeats, 1);
}

/* Counts (or marks, without counts; saturating from K = COUNT_SATURATED on) the pairs that share a value;
 * lists each value whose chain grew too long for pairwise work in long_chains and returns how many. */
static size_t fill_and_mark(const value_table *table, const result_set *set, size_t n, size_t max_depth,
                            uint64_t *matrix, uint8_t *counts, int saturate, uint32_t *long_chains, uint32_t *repeats)
{
    if (table->wide)
        return fill_and_mark_wide(table, set, n, max_depth, matrix, counts, saturate, long_chains, repeats);
    return fill_and_mark_narrow(table, set, n, max_depth, matrix, counts, saturate, long_chains, repeats);
}

/* Marks every pair with a nonzero count as a candidate: sixteen counts at a time where SSE2 is there. The
 * count rows are padded (allocate), so a row's last block may read past it (into the diagonal and the next
 * row); those bits are dropped. */
static void mark_counted_pairs(const uint8_t *counts, size_t n, uint64_t *matrix)
{
    for (size_t j = 1; j < n; j++) {
        const uint8_t *row = counts + count_index(j, 0);
        uint64_t *matrix_row = matrix + row_offset(j);
        for (size_t w = 0; w <= (j - 1) >> 6; w++) {
            uint64_t word = 0;
#if defined(__SSE2__)
            const __m128i zero = _mm_setzero_si128();
            for (size_t b = 0; b < 4 && 64 * w + 16 * b < j; b++) {
                __m128i block = _mm_loadu_si128((const __m128i *)(row + 64 * w + 16 * b));
                uint64_t nonzero = (uint64_t)(~_mm_movemask_epi8(_mm_cmpeq_epi8(block, zero)) & 0xFFFF);
                word |= nonzero << (16 * b);
            }
#else
            for (size_t i = 64 * w; i < j && i < 64 * (w + 1); i++)
                word |= (uint64_t)(row[i] != 0) << (i & 63);
#endif
            if (j < 64 * (w + 1))
                word &= ((uint64_t)1 << (j & 63)) - 1;
            matrix_row[w] |= word;
        }
    }
}

/* Marks every pair of a long chain, as a candidate and as not counted, by OR-ing the bitset of its sketches
 * into each one's row: m × n/64 words instead of m²/2 single bits, so many sketches sharing one value stay
 * cheap. Each chain is found again from the home slot of one of its occurrences (its pairs of different
 * values are marked too: they are merged, which is exact). */
static void mark_long_chains(const value_table *table, const uint32_t *long_chains, size_t n_long,
                             uint64_t *matrix, uint64_t *uncounted, uint64_t *members)
{
    int wide = table->wide;
    for (size_t c = 0; c < n_long; c++) {
        uint64_t at = home_slot(hash_multiplier, table->values[long_chains[c] - 1], table->bits);
        uint32_t head = get(table->slots, at, wide);
        for (uint32_t o = head; o; o = get(table->previous, o, wide)) {
            size_t i = get(table->owner, o, wide);
            members[i >> 6] |= (uint64_t)1 << (i & 63);
        }
        for (uint32_t o = head; o; o = get(table->previous, o, wide)) {
            size_t row = get(table->owner, o, wide), row_start = row_offset(row);
            for (size_t w = 0; w <= row >> 6; w++) {
                matrix[row_start + w] |= members[w];
                uncounted[row_start + w] |= members[w];
            }
        }
        for (uint32_t o = head; o; o = get(table->previous, o, wide))
            members[get(table->owner, o, wide) >> 6] = 0;
    }
}

/* Bits of row j's word w that stand for earlier results (the OR path may also set j and later ones). */
static uint64_t earlier(const uint64_t *matrix, size_t j, size_t w)
{
    uint64_t word = matrix[row_offset(j) + w];
    if (w == j >> 6)
        word &= ((uint64_t)1 << (j & 63)) - 1;
    return word;
}

/* ---- groupings ---- */

/* reference.dedup's greedy loop: j's candidates that are kept, in rank order; the first duplicate wins. */
static void group_greedy(const result_set *set, const uint64_t *matrix, uint64_t *kept, size_t n,
                         int32_t *duplicate_of, int32_t *group, double *similarity)
{
    for (size_t j = 0; j < n; j++) {
        duplicate_of[j] = -1;
        for (size_t w = 0; w <= j >> 6 && duplicate_of[j] < 0; w++) {
            uint64_t bits = earlier(matrix, j, w) & kept[w];
            while (bits) {
                size_t i = (w << 6) + LOWEST_BIT(bits);
                bits &= bits - 1;
                if (is_duplicate(set, i, j, &similarity[j])) {
                    duplicate_of[j] = (int32_t)i;
                    break;
                }
            }
        }
        if (duplicate_of[j] < 0)
            kept[j >> 6] |= (uint64_t)1 << (j & 63);
        group[j] = duplicate_of[j] < 0 ? (int32_t)j : duplicate_of[j];
    }
}

/* reference.dedup's complete grouping: j joins the first group, in rank order of the kept results, of which it
 * duplicates every member (members are chained through next_member, -1 ending a chain); a group's members
 * all share a value with j, so the candidate matrix rules most groups out before any merge. */
static void group_complete(const result_set *set, const uint64_t *matrix, uint64_t *kept, int32_t *next_member,
                           size_t n, int32_t *duplicate_of, int32_t *group, double *similarity)
{
    for (size_t j = 0; j < n; j++) {
        duplicate_of[j] = -1;
        next_member[j] = -1;
        for (size_t w = 0; w <= j >> 6 && duplicate_of[j] < 0; w++) {
            uint64_t bits = earlier(matrix, j, w) & kept[w];
            while (bits) {
                size_t head = (w << 6) + LOWEST_BIT(bits);
                bits &= bits - 1;
                int32_t member = (int32_t)head, last = member;
                while (member >= 0 && marked(matrix, j, (size_t)member) &&
                       is_duplicate(set, (size_t)member, j, NULL)) {
                    last = member;
                    member = next_member[member];
                }
                if (member < 0) {
                    next_member[last] = (int32_t)j;
                    duplicate_of[j] = (int32_t)head;
                    similarity[j] = pair_similarity(set, head, j);
                    break;
                }
            }
        }
        if (duplicate_of[j] < 0)
            kept[j >> 6] |= (uint64_t)1 << (j & 63);
        group[j] = duplicate_of[j] < 0 ? (int32_t)j : duplicate_of[j];
    }
}

static int32_t find_root(int32_t *parent, int32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Union-find keeps each component's smallest position as its root, as the reference does; a pair already
 * in one component cannot change the answer, so it is not merged. */
static void group_components(const result_set *set, const uint64_t *matrix, int32_t *parent, size_t n,
                             int32_t *duplicate_of, int32_t *group, double *similarity)
{
    for (size_t j = 0; j < n; j++)
        parent[j] = (int32_t)j;
    for (size_t j = 0; j < n; j++) {
        int32_t root_j = (int32_t)j; /* only j's own unions below move it */
        for (size_t w = 0; w <= j >> 6; w++) {
            uint64_t bits = earlier(matrix, j, w);
            while (bits) {
                int32_t i = (int32_t)((w << 6) + LOWEST_BIT(bits));
                bits &= bits - 1;
                int32_t root_i = find_root(parent, i);
                if (root_i != root_j && is_duplicate(set, (size_t)i, j, NULL)) {
                    if (root_i < root_j) {
                        parent[root_j] = root_i;
                        root_j = root_i;
                    } else {
                        parent[root_i] = root_j;
                    }
                }
            }
        }
    }
    for (size_t j = 0; j < n; j++) {
        group[j] = find_root(parent, (int32_t)j);
        duplicate_of[j] = group[j] == (int32_t)j ? -1 : group[j];
        if (duplicate_of[j] >= 0)
            similarity[j] = pair_similarity(set, (size_t)group[j], j);
    }
}

/* ---- Python glue ---- */

/* Occurrences first..first + count - 1 belong to sketch s (loops the compiler vectorizes). */
static void fill_owner_narrow(uint16_t *owner, size_t first, size_t count, uint16_t s)
{
    for (size_t o = first; o < first + count; o++)
        owner[o] = s;
}

static void fill_owner_wide(uint32_t *owner, size_t first, size_t count, uint32_t s)
{
    for (size_t o = first; o < first + count; o++)
        owner[o] = s;
}

/* The number of values of one sketch, or -1 with TypeError/ValueError set. */
static Py_ssize_t sketch_length(PyObject *sketch, Py_ssize_t k, Py_ssize_t position)
{
    if (!PyBytes_Check(sketch)) {
        PyErr_Format(PyExc_TypeError, "sketch %zd must be bytes or None, not %.100s", position,
                     Py_TYPE(sketch)->tp_name);
        return -1;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(sketch);
    if (size % 4) {
        PyErr_Format(PyExc_ValueError,
                     "sketch %zd is %zd bytes long, not a multiple of 4 (little-endian uint32 values)",
                     position, size);
        return -1;
    }
    if (size / 4 > k) {
        PyErr_Format(PyExc_ValueError, "sketch %zd has %zd values, more than K=%zd", position, size / 4, k);
        return -1;
    }
    return size / 4;
}

static int check_parameters(Py_ssize_t k, double threshold, int metric)
{
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "k must be at least 1, got %zd", k);
        return -1;
    }
    if (!isfinite(threshold)) {
        PyErr_SetString(PyExc_ValueError, "threshold must be a finite number");
        return -1;
    }
    if (!KNOWN_METRIC(metric)) {
        PyErr_Format(PyExc_ValueError, "unknown metric code %d", metric);
        return -1;
    }
    return 0;
}

/* Everything one call needs beyond the input, carved from one arena block (see arena_take). */
typedef struct {
    uint32_t *values, *start, *long_chains;
    uint64_t *cap, *matrix, *uncounted, *bitset, *fingerprints, *present;
    uint8_t *counts;
    void *slots, *previous, *owner;
    uint16_t *depth;
    uint32_t *repeats;
    int32_t *parent, *duplicate_of, *group;
    double *similarity;
    char *block;
    size_t size;
    size_t zeroed_from, zeroed_bytes; /* the run of buffers that must start zeroed (clear_zeroed) */
} buffers;

/* The chosen grouping of a set whose candidate matrix is marked, into b's answer arrays. */
static void group(const result_set *set, buffers *b, size_t n, int grouping)
{
    if (grouping == GREEDY)
        group_greedy(set, b->matrix, b->bitset, n, b->duplicate_of, b->group, b->similarity);
    else if (grouping == COMPLETE)
        group_complete(set, b->matrix, b->bitset, b->parent, n, b->duplicate_of, b->group, b->similarity);
    else
        group_components(set, b->matrix, b->parent, n, b->duplicate_of, b->group, b->similarity);
}

/* ---- the GIL ----
 * A call does its work without the GIL only when the work is large: in a busy server every give-up is a hand-off
 * between threads (the waiting thread woken, then this one woken again to take the GIL back), which costs the
 * worker more CPU than a result set's work (benchmarks/request_cost.py measures server CPU per Dedup). Below
 * this many values (or pairs, or fingerprints) the work is short next to the interpreter's switch interval. */
#define HOLD_GIL_MAX_WORK ((size_t)1 << 16)

/* Gives the GIL up for `work` units of work past HOLD_GIL_MAX_WORK: the thread state to take it back with
 * (take_gil_back), or NULL when it is kept. */
static PyThreadState *release_gil_for(size_t work)
{
    return work < HOLD_GIL_MAX_WORK ? NULL : PyEval_SaveThread();
}

static void take_gil_back(PyThreadState *released)
{
    if (released)
        PyEval_RestoreThread(released);
}

/* ---- arenas ----
 * A call's buffers come from an arena block that is kept for the next call: a block allocated and freed per
 * call costs a page fault per 4 KB page touched (glibc returns a large block's pages to the system on free),
 * which was most of a 100-result set's time. Blocks are taken from and given back to a small pool while the GIL
 * is held, so threads running the kernel at once (large sets release the GIL) each work in their own block. */
#define ARENA_POOL_SIZE 4
/* Blocks larger than this are freed after their call rather than kept. */
#define ARENA_KEEP_MAX_BYTES ((size_t)8 << 20)

#ifdef Py_GIL_DISABLED
/* No GIL to guard the pool: every call allocates its own block. */
#define ARENA_POOLED 0
#else
#define ARENA_POOLED 1
#endif

static struct {
    char *block;
    size_t size;
} arena_pool[ARENA_POOL_SIZE];
static int arena_pool_count;

/* A block of at least `size` bytes into b (the GIL held); 0, or -1 with MemoryError set. */
static int arena_take(buffers *b, size_t size)
{
    b->block = NULL;
    b->size = 0;
    if (ARENA_POOLED && arena_pool_count > 0) {
        arena_pool_count--;
        b->block = arena_pool[arena_pool_count].block;
        b->size = arena_pool[arena_pool_count].size;
    }
    if (b->size < size) {
        PyMem_RawFree(b->block);
        b->block = PyMem_RawMalloc(size);
        b->size = b->block ? size : 0;
        if (!b->block) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* Gives b's block back to the pool, or frees it (the GIL held). */
static void arena_give_back(buffers *b)
{
    if (ARENA_POOLED && b->block && b->size <= ARENA_KEEP_MAX_BYTES && arena_pool_count < ARENA_POOL_SIZE) {
        arena_pool[arena_pool_count].block = b->block;
        arena_pool[arena_pool_count].size = b->size;
        arena_pool_count++;
    } else {
        PyMem_RawFree(b->block);
    }
    b->block = NULL;
    b->size = 0;
}

/* Hands out `count` items of `size` bytes from a block at *used, 64-byte aligned; with block NULL it only counts. */
static void *carve(char *block, size_t *used, size_t count, size_t size)
{
    void *at = block ? block + *used : NULL;
    *used += (count * size + 63) & ~(size_t)63;
    return at;
}

/* A serving process's sketches lie apart in its heap, and the rest of the request has pushed them out of the
 * cache: copying them in, each would be a run of misses that follow one another. They are prefetched this many
 * sketches ahead of the copy (4 beat 8, and beat prefetching every sketch's header first, in a live server). */
#define PREFETCH_SKETCHES_AHEAD 4

static void prefetch_sketch(PyObject *sketch)
{
    if (sketch == Py_None)
        return;
    const char *data = PyBytes_AS_STRING(sketch);
    for (Py_ssize_t at = 0; at < PyBytes_GET_SIZE(sketch); at += 64)
        PREFETCH_READ(data + at);
}

/* Returns 0, or -1 with MemoryError set. A SimHash set (fingerprints) needs no value table. The buffers that
 * must start zeroed are carved last, as one run that clear_zeroed clears (without the GIL, where it can). */
static int allocate(buffers *b, size_t n, size_t total, size_t slot_bytes, size_t record_bytes, int counted,
                    int fingerprints)
{
    char *block = NULL;
    size_t used, zeroed_from;
    for (int pass = 0; pass < 2; pass++) {
        used = 0;
        /* one spare value in front: values[-1] */
        b->values = carve(block, &used, total + 2, sizeof *b->values);
        if (b->values)
            b->values = b->values + 1;
        b->start = carve(block, &used, n + 1, sizeof *b->start);
        /* a chain is listed once, when it outgrows MAX_PAIRWISE_DEPTH */
        b->long_chains = carve(block, &used, total / (MAX_PAIRWISE_DEPTH(n) + 1) + 1, sizeof *b->long_chains);
        b->cap = carve(block, &used, n + 1, sizeof *b->cap);
        /* occurrences are numbered from 1: entry 0 stands for none */
        b->previous = carve(block, &used, total + 1, record_bytes);
        b->owner = carve(block, &used, total + 1, record_bytes);
        b->depth = carve(block, &used, total + 1, sizeof *b->depth);
        b->repeats = carve(block, &used, total + 1, sizeof *b->repeats);
        b->parent = carve(block, &used, n + 1, sizeof *b->parent);
        b->duplicate_of = carve(block, &used, n + 1, sizeof *b->duplicate_of);
        b->group = carve(block, &used, n + 1, sizeof *b->group);
        b->similarity = carve(block, &used, n + 1, sizeof *b->similarity);
        b->fingerprints = fingerprints ? carve(block, &used, n + 1, sizeof *b->fingerprints) : NULL;
        zeroed_from = used;
        b->slots = carve(block, &used, slot_bytes, 1);
        b->matrix = carve(block, &used, row_offset(n) + 1, sizeof *b->matrix);
        b->uncounted = carve(block, &used, fingerprints ? 1 : row_offset(n) + 1, sizeof *b->uncounted);
        /* padded for mark_counted_pairs' blocks of 16 */
        b->counts = counted ? carve(block, &used, count_index(n, 0) + 16, sizeof *b->counts) : NULL;
        b->bitset = carve(block, &used, n / 64 + 1, sizeof *b->bitset);
        b->present = fingerprints ? carve(block, &used, n / 64 + 1, sizeof *b->present) : NULL;
        if (pass == 0) {
            if (arena_take(b, used) < 0)
                return -1;
            block = b->block;
        }
    }
    b->zeroed_from = zeroed_from;
    b->zeroed_bytes = used - zeroed_from;
    return 0;
}

static void clear_zeroed(buffers *b)
{
    memset(b->block + b->zeroed_from, 0, b->zeroed_bytes);
}

/* (duplicate_of, similarity, group) as three lists; kept results share one 0.0 object. */
static PyObject *build_lists(const buffers *b, size_t n)
{
    PyObject *zero = PyFloat_FromDouble(0.0), *result = PyTuple_New(3);
    if (!zero || !result)
        goto fail;
    PyObject *duplicate_of = PyList_New((Py_ssize_t)n), *similarity = PyList_New((Py_ssize_t)n),
             *group = PyList_New((Py_ssize_t)n);
    PyTuple_SET_ITEM(result, 0, duplicate_of);
    PyTuple_SET_ITEM(result, 1, similarity);
    PyTuple_SET_ITEM(result, 2, group);
    if (!duplicate_of || !similarity || !group)
        goto fail;
    for (size_t j = 0; j < n; j++) {
        PyObject *dup = PyLong_FromLong(b->duplicate_of[j]), *grp = PyLong_FromLong(b->group[j]), *sim;
        if (b->duplicate_of[j] < 0) {
            Py_INCREF(zero);
            sim = zero;
        } else {
            sim = PyFloat_FromDouble(b->similarity[j]);
        }
        PyList_SET_ITEM(duplicate_of, (Py_ssize_t)j, dup);
        PyList_SET_ITEM(group, (Py_ssize_t)j, grp);
        PyList_SET_ITEM(similarity, (Py_ssize_t)j, sim);
        if (!dup || !grp || !sim)
            goto fail;
    }
    Py_DECREF(zero);
    return result;
fail:
    Py_XDECREF(zero);
    Py_XDECREF(result);
    return NULL;
}

/* The same answer as one bytes object, in native byte order: int32 duplicate_of[n], int32 group[n], then
 * double similarity[n]. The request path hands it to the
 * compiled response encoder without making 3n Python objects (kernel.unpack reads it back). */
static PyObject *build_packed(const buffers *b, size_t n)
{
    PyObject *packed = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * (2 * sizeof(int32_t) + sizeof(double))));
    if (!packed)
        return NULL;
    char *at = PyBytes_AS_STRING(packed);
    memcpy(at, b->duplicate_of, n * sizeof(int32_t));
    memcpy(at + n * sizeof(int32_t), b->group, n * sizeof(int32_t));
    double *similarity = (double *)(at + 2 * n * sizeof(int32_t));
    for (size_t j = 0; j < n; j++) /* a kept result's similarity is 0, whatever the grouping left there */
        memcpy(similarity + j, b->duplicate_of[j] < 0 ? &(double){0.0} : &b->similarity[j], sizeof(double));
    return packed;
}

static PyObject *build_result(const buffers *b, size_t n, int packed)
{
    return packed ? build_packed(b, n) : build_lists(b, n);
}

PyDoc_STRVAR(dedup_doc,
             "dedup(sketches, k, threshold, metric_code, grouping_code[, wide[, packed[, table_bits]]]) -> (duplicate_of, similarity, group)\n\n"
             "reference.dedup on bytes sketches (None for a result without one); use kernel.dedup. wide=1 makes\n"
             "the value table use four-byte slots whatever the set's size (for tests: sets of 65,535 values and\n"
             "more use them anyway). packed=1 returns the answer as one bytes object (kernel.unpack).\n"
             "table_bits=1..20 gives the value table 2**table_bits slots whatever the set's size (for tests: a tiny\n"
             "table chains many values together); 0 sizes it by the set.");

static PyObject *kernel_dedup(PyObject *module, PyObject *args)
{
    PyObject *sequence;
    Py_ssize_t k;
    double threshold;
    int metric, grouping, force_wide = 0, packed = 0, table_bits = 0;
    if (!PyArg_ParseTuple(args, "Ondii|ppi:dedup", &sequence, &k, &threshold, &metric, &grouping, &force_wide,
                          &packed, &table_bits))
        return NULL;
    if (table_bits < 0 || table_bits > 20) {
        PyErr_Format(PyExc_ValueError, "table_bits must be in 0..20, got %d", table_bits);
        return NULL;
    }
    if (check_parameters(k, threshold, metric) < 0)
        return NULL;
    if (grouping != GREEDY && grouping != COMPONENTS && grouping != COMPLETE) {
        PyErr_Format(PyExc_ValueError, "unknown grouping code %d", grouping);
        return NULL;
    }
    /* A tuple holds every bytes object while the GIL is released, whatever happens to the caller's list. */
    PyObject *sketches = PySequence_Tuple(sequence);
    if (!sketches)
        return NULL;
    size_t n = (size_t)PyTuple_GET_SIZE(sketches), total = 0;
    buffers b = {0};
    PyObject *result = NULL;
    if ((Py_ssize_t)n > MAX_RESULTS) {
        PyErr_Format(PyExc_ValueError, "result set has %zd results, more than %zd", (Py_ssize_t)n, MAX_RESULTS);
        goto done;
    }

    for (size_t s = 0; s < n; s++) {
        PyObject *sketch = PyTuple_GET_ITEM(sketches, s);
        Py_ssize_t length = sketch == Py_None ? 0 : sketch_length(sketch, k, (Py_ssize_t)s);
        if (length < 0)
            goto done;
        if ((Py_ssize_t)(total + length) > MAX_TOTAL_VALUES) {
            PyErr_Format(PyExc_ValueError, "result set holds more than %zd sketch values", MAX_TOTAL_VALUES);
            goto done;
        }
        total += (size_t)length;
    }
    int bits = 1;
    while (((size_t)1 << bits) < TABLE_SLOTS_PER_VALUE * total)
        bits++;
    if (table_bits)
        bits = table_bits;
    int counted = n <= COUNTED_MAX_RESULTS;
    int wide = force_wide || total >= NARROW_MAX_VALUES || n >= NARROW_MAX_VALUES;
    size_t record_bytes = wide ? 4 : 2;
    if (allocate(&b, n, total, record_bytes << bits, record_bytes, counted, 0) < 0)
        goto done;

    PyThreadState *released = release_gil_for(total);
    clear_zeroed(&b);
    b.start[0] = 0;
    for (size_t s = 0; s < n && s < PREFETCH_SKETCHES_AHEAD; s++)
        prefetch_sketch(PyTuple_GET_ITEM(sketches, s));
    for (size_t s = 0; s < n; s++) {
        PyObject *sketch = PyTuple_GET_ITEM(sketches, s);
        if (s + PREFETCH_SKETCHES_AHEAD < n)
            prefetch_sketch(PyTuple_GET_ITEM(sketches, s + PREFETCH_SKETCHES_AHEAD));
        size_t length = sketch == Py_None ? 0 : (size_t)PyBytes_GET_SIZE(sketch) / 4;
        if (length)
            decode_values(b.values + b.start[s], PyBytes_AS_STRING(sketch), length);
        if (wide)
            fill_owner_wide(b.owner, b.start[s] + 1, length, (uint32_t)s);
        else
            fill_owner_narrow(b.owner, b.start[s] + 1, length, (uint16_t)s);
        b.start[s + 1] = b.start[s] + (uint32_t)length;
        b.cap[s] = length && length >= (size_t)k ? b.values[b.start[s] + length - 1] : UNCAPPED;
    }
    result_set set = {b.values, b.start, b.cap, metric, threshold, b.counts, b.uncounted, NULL, 0, NULL};
    put(b.previous, 0, 0, wide);
    value_table table = {b.slots, b.previous, b.owner, b.depth, wide, bits, b.values};
    size_t n_long = fill_and_mark(&table, &set, n, MAX_PAIRWISE_DEPTH(n), b.matrix, b.counts,
                                  k >= COUNT_SATURATED, b.long_chains, b.repeats);
    if (b.counts)
        mark_counted_pairs(b.counts, n, b.matrix);
    mark_long_chains(&table, b.long_chains, n_long, b.matrix, b.uncounted, b.bitset);
    group(&set, &b, n, grouping);
    take_gil_back(released);

    result = build_result(&b, n, packed);
done:
    arena_give_back(&b);
    Py_DECREF(sketches);
    return result;
}

/* Two sketches a, b as a result set of two in `values` (room for both); sets start and cap. */
static result_set pair_set(uint32_t *values, uint32_t start[3], uint64_t cap[2], PyObject *a, size_t len_a,
                           PyObject *b, size_t len_b, Py_ssize_t k, int metric, double threshold)
{
    decode_values(values, PyBytes_AS_STRING(a), len_a);
    decode_values(values + len_a, PyBytes_AS_STRING(b), len_b);
    start[0] = 0;
    start[1] = (uint32_t)len_a;
    start[2] = (uint32_t)(len_a + len_b);
    cap[0] = len_a && len_a >= (size_t)k ? values[len_a - 1] : UNCAPPED;
    cap[1] = len_b && len_b >= (size_t)k ? values[len_a + len_b - 1] : UNCAPPED;
    result_set set = {values, start, cap, metric, threshold, NULL, NULL, NULL, 0, NULL};
    return set;
}

PyDoc_STRVAR(similarity_doc, "similarity(a, b, k, metric_code) -> float\n\n"
                             "reference.similarity on two bytes sketches; use kernel.similarity.");

static PyObject *kernel_similarity(PyObject *module, PyObject *args)
{
    PyObject *a, *b;
    Py_ssize_t k;
    int metric;
    if (!PyArg_ParseTuple(args, "OOni:similarity", &a, &b, &k, &metric))
        return NULL;
    if (check_parameters(k, 0.0, metric) < 0)
        return NULL;
    Py_ssize_t len_a = sketch_length(a, k, 0), len_b = len_a < 0 ? -1 : sketch_length(b, k, 1);
    if (len_b < 0)
        return NULL;
    uint32_t *values = PyMem_RawMalloc(((size_t)(len_a + len_b) + 1) * sizeof *values);
    if (!values)
        return PyErr_NoMemory();
    uint32_t start[3];
    uint64_t cap[2];
    result_set set = pair_set(values, start, cap, a, (size_t)len_a, b, (size_t)len_b, k, metric, 0.0);
    double value = pair_similarity(&set, 0, 1);
    PyMem_RawFree(values);
    return PyFloat_FromDouble(value);
}

PyDoc_STRVAR(similar_doc, "similar(query, sketches, k, threshold, metric_code) -> [(position, similarity)]\n\n"
                          "The sketches that reach the threshold with the query, by merges that stop as soon as\n"
                          "the threshold can no longer be reached; use kernel.similar.");

static PyObject *kernel_similar(PyObject *module, PyObject *args)
{
    PyObject *query, *sequence;
    Py_ssize_t k;
    double threshold;
    int metric;
    if (!PyArg_ParseTuple(args, "SOndi:similar", &query, &sequence, &k, &threshold, &metric))
        return NULL;
    if (check_parameters(k, threshold, metric) < 0)
        return NULL;
    Py_ssize_t len_query = sketch_length(query, k, -1);
    if (len_query < 0)
        return NULL;
    PyObject *sketches = PySequence_Fast(sequence, "sketches must be a sequence of bytes");
    if (!sketches)
        return NULL;
    PyObject *matches = PyList_New(0);
    uint32_t *values = PyMem_RawMalloc(((size_t)(len_query + k) + 1) * sizeof *values);
    if (!matches || !values) {
        if (!values)
            PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t s = 0; s < PySequence_Fast_GET_SIZE(sketches); s++) {
        PyObject *sketch = PySequence_Fast_GET_ITEM(sketches, s);
        Py_ssize_t length = sketch_length(sketch, k, s);
        if (length < 0)
            goto fail;
        uint32_t start[3];
        uint64_t cap[2];
        result_set set = pair_set(values, start, cap, query, (size_t)len_query, sketch, (size_t)length, k,
                                  metric, threshold);
        double similarity;
        if (!is_duplicate(&set, 0, 1, &similarity))
            continue;
        PyObject *match = Py_BuildValue("(nd)", s, similarity);
        if (!match || PyList_Append(matches, match) < 0) {
            Py_XDECREF(match);
            goto fail;
        }
        Py_DECREF(match);
    }
    PyMem_RawFree(values);
    Py_DECREF(sketches);
    return matches;
fail:
    PyMem_RawFree(values);
    Py_XDECREF(matches);
    Py_DECREF(sketches);
    return NULL;
}

/* ---- SimHash result sets ---- */

/* The fingerprint of one SimHash sketch: 1 (present, stored in *fingerprint), 0 (None or empty: a result
 * without a sketch; *fingerprint is then 0) or -1 with TypeError/ValueError set. */
static int simhash_fingerprint(PyObject *sketch, Py_ssize_t position, uint64_t *fingerprint)
{
    *fingerprint = 0;
    if (sketch == Py_None)
        return 0;
    if (!PyBytes_Check(sketch)) {
        PyErr_Format(PyExc_TypeError, "sketch %zd must be bytes or None, not %.100s", position,
                     Py_TYPE(sketch)->tp_name);
        return -1;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(sketch);
    if (size == 0)
        return 0;
    if (size != 8) {
        PyErr_Format(PyExc_ValueError,
                     "sketch %zd is %zd bytes long; a SimHash sketch is 8 (a little-endian uint64) or empty",
                     position, size);
        return -1;
    }
    const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(sketch);
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--)
        value = value << 8 | bytes[i];
    *fingerprint = value;
    return 1;
}

static int check_max_distance(int max_distance)
{
    if (max_distance < -1 || max_distance > 64) {
        PyErr_Format(PyExc_ValueError, "max_distance must be in -1..64, got %d", max_distance);
        return -1;
    }
    return 0;
}

/* Marks every pair of present fingerprints within max_distance: one popcount per pair, without branches (the
 * outcomes are unpredictable), rows packed as for the bottom-K matrix, so the groupings read it unchanged. */
static void mark_simhash_pairs(const uint64_t *fingerprints, const uint64_t *present, size_t n, int max_distance,
                               uint64_t *matrix)
{
    for (size_t j = 1; j < n; j++) {
        if (!((present[j >> 6] >> (j & 63)) & 1))
            continue;
        uint64_t fingerprint = fingerprints[j];
        size_t row_start = row_offset(j);
        for (size_t w = 0; w <= j >> 6; w++) {
            const uint64_t *block = fingerprints + (w << 6);
            size_t count = w == j >> 6 ? (j & 63) : 64;
            uint64_t word = 0;
            for (size_t bit = 0; bit < count; bit++)
                word |= (uint64_t)(POPCOUNT(fingerprint ^ block[bit]) <= max_distance) << bit;
            matrix[row_start + w] = word & present[w];
        }
    }
}

PyDoc_STRVAR(dedup_simhash_doc,
             "dedup_simhash(sketches, max_distance, grouping_code[, packed]) -> (duplicate_of, similarity, group)\n\n"
             "reference.dedup_simhash on 8-byte SimHash sketches (None or b'' for a result without one), a pair\n"
             "being a duplicate when its Hamming distance is at most max_distance; use kernel.dedup_simhash. packed=1\n"
             "returns the answer as one bytes object (kernel.unpack).");

static PyObject *kernel_dedup_simhash(PyObject *module, PyObject *args)
{
    PyObject *sequence;
    int max_distance, grouping, packed = 0;
    if (!PyArg_ParseTuple(args, "Oii|p:dedup_simhash", &sequence, &max_distance, &grouping, &packed))
        return NULL;
    if (check_max_distance(max_distance) < 0)
        return NULL;
    if (grouping != GREEDY && grouping != COMPONENTS && grouping != COMPLETE) {
        PyErr_Format(PyExc_ValueError, "unknown grouping code %d", grouping);
        return NULL;
    }
    PyObject *sketches = PySequence_Tuple(sequence);
    if (!sketches)
        return NULL;
    size_t n = (size_t)PyTuple_GET_SIZE(sketches);
    buffers b = {0};
    PyObject *result = NULL;
    if ((Py_ssize_t)n > MAX_RESULTS) {
        PyErr_Format(PyExc_ValueError, "result set has %zd results, more than %zd", (Py_ssize_t)n, MAX_RESULTS);
        goto done;
    }
    if (allocate(&b, n, 0, 1, 1, 0, 1) < 0)
        goto done;
    clear_zeroed(&b);
    uint64_t *present = b.present;
    for (size_t s = 0; s < n; s++) {
        int found = simhash_fingerprint(PyTuple_GET_ITEM(sketches, s), (Py_ssize_t)s, &b.fingerprints[s]);
        if (found < 0)
            goto done;
        if (found)
            present[s >> 6] |= (uint64_t)1 << (s & 63);
    }

    PyThreadState *released = release_gil_for(n * (n - 1) / 2);
    result_set set = {NULL, NULL, NULL, 0, 0.0, NULL, NULL, b.fingerprints, max_distance, NULL};
    mark_simhash_pairs(b.fingerprints, present, n, max_distance, b.matrix);
    group(&set, &b, n, grouping);
    take_gil_back(released);

    result = build_result(&b, n, packed);
done:
    arena_give_back(&b);
    Py_DECREF(sketches);
    return result;
}

PyDoc_STRVAR(similar_simhash_doc,
             "similar_simhash(query, sketches, max_distance) -> [(position, similarity)]\n\n"
             "The SimHash sketches within max_distance of the query's, in input order; use kernel.similar_simhash.");

static PyObject *kernel_similar_simhash(PyObject *module, PyObject *args)
{
    PyObject *query, *sequence;
    int max_distance;
    if (!PyArg_ParseTuple(args, "SOi:similar_simhash", &query, &sequence, &max_distance))
        return NULL;
    if (check_max_distance(max_distance) < 0)
        return NULL;
    uint64_t query_fingerprint = 0;
    int query_found = simhash_fingerprint(query, -1, &query_fingerprint);
    if (query_found < 0)
        return NULL;
    PyObject *sketches = PySequence_Fast(sequence, "sketches must be a sequence of bytes");
    if (!sketches)
        return NULL;
    PyObject *matches = PyList_New(0);
    if (!matches)
        goto fail;
    for (Py_ssize_t s = 0; s < PySequence_Fast_GET_SIZE(sketches); s++) {
        PyObject *sketch = PySequence_Fast_GET_ITEM(sketches, s);
        uint64_t fingerprint;
        if (sketch == Py_None) {
            PyErr_Format(PyExc_TypeError, "sketch %zd must be bytes, not None", s);
            goto fail;
        }
        int found = simhash_fingerprint(sketch, s, &fingerprint);
        if (found < 0)
            goto fail;
        if (!query_found || !found)
            continue;
        int distance = POPCOUNT(query_fingerprint ^ fingerprint);
        if (distance > max_distance)
            continue;
        PyObject *match = Py_BuildValue("(nd)", s, hamming_similarity(distance));
        if (!match || PyList_Append(matches, match) < 0) {
            Py_XDECREF(match);
            goto fail;
        }
        Py_DECREF(match);
    }
    Py_DECREF(sketches);
    return matches;
fail:
    Py_XDECREF(matches);
    Py_DECREF(sketches);
    return NULL;
}

/* ---- scored result sets ---- */

PyDoc_STRVAR(group_scores_doc,
             "group_scores(scores, n, threshold, grouping_code[, packed]) -> (duplicate_of, similarity, group)\n\n"
             "The three groupings of n results whose pair scores are given: scores holds native float64 values of\n"
             "the pairs i < j at j * (j - 1) / 2 + i, NaN for a pair that is no candidate; a pair is a duplicate when\n"
             "its score reaches the threshold (items with fields: core/item_scoring.py). packed as for dedup.");

static PyObject *kernel_group_scores(PyObject *module, PyObject *args)
{
    Py_buffer scores;
    Py_ssize_t n;
    double threshold;
    int grouping, packed = 0;
    if (!PyArg_ParseTuple(args, "y*ndi|p:group_scores", &scores, &n, &threshold, &grouping, &packed))
        return NULL;
    buffers b = {0};
    PyObject *result = NULL;
    if (n < 0 || n > MAX_RESULTS || (size_t)scores.len != (size_t)n * (size_t)(n > 0 ? n - 1 : 0) / 2 * sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "scores must hold n * (n - 1) / 2 float64 values, n at most 2**20");
        goto done;
    }
    if (!isfinite(threshold)) {
        PyErr_SetString(PyExc_ValueError, "threshold must be a finite number");
        goto done;
    }
    if (grouping != GREEDY && grouping != COMPONENTS && grouping != COMPLETE) {
        PyErr_Format(PyExc_ValueError, "unknown grouping code %d", grouping);
        goto done;
    }
    if (allocate(&b, (size_t)n, 0, 1, 1, 0, 0) < 0)
        goto done;
    PyThreadState *released = release_gil_for((size_t)scores.len / sizeof(double));
    clear_zeroed(&b);
    const double *values = scores.buf;
    for (size_t j = 1; j < (size_t)n; j++)
        for (size_t i = 0; i < j; i++)
            if (values[pair_index(j, i)] >= threshold)
                b.matrix[row_offset(j) + (i >> 6)] |= (uint64_t)1 << (i & 63);
    result_set set = {NULL, NULL, NULL, 0, threshold, NULL, NULL, NULL, 0, values};
    group(&set, &b, (size_t)n, grouping);
    take_gil_back(released);
    result = build_result(&b, (size_t)n, packed);
done:
    arena_give_back(&b);
    PyBuffer_Release(&scores);
    return result;
}

/* The fingerprints of a buffer of little-endian uint64 within max_distance of query: how many, and (when
 * positions is not NULL) their positions and distances. Where GCC can, it compiles one copy with the CPU's
 * popcount instruction and picks it at load time when the CPU has one: the scan is one popcount per article. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("popcnt", "default")))
#endif
static size_t scan_within(const unsigned char *bytes, size_t n, uint64_t query, int max_distance,
                          uint32_t *positions, uint8_t *distances)
{
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t fingerprint;
        memcpy(&fingerprint, bytes + 8 * i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        fingerprint = __builtin_bswap64(fingerprint);
#endif
        int distance = __builtin_popcountll(fingerprint ^ query);
        if (distance <= max_distance) {
            if (positions) {
                positions[found] = (uint32_t)i;
                distances[found] = (uint8_t)distance;
            }
            found++;
        }
    }
    return found;
}

PyDoc_STRVAR(scan_simhash_doc,
             "scan_simhash(fingerprints, query, max_distance) -> (positions, distances)\n\n"
             "Every fingerprint of a buffer of little-endian uint64 within max_distance of the 8-byte query sketch:\n"
             "their positions (uint32) and distances (uint8), each as bytes, in buffer order. The exact corpus\n"
             "search of a SimHash store past what its permutation tables guarantee; use candidates.simhash_scan.");

static PyObject *kernel_scan_simhash(PyObject *module, PyObject *args)
{
    Py_buffer view;
    PyObject *query, *result = NULL;
    int max_distance;
    if (!PyArg_ParseTuple(args, "y*Si:scan_simhash", &view, &query, &max_distance))
        return NULL;
    uint64_t query_fingerprint;
    uint32_t *positions = NULL;
    uint8_t *distances = NULL;
    size_t n = (size_t)view.len / 8, found = 0;
    if (view.len % 8) {
        PyErr_Format(PyExc_ValueError, "fingerprints are %zd bytes long, not a multiple of 8", view.len);
        goto done;
    }
    if (n > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more than 2**32 fingerprints");
        goto done;
    }
    if (check_max_distance(max_distance) < 0)
        goto done;
    int query_found = simhash_fingerprint(query, -1, &query_fingerprint);
    if (query_found < 0)
        goto done;
    if (query_found) {
        PyThreadState *released = release_gil_for(n);
        found = scan_within(view.buf, n, query_fingerprint, max_distance, NULL, NULL);
        take_gil_back(released);
    }
    positions = PyMem_Malloc(found ? found * sizeof *positions : 1);
    distances = PyMem_Malloc(found ? found : 1);
    if (!positions || !distances) {
        PyErr_NoMemory();
        goto done;
    }
    if (found) {
        PyThreadState *released = release_gil_for(n);
        scan_within(view.buf, n, query_fingerprint, max_distance, positions, distances);
        take_gil_back(released);
    }
    result = Py_BuildValue("(y#y#)", (const char *)positions, (Py_ssize_t)(found * sizeof *positions),
                           (const char *)distances, (Py_ssize_t)found);
done:
    PyMem_Free(positions);
    PyMem_Free(distances);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(missing_doc, "missing(sketches) -> list of the positions that hold None\n\n"
                          "Use kernel.missing.");

static PyObject *kernel_missing(PyObject *module, PyObject *sequence)
{
    PyObject *sketches = PySequence_Fast(sequence, "sketches must be a sequence");
    if (!sketches)
        return NULL;
    PyObject *positions = PyList_New(0);
    PyObject **items = PySequence_Fast_ITEMS(sketches);
    for (Py_ssize_t s = 0; positions && s < PySequence_Fast_GET_SIZE(sketches); s++) {
        if (items[s] != Py_None)
            continue;
        PyObject *position = PyLong_FromSsize_t(s);
        if (!position || PyList_Append(positions, position) < 0)
            Py_CLEAR(positions);
        Py_XDECREF(position);
    }
    Py_DECREF(sketches);
    return positions;
}

static PyMethodDef kernel_methods[] = {
    {"missing", kernel_missing, METH_O, missing_doc},
    {"group_scores", kernel_group_scores, METH_VARARGS, group_scores_doc},
    {"dedup", kernel_dedup, METH_VARARGS, dedup_doc},
    {"similarity", kernel_similarity, METH_VARARGS, similarity_doc},
    {"similar", kernel_similar, METH_VARARGS, similar_doc},
    {"dedup_simhash", kernel_dedup_simhash, METH_VARARGS, dedup_simhash_doc},
    {"similar_simhash", kernel_similar_simhash, METH_VARARGS, similar_simhash_doc},
    {"scan_simhash", kernel_scan_simhash, METH_VARARGS, scan_simhash_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "neardup.core._kernel",
    "Compiled pair kernel of neardup: candidate pairs by shared values, early-terminating merges, grouping;\n"
    "SimHash sets by popcount.",
    -1, kernel_methods,
};

/* splitmix64: spreads a weak seed (time, addresses) over all 64 bits. */
static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

PyMODINIT_FUNC PyInit__kernel(void)
{
    PyObject *module = PyModule_Create(&kernel_module);
    if (!module)
        return NULL;
    hash_multiplier = mix((uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)module ^ (uint64_t)(uintptr_t)&module) | 1;
    if (PyModule_AddIntConstant(module, "CONTAINMENT", CONTAINMENT) < 0 ||
        PyModule_AddIntConstant(module, "JACCARD", JACCARD) < 0 ||
        PyModule_AddIntConstant(module, "MUTUAL", MUTUAL) < 0 ||
        PyModule_AddIntConstant(module, "GREEDY", GREEDY) < 0 ||
        PyModule_AddIntConstant(module, "COMPONENTS", COMPONENTS) < 0 ||
        PyModule_AddIntConstant(module, "COMPLETE", COMPLETE) < 0 ||
        PyModule_AddIntConstant(module, "MIN_EVIDENCE", MIN_EVIDENCE) < 0 ||
        PyModule_AddIntConstant(module, "COUNTED_MAX_RESULTS", COUNTED_MAX_RESULTS) < 0 ||
        PyModule_AddIntConstant(module, "HOLD_GIL_MAX_WORK", (long)HOLD_GIL_MAX_WORK) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
