/* ren.sampling's uniform residues in C, and the samplers' thread counts: the "cpu" device's
   samplers (the small-coefficient distributions follow in cpu_ring_sample_small.c).

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

/* The threads a sampler called on this OS thread runs on.  By default REN_CPU_THREADS
   (ren_threads).  Realization draws a graph's random leaves side by side on a pool of as many
   threads as the device has; a sampler on such a thread (ren_cpu_sample_side_by_side(1) for the
   call) takes ren_threads / (the side-by-side samplers running at the time), at least one, each
   time it starts a team: two leaves at once on two threads run one thread each (a team under
   each would put twice as many busy threads as cores, and a member preempted holding the last
   limb keeps its team waiting at the region's end).  What such a sampler can divide also goes
   on the board (cpu_ring_share.c), where the pool threads that finished their own leaves join
   it: a team fixed when a stretch of work starts no longer strands them.  Every side-by-side
   sampler counts at least two samplers running (there are two leaves or more, or realization
   would not draw side by side): started first, before its sibling has (realization's caller
   takes its first leaf at once, while a pool thread must wake), it would otherwise keep a full
   team beside the sibling's sampler (an encryption's first Gaussian at N = 2^16 on two threads:
   3.7-4.0 ms of wall in one timeline, ~1.6 ms without the team); it relies on the board.
   ren_cpu_sample_threads(n > 0) fixes the count for the calling thread instead (0: back to the
   above).  The words never depend on any of it. */
static int ren_side_by_side_running = 0;  /* samplers marked side by side, all threads */
static __thread int ren_sample_side_by_side = 0;  /* this thread's sampler is one of them */
static __thread int ren_sample_threads_here = 0;  /* a fixed count for this thread, or 0 */
void ren_cpu_sample_threads(int n) { ren_sample_threads_here = n < 0 ? 0 : n; }
void ren_cpu_sample_side_by_side(int on) {
  on = on != 0;
  if (on != ren_sample_side_by_side)
    __atomic_add_fetch(&ren_side_by_side_running, on ? 1 : -1, __ATOMIC_SEQ_CST);
  if (ren_sample_side_by_side && !on) ren_board_event_now();  /* a leaf's end (helpers wait) */
  ren_sample_side_by_side = on;
}
static int ren_sample_threads_now(void) {
  if (ren_sample_threads_here > 0) return ren_sample_threads_here;
  if (!ren_sample_side_by_side) return ren_threads;
  const int running = __atomic_load_n(&ren_side_by_side_running, __ATOMIC_SEQ_CST);
  const int share = ren_threads / (running > 2 ? running : 2);  /* (at least two: see above) */
  return share > 1 ? share : 1;
}
#define REN_SAMPLE_THREADS (ren_sample_threads_now())
/* whether this thread's sampler posts its divisible work of `work` words on the board */
#define REN_SAMPLE_SHARE(work) (ren_sample_side_by_side && (work) * 8 >= REN_PAR_MIN_WORK)
/* the threads a sampler called now on this thread would use */
int ren_cpu_sample_threads_here(void) { return REN_SAMPLE_THREADS; }
/* the same count, under the name the uniform sampler's tests read */
int ren_cpu_sample_uniform_threads_here(void) { return REN_SAMPLE_THREADS; }

/* the longest prefix || limb || seed the sampler takes (Ren's are ~55 bytes) */
#define REN_SAMPLE_MAX_INPUT 1024
int ren_cpu_sample_max_input(void) { return REN_SAMPLE_MAX_INPUT; }

/* one stream's SHAKE input into m: prefix || index (4 bytes, little-endian) || seed (ren.sampling:
   a uniform limb's stream, a small distribution's part); returns its length.  The caller checks
   that it fits REN_SAMPLE_MAX_INPUT */
static inline i64 stream_message(u8* m, const u8* prefix, i64 prefix_len, i64 index,
                                 const u8* seed, i64 seed_len) {
  memcpy(m, prefix, (size_t)prefix_len);
  for (int i = 0; i < 4; ++i) m[prefix_len + i] = (u8)((u64)index >> (8 * i));
  memcpy(m + prefix_len + 4, seed, (size_t)seed_len);
  return prefix_len + 4 + seed_len;
}

/* v 2^32 mod q for a residue v < q (storage form, what every device stores): a Shoup product
   by R = 2^32 mod q, in 64 bits (any q below 2^32); the samplers' one conversion */
typedef struct {
  u64 R, shoup;
} storage_factor;
static inline storage_factor storage_factor_of(u32 q) {
  const u64 R = (1ULL << 32) % q;
  return (storage_factor){R, (R << 32) / q};
}
static inline u32 to_storage(u64 v, storage_factor f, u32 q) {
  const u64 t = v * f.R - ((v * f.shoup) >> 32) * q;
  return (u32)(t >= q ? t - q : t);
}
/* to_storage for q < 2^31 (every Ren modulus: 30/31-bit primes) in 32-bit lanes: the same
   product, whose value in [0, 2q) fits 32 bits, so computing it mod 2^32 gives the same word;
   the NTT's own Shoup product (16 lanes of AVX-512 instead of 8 64-bit ones) */
#define REN_STORAGE_NARROW(q) ((q) < (1u << 31))
static inline u32 to_storage_narrow(u32 v, storage_factor f, u32 q) {
  const u32 t = shoup(v, (u32)f.R, (u32)f.shoup, q);
  return umin(t, t - q);
}

/* x[0..n) mod q, for words x < 2^32: t = floor(x m / 2^32) with m = floor(2^32 / q) is
   floor(x / q) or one less, so x - t q is in [0, 2q) and one subtraction finishes */
static void reduce_row(u32* x, i64 n, u32 q, int stored) {
  if (q == 1) {
    memset(x, 0, (size_t)n * sizeof(u32));
    return;
  }
  const u32 m = (u32)((1ULL << 32) / q);
  if (stored) {  /* and in storage form */
    const storage_factor f = storage_factor_of(q);
    if (REN_STORAGE_NARROW(q))
      for (i64 i = 0; i < n; ++i) {
        const u32 w = x[i], r = w - (u32)(((u64)w * m) >> 32) * q;
        x[i] = to_storage_narrow(umin(r, r - q), f, q);
      }
    else
      for (i64 i = 0; i < n; ++i) {
        const u32 w = x[i], r = w - (u32)(((u64)w * m) >> 32) * q;
        x[i] = to_storage(r >= q ? r - q : r, f, q);
      }
    return;
  }
  for (i64 i = 0; i < n; ++i) {
    const u32 w = x[i], r = w - (u32)(((u64)w * m) >> 32) * q;
    x[i] = r >= q ? r - q : r;
  }
}

/* lane j of an interleaved state s (`ways` lanes, word i of lane j at s[i ways + j]) starts
   the SHAKE stream of msg (`rate` bytes a block: SHAKE128_RATE or SHAKE256_RATE): msg absorbed
   by the scalar sponge, that state loaded into the lane, where its first output block is read
   before the next vector permutation (the uniform's lanes and the parted small samplers') */
static inline void lane_absorb(u64* s, int ways, int j, int rate, const u8* msg, i64 len) {
  u64 a[25];
  shake_absorb(a, rate, msg, len);
  for (int i = 0; i < 25; ++i) s[i * ways + j] = a[i];
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

#if defined(KECCAK_X8)
/* take_block for the 8-way state when the row has room for a whole block, from lane j's 21
   rate words laid out contiguously (w[0..21), `lanes_rate_x8`): three plain loads, the kept
   32-bit words of each compressed to the front of a register and stored with a mask of as
   many words (vpcompressd to memory is slow on Zen 4) */
static inline i64 take_block_x8(const u64* w, u64 bound, u32* out, i64 kept) {
  const __m512i below = _mm512_set1_epi32((int)(u32)bound);
  for (int k = 0; k < 3; ++k) {  /* words 0-7, 8-15, 16-20 of the rate's 21 */
    const __m512i v = _mm512_loadu_si512((const void*)(w + 8 * k));
    __mmask16 keep = bound >> 32 ? (__mmask16)0xFFFF : _mm512_cmplt_epu32_mask(v, below);
    if (k == 2) keep &= (__mmask16)0x03FF;
    const int count = __builtin_popcount((unsigned)keep);
    _mm512_mask_storeu_epi32((void*)(out + kept), (__mmask16)((1u << count) - 1),
                             _mm512_maskz_compress_epi32(keep, v));
    kept += count;
  }
  return kept;
}

/* r[i] (element j: word i of lane j) -> r[j] (element i: word i of lane j): the 8 x 8
   transpose of 64-bit elements, in three rounds of two-source shuffles */
static inline void transpose8x8(__m512i r[8]) {
  __m512i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {  /* pairs of rows, elements interleaved */
    t[i] = _mm512_unpacklo_epi64(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi64(r[i], r[i + 1]);
  }
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13),
                odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15),
                low = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11),
                high = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  for (int h = 0; h < 8; h += 4) {  /* four rows' elements (0, 4), (2, 6), (1, 5), (3, 7) */
    u[h] = _mm512_permutex2var_epi64(t[h], even, t[h + 2]);
    u[h + 1] = _mm512_permutex2var_epi64(t[h], odd, t[h + 2]);
    u[h + 2] = _mm512_permutex2var_epi64(t[h + 1], even, t[h + 3]);
    u[h + 3] = _mm512_permutex2var_epi64(t[h + 1], odd, t[h + 3]);
  }
  static const int first[4] = {0, 2, 1, 3};
  for (int c = 0; c < 4; ++c) {  /* u[c] holds elements (e, e + 4) of rows 0-3, u[c + 4] of 4-7 */
    const int e = first[c];
    r[e] = _mm512_permutex2var_epi64(u[c], low, u[c + 4]);
    r[e + 4] = _mm512_permutex2var_epi64(u[c], high, u[c + 4]);
  }
}

/* the rate's 21 words of every lane of the 8-way state s, lane by lane: t[j][k] = s[8k + j]
   (what take_block_x8 reads; three 8 x 8 transposes in registers replace eight lanes' three
   gathers each, which stalled the sampler as long as the permutation's own work) */
static inline void lanes_rate_x8(const u64* s, u64 (*t)[24]) {
  for (int b = 0; b < 3; ++b) {
    __m512i r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = 8 * b + i < SHAKE128_RATE / 8 ? _mm512_loadu_si512((const void*)(s + 8 * (8 * b + i)))
                                          : _mm512_setzero_si512();
    transpose8x8(r);
    for (int j = 0; j < 8; ++j) _mm512_storeu_si512((void*)(t[j] + 8 * b), r[j]);
  }
}
#endif

/* the next limb nobody has taken (threads share *next: team threads and board helpers) */
static i64 claim_limb(i64* next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

/* one thread's share of a uniform sample: `ways` lanes (1 or KECCAK_WAYS), each running the
   stream of a limb it claimed until the limb's row is full, then the next unclaimed limb's */
static void uniform_lanes(int ways, const u8* prefix, i64 prefix_len, const u8* seed,
                          i64 seed_len, const u32* moduli, i64 L, i64 n, u32* out, i64* next,
                          int stored) {
  u64 s[25 * KECCAK_WAYS] = {0};
  i64 limb[KECCAK_WAYS], kept[KECCAK_WAYS];
  u8 msg[REN_SAMPLE_MAX_INPUT];
#if defined(KECCAK_X8)
  u64 rate[8][24] __attribute__((aligned(64)));  /* each lane's rate words (8 ways only) */
#endif
  for (int j = 0; j < ways; ++j) limb[j] = -1;  /* -1: no limb yet, L: no limb left */
  for (;;) {
    int active = 0;
    for (int j = 0; j < ways; ++j) {
      while (limb[j] < L) {
        if (limb[j] < 0 || kept[j] == n) {  /* lane j is free: the next limb, absorbed */
          if (limb[j] >= 0) reduce_row(out + limb[j] * n, n, moduli[limb[j]], stored);
          limb[j] = claim_limb(next);
          if (limb[j] >= L) {
            limb[j] = L;
            break;
          }
          lane_absorb(s, ways, j, SHAKE128_RATE, msg,
                      stream_message(msg, prefix, prefix_len, limb[j], seed, seed_len));
#if defined(KECCAK_X8)
          if (ways == 8)  /* the new stream's first block, where take_block_x8 reads it */
            for (int k = 0; k < SHAKE128_RATE / 8; ++k) rate[j][k] = s[8 * k + j];
#endif
          kept[j] = 0;
        }
        const u32 q = moduli[limb[j]];
        const u64 bound = ((1ULL << 32) / q) * q;
#if defined(KECCAK_X8)
        if (ways == 8 && kept[j] + 2 * (SHAKE128_RATE / 8) <= n)
          kept[j] = take_block_x8(rate[j], bound, out + limb[j] * n, kept[j]);
        else
#endif
          kept[j] = take_block(s, ways, j, bound, out + limb[j] * n, kept[j], n);
        if (kept[j] < n) {  /* the lane needs its stream's next block */
          ++active;
          break;
        }  /* else the row is full: the next limb's first block is ready after its absorb */
      }
    }
    if (!active) return;
    if (ways == 1) keccak_f1600(s); else keccak_f1600_ways(s);
#if defined(KECCAK_X8)
    if (ways == 8) lanes_rate_x8(s, rate);
#endif
  }
}

typedef struct {
  int ways;
  const u8 *prefix;
  i64 prefix_len;
  const u8* seed;
  i64 seed_len;
  const u32* moduli;
  i64 L, n;
  u32* out;
  int stored;
} uniform_args;

/* a uniform's job: every thread on it runs its lanes on the job's limb counter */
static void uniform_run(ren_job* j) {
  const uniform_args* a = (const uniform_args*)j->ctx;
  uniform_lanes(a->ways, a->prefix, a->prefix_len, a->seed, a->seed_len, a->moduli, a->L, a->n,
                a->out, &j->next, a->stored);
}

int ren_cpu_sample_uniform_form(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                                const u32* moduli, i64 L, i64 n, u32* out, int ways,
                                int stored);

/* out (L x n, row-major): ren.sampling.sample's uniform residues for moduli[0..L) from
   prefix || limb || seed, `ways` streams a permutation (1, or 0 for KECCAK_WAYS) on
   REN_CPU_THREADS threads.  Returns 0, 1 (nothing written) when that input is longer than
   REN_SAMPLE_MAX_INPUT bytes (the caller then samples another way), or 2 when this build
   does not run `ways` lanes. */
int ren_cpu_sample_uniform_ways(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                                const u32* moduli, i64 L, i64 n, u32* out, int ways) {
  return ren_cpu_sample_uniform_form(prefix, prefix_len, seed, seed_len, moduli, L, n, out, ways,
                                     0);
}

/* ren_cpu_sample_uniform_ways, the residues in storage form (r 2^32 mod q) when `stored` */
int ren_cpu_sample_uniform_form(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                                const u32* moduli, i64 L, i64 n, u32* out, int ways,
                                int stored) {
  if (prefix_len < 0 || seed_len < 0 || prefix_len + 4 + seed_len > REN_SAMPLE_MAX_INPUT)
    return 1;
  ways = ways ? ways : KECCAK_WAYS;
  if (ways != 1 && ways != KECCAK_WAYS) return 2;
  if (L <= 0 || n <= 0) return 0;
  const uniform_args a = {ways, prefix, prefix_len, seed, seed_len, moduli, L, n, out, stored};
  ren_job j = {NULL, uniform_run, &a, 0, L, 0};
  const int threads = REN_SAMPLE_THREADS;
  job_share(&j, threads > 1 && L > 1 && L * n * 8 >= REN_PAR_MIN_WORK ? threads : 1,
            L > 1 && REN_SAMPLE_SHARE(L * n));
  return 0;
}

int ren_cpu_sample_uniform(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                           const u32* moduli, i64 L, i64 n, u32* out) {
  return ren_cpu_sample_uniform_ways(prefix, prefix_len, seed, seed_len, moduli, L, n, out, 0);
}
