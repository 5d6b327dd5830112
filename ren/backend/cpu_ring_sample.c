/* ren.sampling's random polynomials in C: the "cpu" device's samplers.

   Written for this project.  Included by cpu_ring.c after the Keccak code (cpu_ring_keccak.c,
   and cpu_ring_keccak_x8.c / cpu_ring_keccak_x4.c on the AVX-512 / AVX2 paths), whose types,
   REN_OMP and REN_PARALLEL_FOR it uses.

   Uniform residues.  `ren.sampling` defines a uniform RANDOM node's value: limb i is the
   rejection sample of the 32-bit little-endian words of SHAKE-128(prefix || i as 4
   little-endian bytes || seed), a word w kept when w < floor(2^32 / q) * q and giving w mod q.
   Every limb is its own stream, so the limbs' streams run side by side: KECCAK_WAYS of them in
   the lanes of one vector permutation (8 with AVX-512, 4 with AVX2, 1 scalar), and the limbs
   over REN_CPU_THREADS threads, each thread taking the next limb (a shared counter) whenever
   one of its lanes has filled its row.  A lane's words are kept or dropped as the scalar
   stream's are (branch-free while its row has room for a whole block), and a full row is
   reduced mod q in one vectorizable pass (a Barrett quotient with m = floor(2^32 / q), then one
   correction).  The words depend on the limb only: every thread count and lane count gives the
   same rows.  Tests check the stream against hashlib and the rows against
   `ren.sampling.sample`. */

#if defined(KECCAK_X8)
#define KECCAK_WAYS 8
#define keccak_f1600_ways(s) keccak_f1600_x8((u64(*)[8])(s))
#elif defined(KECCAK_X4)
#define KECCAK_WAYS 4
#define keccak_f1600_ways(s) keccak_f1600_x4((u64(*)[4])(s))
#else
#define KECCAK_WAYS 1
#define keccak_f1600_ways(s) keccak_f1600(s)
#endif
/* how many limbs' streams one permutation of this build runs */
int ren_cpu_keccak_ways(void) { return KECCAK_WAYS; }

/* the longest prefix || limb || seed the sampler takes (Ren's are ~55 bytes) */
#define REN_SAMPLE_MAX_INPUT 1024
int ren_cpu_sample_max_input(void) { return REN_SAMPLE_MAX_INPUT; }

/* x[0..n) mod q, for words x < 2^32: t = floor(x m / 2^32) with m = floor(2^32 / q) is
   floor(x / q) or one less, so x - t q is in [0, 2q) and one subtraction finishes */
static void reduce_row(u32* x, i64 n, u32 q) {
  if (q == 1) {
    memset(x, 0, (size_t)n * sizeof(u32));
    return;
  }
  const u32 m = (u32)((1ULL << 32) / q);
  for (i64 i = 0; i < n; ++i) {
    const u32 w = x[i], r = w - (u32)(((u64)w * m) >> 32) * q;
    x[i] = r >= q ? r - q : r;
  }
}

/* the words of lane j's block (state s, `ways` lanes interleaved) below bound, appended to
   out[kept..n); returns the new count */
static inline i64 take_block(const u64* s, int ways, int j, u64 bound, u32* out, i64 kept,
                             i64 n) {
  const u64* p = s + j;
  if (kept + 2 * (SHAKE128_RATE / 8) <= n) {  /* room for every word: no branches */
    for (int k = 0; k < SHAKE128_RATE / 8; ++k) {
      const u64 v = p[k * ways];
      const u32 w0 = (u32)v, w1 = (u32)(v >> 32);  /* the stream's little-endian words */
      out[kept] = w0;
      kept += w0 < bound;
      out[kept] = w1;
      kept += w1 < bound;
    }
    return kept;
  }
  for (int k = 0; k < SHAKE128_RATE / 8; ++k) {
    const u32 w[2] = {(u32)p[k * ways], (u32)(p[k * ways] >> 32)};
    for (int h = 0; h < 2; ++h)
      if (w[h] < bound) {
        out[kept++] = w[h];
        if (kept == n) return n;
      }
  }
  return kept;
}

/* the next limb nobody has taken (threads share *next) */
static i64 claim_limb(i64* next) {
  i64 l;
  REN_OMP(atomic capture)
  l = (*next)++;
  return l;
}

/* one thread's share of a uniform sample: `ways` lanes (1 or KECCAK_WAYS), each running the
   stream of a limb it claimed until the limb's row is full, then the next unclaimed limb's */
static void uniform_lanes(int ways, const u8* prefix, i64 prefix_len, const u8* seed,
                          i64 seed_len, const u32* moduli, i64 L, i64 n, u32* out, i64* next) {
  u64 s[25 * KECCAK_WAYS] = {0};
  i64 limb[KECCAK_WAYS], kept[KECCAK_WAYS];
  u8 msg[REN_SAMPLE_MAX_INPUT];
  const i64 len = prefix_len + 4 + seed_len;
  memcpy(msg, prefix, (size_t)prefix_len);
  memcpy(msg + prefix_len + 4, seed, (size_t)seed_len);
  for (int j = 0; j < ways; ++j) limb[j] = -1;  /* -1: no limb yet, L: no limb left */
  for (;;) {
    int active = 0;
    for (int j = 0; j < ways; ++j) {
      while (limb[j] < L) {
        if (limb[j] < 0 || kept[j] == n) {  /* lane j is free: the next limb, absorbed */
          if (limb[j] >= 0) reduce_row(out + limb[j] * n, n, moduli[limb[j]]);
          limb[j] = claim_limb(next);
          if (limb[j] >= L) {
            limb[j] = L;
            break;
          }
          u64 a[25];
          for (int i = 0; i < 4; ++i) msg[prefix_len + i] = (u8)((u64)limb[j] >> (8 * i));
          shake_absorb(a, SHAKE128_RATE, msg, len);
          for (int i = 0; i < 25; ++i) s[i * ways + j] = a[i];
          kept[j] = 0;
        }
        const u32 q = moduli[limb[j]];
        kept[j] = take_block(s, ways, j, ((1ULL << 32) / q) * q, out + limb[j] * n, kept[j], n);
        if (kept[j] < n) {  /* the lane needs its stream's next block */
          ++active;
          break;
        }  /* else the row is full: the next limb's first block is ready after its absorb */
      }
    }
    if (!active) return;
    if (ways == 1) keccak_f1600(s); else keccak_f1600_ways(s);
  }
}

/* out (L x n, row-major): ren.sampling.sample's uniform residues for moduli[0..L) from
   prefix || limb || seed, `ways` streams a permutation (1, or 0 for KECCAK_WAYS) on
   REN_CPU_THREADS threads.  Returns 0, 1 (nothing written) when that input is longer than
   REN_SAMPLE_MAX_INPUT bytes (the caller then samples another way), or 2 when this build
   does not run `ways` lanes. */
int ren_cpu_sample_uniform_ways(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                                const u32* moduli, i64 L, i64 n, u32* out, int ways) {
  if (prefix_len < 0 || seed_len < 0 || prefix_len + 4 + seed_len > REN_SAMPLE_MAX_INPUT)
    return 1;
  ways = ways ? ways : KECCAK_WAYS;
  if (ways != 1 && ways != KECCAK_WAYS) return 2;
  if (L <= 0 || n <= 0) return 0;
  i64 next = 0;
  REN_OMP(parallel num_threads(ren_threads) if(ren_threads > 1 && L > 1 &&
                                                L * n * 8 >= REN_PAR_MIN_WORK))
  uniform_lanes(ways, prefix, prefix_len, seed, seed_len, moduli, L, n, out, &next);
  return 0;
}

int ren_cpu_sample_uniform(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                           const u32* moduli, i64 L, i64 n, u32* out) {
  return ren_cpu_sample_uniform_ways(prefix, prefix_len, seed, seed_len, moduli, L, n, out, 0);
}
