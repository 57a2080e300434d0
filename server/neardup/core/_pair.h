/* What the pair kernel (_kernel.c) and the in-memory search index (_search_index.c) share: one sketch pair's
 * similarity as reference.py defines it, and the early-terminating merge that decides whether a pair reaches a
 * threshold (is_duplicate). One copy, included by both extensions. */
#ifndef NEARDUP_PAIR_H
#define NEARDUP_PAIR_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { CONTAINMENT = 0, JACCARD = 1, MUTUAL = 2 };
#define KNOWN_METRIC(metric) ((metric) == CONTAINMENT || (metric) == JACCARD || (metric) == MUTUAL)

#define UNCAPPED ((uint64_t)1 << 32)
/* reference.MIN_EVIDENCE (kernel.py checks the two agree at import) */
#define MIN_EVIDENCE 16
/* A count that reached this is not trusted (the pair is merged instead). */
#define COUNT_SATURATED 255

/* Bits set in a word, inline: a compiler's builtin without -mpopcnt calls a library function, which cost more
 * than the rest of a SimHash pair's work. */
static inline int POPCOUNT(uint64_t word)
{
    word = word - ((word >> 1) & 0x5555555555555555ull);
    word = (word & 0x3333333333333333ull) + ((word >> 2) & 0x3333333333333333ull);
    word = (word + (word >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return (int)((word * 0x0101010101010101ull) >> 56);
}

/* One result set, decoded: sketch s holds values[start[s] .. start[s + 1]). */
typedef struct {
    const uint32_t *values;
    const uint32_t *start;
    const uint64_t *cap; /* last value of a full sketch (K values), UNCAPPED for a complete one */
    int metric;
    double threshold;
    const uint8_t *counts;     /* shared values per pair (pair_index), or NULL: merge every pair */
    const uint64_t *uncounted; /* triangular bit matrix of the pairs whose count is not to be trusted */
    const uint64_t *fingerprints; /* SimHash sets: one fingerprint per result (the fields above unused), else NULL */
    int max_distance;             /* SimHash sets: the largest Hamming distance of a duplicate pair */
    const double *pair_scores;    /* scored sets (group_scores): each pair's score (pair_index), NaN for none */
} result_set;

/* ---- pair matrices ---- */

/* Row j of the triangular candidate matrix holds bits i < j in (j >> 6) + 1 words; rows are packed. */
static inline size_t row_offset(size_t j)
{
    size_t q = j >> 6, r = j & 63;
    return 32 * q * (q + 1) + r * (q + 1);
}

static inline int marked(const uint64_t *matrix, size_t j, size_t i)
{
    return (matrix[row_offset(j) + (i >> 6)] >> (i & 63)) & 1;
}

/* Pair (i, j), i < j, in a triangular matrix of pair scores (group_scores' layout). */
static inline size_t pair_index(size_t j, size_t i)
{
    return j * (j - 1) / 2 + i;
}

/* Pair (i, j), i <= j, in the triangular byte matrix of counts: row j holds pairs (0..j-1, j) and a spare
 * diagonal entry (j, j) that counting writes to in place of a branch (count_at). */
static inline size_t count_index(size_t j, size_t i)
{
    return j * (j + 1) / 2 + i;
}

/* ---- similarity, as reference.py defines it ---- */

static inline size_t bisect_right(const uint32_t *a, size_t len, uint64_t x)
{
    /* Without branches on the comparisons (they are not predictable): the base moves by a conditional add. */
    if (len == 0)
        return 0;
    const uint32_t *base = a;
    while (len > 1) {
        size_t half = len / 2;
        base += (uint64_t)base[half] <= x ? half : 0;
        len -= half;
    }
    return (size_t)(base - a) + ((uint64_t)*base <= x);
}

/* reference._score: the same double division Python does for int / int below 2**53. */
static inline double score(size_t shared, size_t len_a, size_t len_b, size_t floor, int metric)
{
    if (shared == 0)
        return 0.0;
    if (metric == CONTAINMENT) {
        size_t most = len_a < len_b ? len_a : len_b;
        return (double)shared / (double)(most > floor ? most : floor);
    }
    if (metric == MUTUAL)
        return (double)shared / (double)(len_a > len_b ? len_a : len_b);
    return (double)shared / (double)(len_a + len_b - shared);
}

/* reference.hamming_similarity: (64 - distance) / 64, exact in a double. */
static inline double hamming_similarity(int distance)
{
    return (double)(64 - distance) / 64.0;
}

/* reference.min_shared, with the same double arithmetic. Thresholds outside (0, 1] are settled first:
 * at most 0 any shared value is enough (what the reference answers too wherever it is defined), above 1
 * nothing is (more than min(len_a, len_b)); so int() of the guess never overflows here. */
static inline size_t min_shared(size_t len_a, size_t len_b, size_t floor, int metric, double threshold)
{
    size_t most = len_a < len_b ? len_a : len_b;
    if (!(threshold > 0.0))
        return 1;
    if (threshold > 1.0)
        return most + 1;
    double guess_value = metric == CONTAINMENT ? threshold * (double)(most > floor ? most : floor)
                         : metric == MUTUAL    ? threshold * (double)(len_a > len_b ? len_a : len_b)
                                               : threshold * (double)(len_a + len_b) / (1.0 + threshold);
    long long guess = (long long)guess_value;
    size_t shared = guess - 1 > 1 ? (size_t)(guess - 1) : 1;
    while (shared > 1 && score(shared - 1, len_a, len_b, floor, metric) >= threshold)
        shared--;
    while (shared <= most && score(shared, len_a, len_b, floor, metric) < threshold)
        shared++;
    return shared;
}

/* reference.compared_lengths: both sketches are complete samples below tau = min(cap a, cap b); the
 * containment floor is min(MIN_EVIDENCE, |a|, |b|). The sketch whose cap is tau keeps all of its values (its
 * cap is its largest value, or it has none), so only the other one is cut. */
static inline void compared_lengths(const result_set *set, size_t a, size_t b, size_t *len_a, size_t *len_b,
                             size_t *floor)
{
    uint64_t cap_a = set->cap[a], cap_b = set->cap[b];
    const uint32_t *va = set->values + set->start[a], *vb = set->values + set->start[b];
    size_t full_a = set->start[a + 1] - set->start[a], full_b = set->start[b + 1] - set->start[b];
    *len_a = cap_a <= cap_b ? full_a : bisect_right(va, full_a, cap_b);
    *len_b = cap_b <= cap_a ? full_b : bisect_right(vb, full_b, cap_a);
    *floor = full_a < full_b ? full_a : full_b;
    if (*floor > MIN_EVIDENCE)
        *floor = MIN_EVIDENCE;
}

/* The shared values of two ascending arrays: a branchless merge (the compare results are unpredictable). */
static inline size_t count_shared(const uint32_t *va, size_t len_a, const uint32_t *vb, size_t len_b)
{
    size_t i = 0, j = 0, shared = 0;
    while (i < len_a && j < len_b) {
        uint32_t x = va[i], y = vb[j];
        shared += x == y;
        i += x <= y;
        j += y <= x;
    }
    return shared;
}

/* The counted shared values of a < b, or -1 when the pair has to be merged. */
static inline long counted_shared(const result_set *set, size_t a, size_t b)
{
    if (!set->counts || marked(set->uncounted, b, a))
        return -1;
    uint8_t count = set->counts[count_index(b, a)];
    return count == COUNT_SATURATED ? -1 : (long)count;
}

/* reference.is_duplicate for a < b: from the pair's count when it has one, else by merging, which stops as
 * soon as the answer is known. When `similarity` is given, a duplicate's merge runs on to the end instead,
 * for its exact similarity (greedy reports that very pair). */
static inline int is_duplicate(const result_set *set, size_t a, size_t b, double *similarity)
{
    if (set->pair_scores) {
        double value = set->pair_scores[pair_index(b, a)];
        if (!(value >= set->threshold))
            return 0;
        if (similarity)
            *similarity = value;
        return 1;
    }
    if (set->fingerprints) {
        int distance = POPCOUNT(set->fingerprints[a] ^ set->fingerprints[b]);
        if (distance > set->max_distance)
            return 0;
        if (similarity)
            *similarity = hamming_similarity(distance);
        return 1;
    }
    size_t len_a, len_b, floor;
    compared_lengths(set, a, b, &len_a, &len_b, &floor);
    long counted = counted_shared(set, a, b);
    if (counted >= 0) {
        /* The score grows with the shared count, so reaching min_shared's count is reaching the threshold:
         * one division instead of min_shared's search. */
        double value = score((size_t)counted, len_a, len_b, floor, set->metric);
        if (!(counted > 0 && value >= set->threshold))
            return 0;
        if (similarity)
            *similarity = value;
        return 1;
    }
    size_t needed = min_shared(len_a, len_b, floor, set->metric, set->threshold);
    const uint32_t *va = set->values + set->start[a], *vb = set->values + set->start[b];
    size_t i = 0, j = 0, shared = 0;
    while (shared < needed) {
        size_t left_a = len_a - i, left_b = len_b - j;
        if (shared + (left_a < left_b ? left_a : left_b) < needed)
            return 0;
        uint32_t x = va[i], y = vb[j];
        shared += x == y;
        i += x <= y;
        j += y <= x;
    }
    if (similarity) {
        shared += count_shared(va + i, len_a - i, vb + j, len_b - j);
        *similarity = score(shared, len_a, len_b, floor, set->metric);
    }
    return 1;
}

/* reference.similarity for a < b; the merge count equals the set intersection for ascending sketches. */
static inline double pair_similarity(const result_set *set, size_t a, size_t b)
{
    if (set->pair_scores) {
        double value = set->pair_scores[pair_index(b, a)];
        return value == value ? value : 0.0;
    }
    if (set->fingerprints)
        return hamming_similarity(POPCOUNT(set->fingerprints[a] ^ set->fingerprints[b]));
    size_t len_a, len_b, floor;
    compared_lengths(set, a, b, &len_a, &len_b, &floor);
    long counted = counted_shared(set, a, b);
    const uint32_t *va = set->values + set->start[a], *vb = set->values + set->start[b];
    size_t shared = counted >= 0 ? (size_t)counted : count_shared(va, len_a, vb, len_b);
    return score(shared, len_a, len_b, floor, set->metric);
}

/* Little-endian uint32 bytes to host integers. */
static inline void decode_values(uint32_t *out, const char *bytes, size_t count)
{
#if PY_LITTLE_ENDIAN
    memcpy(out, bytes, count * 4);
#else
    const unsigned char *b = (const unsigned char *)bytes;
    for (size_t v = 0; v < count; v++, b += 4)
        out[v] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
#endif
}

#endif
