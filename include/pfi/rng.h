/*
 * pfi/rng.h — the fast normal generator behind the Monte Carlo confidence intervals.
 *
 * Normal draws are the whole cost of a PFI confidence interval (2·(K+1) per draw, 10 000
 * draws per group), so pfi draws them with a generator built for it:
 *   - uniform bits: xoshiro256++ (Blackman & Vigna, "Scrambled linear pseudorandom number
 *     generators", ACM TOMS 47(4), 2021), seeded through SplitMix64 so that any 64-bit seed
 *     and stream number give a well-mixed state;
 *   - normals: the ziggurat method (Marsaglia & Tsang, "The Ziggurat Method for Generating
 *     Random Variables", J. Stat. Softw. 5(8), 2000) with 256 layers, one 64-bit word per
 *     draw on the fast path: 8 bits choose the layer, 1 bit the sign, 53 bits the abscissa
 *     (GSL's gsl_ran_gaussian_ziggurat uses 24); Marsaglia's method for the tail beyond r.
 * The test suite checks the draws against the normal CDF (Kolmogorov–Smirnov, moments) and
 * the CIs against GSL's taus2 + gsl_ran_gaussian_ziggurat (pfi_options.rng).
 *
 * A pfi_rng is plain data: copy it, keep one per thread. Not thread-safe per instance.
 */
#ifndef PFI_RNG_H
#define PFI_RNG_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pfi_rng {
    uint64_t s[4];
} pfi_rng;

/* Layers of the ziggurat. */
#define PFI_ZIGGURAT_LAYERS 256

/*
 * pfi_ziggurat — the tables: x[i] the right edge of layer i (x[0] = v/f(r) is the base strip's
 * width, x[1] = r, x[256] = 0), f[i] = exp(−x[i]²/2). Built once, thread-safely, on first use
 * of pfi_rng_seed; read-only after.
 */
typedef struct pfi_ziggurat {
    double x[PFI_ZIGGURAT_LAYERS + 1];
    double f[PFI_ZIGGURAT_LAYERS + 1];
} pfi_ziggurat;

extern pfi_ziggurat pfi_ziggurat_tables;

/* pfi_rng_seed — state for (seed, stream): distinct streams are independent sequences. */
void pfi_rng_seed(pfi_rng *r, uint64_t seed, uint64_t stream);

/* pfi_rng_next — 64 uniform random bits (xoshiro256++). */
static inline uint64_t pfi_rng_next(pfi_rng *r)
{
    uint64_t *s = r->s;
    uint64_t x = s[0] + s[3];
    uint64_t result = ((x << 23) | (x >> 41)) + s[0];
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}

/* pfi_rng_uniform — a double in [0, 1) with 53 random bits. */
static inline double pfi_rng_uniform(pfi_rng *r)
{
    /* the signed conversion is one instruction; the value is below 2^53 either way */
    return (double)(int64_t)(pfi_rng_next(r) >> 11) * 0x1.0p-53;
}

/* z with its sign bit set when negative is 1, without a branch (the sign is a coin flip). */
static inline double pfi_rng_apply_sign(double z, uint64_t negative)
{
    uint64_t b;
    memcpy(&b, &z, sizeof b);
    b ^= negative << 63;
    memcpy(&z, &b, sizeof z);
    return z;
}

/* The rare path of pfi_rng_normal: wedges and the tail. */
double pfi_rng_normal_slow(pfi_rng *r, unsigned layer, double z, uint64_t negative);

/* pfi_rng_normal — a standard normal draw. */
static inline double pfi_rng_normal(pfi_rng *r)
{
    uint64_t bits = pfi_rng_next(r);
    unsigned layer = (unsigned)(bits & 0xff);
    uint64_t negative = (bits >> 8) & 1;
    double z = (double)(int64_t)(bits >> 11) * 0x1.0p-53 * pfi_ziggurat_tables.x[layer];
    if (__builtin_expect(z < pfi_ziggurat_tables.x[layer + 1], 1))
        return pfi_rng_apply_sign(z, negative);
    return pfi_rng_normal_slow(r, layer, z, negative);
}

#ifdef __cplusplus
}
#endif

#endif
