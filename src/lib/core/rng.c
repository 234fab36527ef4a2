/*
 * xoshiro256++ seeding and the ziggurat tables and slow path (see pfi/rng.h for sources).
 */
#include "pfi/rng.h"

#include <math.h>
#include <pthread.h>

/* 256-layer ziggurat for the standard normal (Marsaglia & Tsang 2000, §2): the tail start r
 * and the common layer area v (of the unnormalised density f(x) = exp(−x²/2)). */
static const double ZIG_R = 3.6541528853610088;
static const double ZIG_V = 0.00492867323399;

pfi_ziggurat pfi_ziggurat_tables;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static double density(double x)
{
    return exp(-0.5 * x * x);
}

static void build_tables(void)
{
    pfi_ziggurat *z = &pfi_ziggurat_tables;
    z->x[0] = ZIG_V / density(ZIG_R);
    z->x[1] = ZIG_R;
    for (int i = 1; i < PFI_ZIGGURAT_LAYERS - 1; i++)
        z->x[i + 1] = sqrt(-2.0 * log(ZIG_V / z->x[i] + density(z->x[i])));
    z->x[PFI_ZIGGURAT_LAYERS] = 0.0;
    for (int i = 0; i <= PFI_ZIGGURAT_LAYERS; i++)
        z->f[i] = density(z->x[i]);
    /* the base strip's top is f(r), not f(x[0]) */
    z->f[0] = 0.0;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void pfi_rng_seed(pfi_rng *r, uint64_t seed, uint64_t stream)
{
    pthread_once(&tables_once, build_tables);
    uint64_t sm = seed;
    uint64_t mixed = splitmix64(&sm) ^ (stream * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
    sm = mixed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&sm);
    /* an all-zero state is the one xoshiro cannot leave; SplitMix64 never yields four zeros,
       but keep the guarantee explicit */
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
        r->s[0] = 1;
}

/* A uniform in (0, 1], safe for log(). */
static double uniform_open(pfi_rng *r)
{
    return ((double)(int64_t)(pfi_rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

double pfi_rng_normal_slow(pfi_rng *r, unsigned layer, double z, uint64_t negative)
{
    const pfi_ziggurat *t = &pfi_ziggurat_tables;
    for (;;) {
        if (layer == 0) {
            /* tail beyond r: Marsaglia (1964) */
            double a, b;
            do {
                a = -log(uniform_open(r)) / ZIG_R;
                b = -log(uniform_open(r));
            } while (b + b < a * a);
            return pfi_rng_apply_sign(ZIG_R + a, negative);
        }
        /* wedge of layer i: accept when a uniform height under the layer is under the curve */
        double y = t->f[layer] + pfi_rng_uniform(r) * (t->f[layer + 1] - t->f[layer]);
        if (y < density(z))
            return pfi_rng_apply_sign(z, negative);
        /* rejected: a fresh draw, same rules as the fast path */
        uint64_t bits = pfi_rng_next(r);
        layer = (unsigned)(bits & 0xff);
        negative = (bits >> 8) & 1;
        z = (double)(int64_t)(bits >> 11) * 0x1.0p-53 * t->x[layer];
        if (z < t->x[layer + 1])
            return pfi_rng_apply_sign(z, negative);
    }
}
