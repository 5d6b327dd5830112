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

/* The threads a sampler called on this OS thread runs on.  By default REN_CPU_THREADS
   (ren_threads).  Realization draws a graph's random leaves side by side on a pool of as many
   threads as the device has; a sampler on such a thread (ren_cpu_sample_side_by_side(1) for the
   call) takes ren_threads / (the side-by-side samplers running at the time), at least one, each
   time it starts a team: two leaves at once on two threads run one thread each (a team under
   each would put twice as many busy threads as cores, and a member preempted holding the last
   limb keeps its team waiting at the region's end), and the last leaf left takes them all.
   What such a sampler can divide also goes on the board (cpu_ring_share.c), where the pool
   threads that finished their own leaves join it: a team fixed when a stretch of work starts
   no longer strands them.  A uniform (one long stretch) counts at least two samplers running:
   started first, before its sibling has, it would otherwise keep a full team beside the
   sibling's sampler for its whole run; it relies on the board instead.
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
static int ren_sample_threads_now(int least_running) {
  if (ren_sample_threads_here > 0) return ren_sample_threads_here;
  if (!ren_sample_side_by_side) return ren_threads;
  const int running = __atomic_load_n(&ren_side_by_side_running, __ATOMIC_SEQ_CST);
  const int share = ren_threads / (running > least_running ? running : least_running);
  return share > 1 ? share : 1;
}
#define REN_SAMPLE_THREADS (ren_sample_threads_now(1))
/* whether this thread's sampler posts its divisible work of `work` words on the board */
#define REN_SAMPLE_SHARE(work) (ren_sample_side_by_side && (work) * 8 >= REN_PAR_MIN_WORK)
/* the threads a sampler called now on this thread would use */
int ren_cpu_sample_threads_here(void) { return REN_SAMPLE_THREADS; }
/* the threads a uniform sampler called now on this thread would use */
int ren_cpu_sample_uniform_threads_here(void) { return ren_sample_threads_now(2); }

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

#if defined(KECCAK_X8)
/* take_block for the 8-way state when the row has room for a whole block: lane j's 21 words
   (stride 8 in s) by three gathers, the kept 32-bit words of each compressed to the front of a
   register and stored with a mask of as many words (vpcompressd to memory is slow on Zen 4) */
static inline i64 take_block_x8(const u64* s, int j, u64 bound, u32* out, i64 kept) {
  const __m512i idx = _mm512_setr_epi64(0, 8, 16, 24, 32, 40, 48, 56);
  const __m512i below = _mm512_set1_epi32((int)(u32)bound);
  for (int k = 0; k < 3; ++k) {  /* lanes 0-7, 8-15, 16-20 of the rate's 21 */
    const __m512i v = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(),
                                                  (__mmask8)(k < 2 ? 0xFF : 0x1F), idx,
                                                  (const void*)(s + j + 64 * k), 8);
    __mmask16 keep = bound >> 32 ? (__mmask16)0xFFFF : _mm512_cmplt_epu32_mask(v, below);
    if (k == 2) keep &= (__mmask16)0x03FF;
    const int count = __builtin_popcount((unsigned)keep);
    _mm512_mask_storeu_epi32((void*)(out + kept), (__mmask16)((1u << count) - 1),
                             _mm512_maskz_compress_epi32(keep, v));
    kept += count;
  }
  return kept;
}
#endif

/* the next limb nobody has taken (threads share *next: team threads and board helpers) */
static i64 claim_limb(i64* next) { return __atomic_fetch_add(next, 1, __ATOMIC_RELAXED); }

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
        const u64 bound = ((1ULL << 32) / q) * q;
#if defined(KECCAK_X8)
        if (ways == 8 && kept[j] + 2 * (SHAKE128_RATE / 8) <= n)
          kept[j] = take_block_x8(s, j, bound, out + limb[j] * n, kept[j]);
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
} uniform_args;

/* a uniform's job: every thread on it runs its lanes on the job's limb counter */
static void uniform_run(ren_job* j) {
  const uniform_args* a = (const uniform_args*)j->ctx;
  uniform_lanes(a->ways, a->prefix, a->prefix_len, a->seed, a->seed_len, a->moduli, a->L, a->n,
                a->out, &j->next);
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
  const uniform_args a = {ways, prefix, prefix_len, seed, seed_len, moduli, L, n, out};
  ren_job j = {NULL, uniform_run, &a, 0, L, 0};
  const int threads = ren_cpu_sample_uniform_threads_here();
  job_share(&j, threads > 1 && L > 1 && L * n * 8 >= REN_PAR_MIN_WORK ? threads : 1,
            L > 1 && REN_SAMPLE_SHARE(L * n));
  return 0;
}

int ren_cpu_sample_uniform(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                           const u32* moduli, i64 L, i64 n, u32* out) {
  return ren_cpu_sample_uniform_ways(prefix, prefix_len, seed, seed_len, moduli, L, n, out, 0);
}

/* ---- small coefficients: ren.sampling.sample_signed's ternary, sparse ternary, Gaussian ----
   Each purpose's words are one SHAKE-256 stream (its input, ren.sampling.stream_input, comes
   from the caller), a serial squeeze; what runs on the threads: the two streams of a kind that
   has two side by side (on one thread, two of similar length in two lanes of the vector
   permutation: shake256_u64_two), the second half of the Gaussian stream beside the first half's
   logarithms, and the mappings of words to coefficients in chunks of REN_SMALL_CHUNK
   coefficients (the values do not depend on the chunks or the threads).  The ren_cpu_map_*
   entry points take words squeezed elsewhere (the tests feed them crafted words). */
#include <math.h>

#define REN_SMALL_CHUNK 4096
/* whether a mapping of n coefficients uses a team (REN_PARALLEL_FOR's threshold) */
#define REN_SMALL_PAR(n) (REN_SAMPLE_THREADS > 1 && (n) * 8 >= REN_PAR_MIN_WORK)
#define REN_SMALL_CHUNKS(n) (((n) + REN_SMALL_CHUNK - 1) / REN_SMALL_CHUNK)
/* the chunks of a mapping of n coefficients as a job: on this thread's team, and on the board
   for a side-by-side sampler */
static void small_share(void (*task)(const void*, i64), const void* ctx, i64 n) {
  ren_job j = {task, NULL, ctx, 0, REN_SMALL_CHUNKS(n), 0};
  job_share(&j, REN_SMALL_PAR(n) ? REN_SAMPLE_THREADS : 1, REN_SAMPLE_SHARE(n));
}
#define REN_CHUNK_END(c, n) ((c + 1) * REN_SMALL_CHUNK < (n) ? (c + 1) * REN_SMALL_CHUNK : (n))

/* uniform_on_interval / ternary: out[i] = lo + (high[i] 2^64 + low[i]) mod width, high and
   low the words of the "hi" and "lo" streams (ren.sampling's _mod_u128: the same u64 steps,
   whose result is the exact remainder); 0 < width <= 2^32 */
typedef struct {
  const u64 *high, *low;
  u64 width, two64;
  i64 lo, n;
  i64* out;
} interval_args;

static void interval_chunk(const void* p, i64 c) {
  const interval_args* a = (const interval_args*)p;
  const u64 *high = a->high, *low = a->low, width = a->width, two64 = a->two64;
  const i64 lo = a->lo, end = REN_CHUNK_END(c, a->n);
  i64* out = a->out;
  if (width == 3) {  /* ternary: constant divisors (no division); 2^64 mod 3 is 1 */
    for (i64 i = c * REN_SMALL_CHUNK; i < end; ++i)
      out[i] = lo + (i64)((high[i] % 3 + low[i] % 3) % 3);
  } else {
    for (i64 i = c * REN_SMALL_CHUNK; i < end; ++i)
      out[i] = lo + (i64)(((high[i] % width) * two64 % width + low[i] % width) % width);
  }
}

void ren_cpu_map_interval(const u64* high, const u64* low, u64 width, i64 lo, i64 n,
                          i64* out) {
  const interval_args a = {high, low, width, (((1ULL << 63) % width) * 2) % width, lo, n, out};
  small_share(interval_chunk, &a, n);
}

/* the order of (key, index) pairs: stable argsort's */
typedef struct {
  u64 key;
  i64 index;
} keyed;
static int keyed_cmp(const void* x, const void* y) {
  const keyed *a = (const keyed*)x, *b = (const keyed*)y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

/* the k-th smallest (from 0) of v[0..n), v reordered (quickselect, three-way partition) */
static u64 select_kth(u64* v, i64 n, i64 k) {
  i64 lo = 0, hi = n;  /* the answer is in v[lo..hi) */
  for (;;) {
    const u64 a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    const u64 pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    i64 lt = lo, i = lo, gt = hi;  /* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
    while (i < gt) {
      const u64 x = v[i];
      if (x < pivot) {
        v[i++] = v[lt];
        v[lt++] = x;
      } else if (x > pivot) {
        v[i] = v[--gt];
        v[gt] = x;
      } else {
        ++i;
      }
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return pivot;
  }
}

/* sparse_ternary(h): the positions of the h smallest of the "positions" words keys[0..n)
   (ties: the lower index first, as a stable argsort orders them), in that order, take the
   signs 2 (signs[i] & 1) - 1; every other coefficient is 0.  Returns 0, or 1 when out of
   memory (nothing written). */
int ren_cpu_map_sparse(const u64* keys, const u64* signs, i64 h, i64 n, i64* out) {
  if (n <= 0) return 0;
  if (h <= 0) {
    memset(out, 0, (size_t)n * sizeof(i64));
    return 0;
  }
  u64* scratch = (u64*)malloc((size_t)n * sizeof(u64));
  keyed* chosen = (keyed*)malloc((size_t)h * sizeof(keyed));
  if (!scratch || !chosen) {
    free(scratch);
    free(chosen);
    return 1;
  }
  memcpy(scratch, keys, (size_t)n * sizeof(u64));
  const u64 last = select_kth(scratch, n, h - 1);  /* the h-th smallest key */
  i64 m = 0;
  for (i64 i = 0; i < n; ++i)  /* the keys below it, then those equal to it, by index */
    if (keys[i] < last) chosen[m++] = (keyed){keys[i], i};
  for (i64 i = 0; i < n && m < h; ++i)
    if (keys[i] == last) chosen[m++] = (keyed){keys[i], i};
  qsort(chosen, (size_t)h, sizeof(keyed), keyed_cmp);
  memset(out, 0, (size_t)n * sizeof(i64));
  for (i64 i = 0; i < h; ++i) out[chosen[i].index] = (i64)(signs[i] & 1) * 2 - 1;
  free(scratch);
  free(chosen);
  return 0;
}

/* gaussian(sigma), clipped to +-bound, from the "gauss" stream's words w1 (the first n) and
   w2 (the next n): u1 = ((w1[i] >> 11) + 1) / 2^53, u2 = (w2[i] >> 11) / 2^53,
   x = sqrt(-2 log u1) cos(2 pi u2) sigma, coefficient i = clip(rint(x)): ren.sampling's
   operations in its order.  libm's log and cos may differ from NumPy's in the last bit, which
   changes a coefficient only where x sits at a rounding tie: where x lies within
   tie_eps (1 + |x| + sigma) of a half-integer the coefficient is left to the caller (NumPy, from
   the same words): its index goes to ties (at most max_ties of them; any order), and the
   functions return how many there are (more than max_ties: the caller computes them all). */
#define GAUSS_TWO53 9007199254740992.0

typedef struct {
  const u64 *w1, *w2;
  double* radius;
  double sigma, tie_eps;
  i64 bound, n;
  i64 *out, *ties, max_ties;
  i64 nties;  /* atomic */
} gauss_args;

/* radius[i] = sqrt(-2 log u1) for the i of chunk c */
static void gauss_radius(const void* p, i64 c) {
  const gauss_args* a = (const gauss_args*)p;
  const i64 end = REN_CHUNK_END(c, a->n);
  for (i64 i = c * REN_SMALL_CHUNK; i < end; ++i)
    a->radius[i] = sqrt(-2.0 * log(((double)(a->w1[i] >> 11) + 1.0) / GAUSS_TWO53));
}

/* chunk c's coefficients from the radii and w2 */
static void gauss_finish(const void* p, i64 c) {
  gauss_args* a = (gauss_args*)p;  /* nties only, atomically */
  const double two_pi = 2.0 * M_PI, sigma = a->sigma;
  const i64 end = REN_CHUNK_END(c, a->n), bound = a->bound;
  for (i64 i = c * REN_SMALL_CHUNK; i < end; ++i) {
    const double x = a->radius[i] * cos(two_pi * ((double)(a->w2[i] >> 11) / GAUSS_TWO53)) *
                     sigma;
    if (fabs(x - floor(x) - 0.5) <= a->tie_eps * (1.0 + fabs(x) + sigma)) {
      const i64 t = __atomic_fetch_add(&a->nties, 1, __ATOMIC_RELAXED);
      if (t < a->max_ties) a->ties[t] = i;
      a->out[i] = 0;
      continue;
    }
    const double k = rint(x);
    a->out[i] = k < (double)-bound ? -bound : k > (double)bound ? bound : (i64)k;
  }
}

/* from words squeezed elsewhere (see above); -2 when out of memory */
i64 ren_cpu_map_gaussian(const u64* w1, const u64* w2, double sigma, i64 bound, double tie_eps,
                         i64 n, i64* out, i64* ties, i64 max_ties) {
  if (n <= 0) return 0;
  double* radius = (double*)malloc((size_t)n * sizeof(double));
  if (!radius) return -2;
  gauss_args a = {w1, w2, radius, sigma, tie_eps, bound, n, out, ties, max_ties, 0};
  small_share(gauss_radius, &a, n);
  small_share(gauss_finish, &a, n);
  free(radius);
  return a.nties;
}

/* from the stream whose input is msg: its first n words, then the next n squeezed on one thread
   while another (of the team, or of the board's helpers) takes the first n's logarithms; -2
   when out of memory */
i64 ren_cpu_sample_gaussian(const u8* msg, i64 len, double sigma, i64 bound, double tie_eps,
                            i64 n, i64* out, i64* ties, i64 max_ties) {
  if (n <= 0) return 0;
  u64* u = (u64*)malloc((size_t)n * 2 * sizeof(u64));
  double* radius = (double*)malloc((size_t)n * sizeof(double));
  if (!u || !radius) {
    free(u);
    free(radius);
    return -2;
  }
  shake_reader r;
  shake_open(&r, SHAKE256_RATE, msg, len);
  shake_read_u64(&r, u, n);
  gauss_args a = {u, u + n, radius, sigma, tie_eps, bound, n, out, ties, max_ties, 0};
  ren_job j = {gauss_radius, NULL, &a, 0, REN_SMALL_CHUNKS(n), 0};
  const int posted = REN_SAMPLE_SHARE(n) && board_post(&j);
  REN_OMP(parallel sections num_threads(2) if(REN_SMALL_PAR(n)))
  {
    REN_OMP(section)
    shake_read_u64(&r, u + n, n);
    REN_OMP(section)
    job_work(&j);
  }
  if (posted) board_close(&j);  /* (every radius is done: the section claimed to the end) */
  small_share(gauss_finish, &a, n);
  free(u);
  free(radius);
  return a.nties;
}

/* the first n0 words of SHAKE-256(m0) and the first n1 of SHAKE-256(m1) on the calling thread,
   the two streams in two lanes of each vector permutation (KECCAK_WAYS > 1; ~1.2 scalar
   permutations' time for both), or one after the other on the scalar path: the same words as
   shake256_u64 of each.  (Not shared on the board: handing the second stream over to a helper
   mid-way left the owner's scalar permutation for the first stream at ~1.0 of the pair's ~1.2,
   1.24 vs 1.28 ms for a ternary's two streams at N = 2^16.) */
static void shake256_u64_pair(const u8* m0, i64 l0, u64* o0, i64 n0, const u8* m1, i64 l1,
                              u64* o1, i64 n1) {
#if KECCAK_WAYS > 1
  u64 s[25 * KECCAK_WAYS] = {0};
  u64 a[25];
  shake_absorb(a, SHAKE256_RATE, m0, l0);
  for (int i = 0; i < 25; ++i) s[i * KECCAK_WAYS] = a[i];
  shake_absorb(a, SHAKE256_RATE, m1, l1);
  for (int i = 0; i < 25; ++i) s[i * KECCAK_WAYS + 1] = a[i];
  i64 k0 = 0, k1 = 0;
  for (;;) {  /* the block in the state, then the next permutation while either needs more */
    for (int k = 0; k < SHAKE256_RATE / 8 && k0 < n0; ++k) o0[k0++] = s[k * KECCAK_WAYS];
    for (int k = 0; k < SHAKE256_RATE / 8 && k1 < n1; ++k) o1[k1++] = s[k * KECCAK_WAYS + 1];
    if (k0 >= n0 && k1 >= n1) return;
    keccak_f1600_ways(s);
  }
#else
  shake256_u64(m0, l0, o0, n0);
  shake256_u64(m1, l1, o1, n1);
#endif
}

/* a kind's two streams: side by side on two threads where a team pays (REN_SMALL_PAR), else
   on the calling thread, in two lanes where their lengths are within 2x of each other (a vector
   permutation costs ~1.5 scalar ones: the sparse secret's N position words and h sign words
   run faster one after the other) */
static void shake256_u64_two(const u8* m0, i64 l0, u64* o0, i64 n0, const u8* m1, i64 l1,
                             u64* o1, i64 n1, i64 n) {
  if (!REN_SMALL_PAR(n)) {
    const i64 lo = n0 < n1 ? n0 : n1, hi = n0 < n1 ? n1 : n0;
    if (2 * lo >= hi) {
      shake256_u64_pair(m0, l0, o0, n0, m1, l1, o1, n1);
    } else {
      shake256_u64(m0, l0, o0, n0);
      shake256_u64(m1, l1, o1, n1);
    }
    return;
  }
  REN_OMP(parallel sections num_threads(2))
  {
    REN_OMP(section)
    shake256_u64(m0, l0, o0, n0);
    REN_OMP(section)
    shake256_u64(m1, l1, o1, n1);
  }
}

/* uniform_on_interval / ternary from the "hi" and "lo" streams' inputs: the two squeezed side
   by side, then ren_cpu_map_interval.  Returns 0, or 1 when out of memory. */
int ren_cpu_sample_interval(const u8* msg_hi, i64 len_hi, const u8* msg_lo, i64 len_lo,
                            u64 width, i64 lo, i64 n, i64* out) {
  if (n <= 0) return 0;
  u64* low = (u64*)malloc((size_t)n * sizeof(u64));
  if (!low) return 1;
  u64* high = (u64*)out;  /* the "hi" words go where their coefficients will */
  shake256_u64_two(msg_hi, len_hi, high, n, msg_lo, len_lo, low, n, n);
  ren_cpu_map_interval(high, low, width, lo, n, out);  /* out[i] after high[i] only */
  free(low);
  return 0;
}

/* sparse_ternary(h) from the "positions" and "signs" streams' inputs: the two squeezed side by
   side, then ren_cpu_map_sparse.  Returns 0, or 1 when out of memory. */
int ren_cpu_sample_sparse(const u8* msg_pos, i64 len_pos, const u8* msg_sign, i64 len_sign,
                          i64 h, i64 n, i64* out) {
  if (n <= 0) return 0;
  u64* keys = (u64*)malloc((size_t)n * sizeof(u64));
  u64* signs = (u64*)malloc((size_t)(h > 0 ? h : 1) * sizeof(u64));
  if (!keys || !signs) {
    free(keys);
    free(signs);
    return 1;
  }
  shake256_u64_two(msg_pos, len_pos, keys, n, msg_sign, len_sign, signs, h, n);
  const int status = ren_cpu_map_sparse(keys, signs, h, n, out);
  free(keys);
  free(signs);
  return status;
}

/* out (L x n, row-major): the residues c mod moduli[l] (in [0, q)) of n signed coefficients,
   ren.sampling.sample's rows of a small-coefficient node; limbs on the threads.  A limb whose
   q exceeds every |c| (ternary, Gaussian) takes c, or c + q for c < 0, with no division. */
typedef struct {
  const i64* c;
  const u32* moduli;
  i64 n;
  u32* out;
  u64 most;  /* the largest |c| */
} residues_args;

static void residues_limb(const void* p, i64 l) {
  const residues_args* a = (const residues_args*)p;
  const i64* c = a->c;
  const i64 n = a->n;
  const u32 q = a->moduli[l];
  u32* row = a->out + l * n;
  if (a->most < q) {
    for (i64 i = 0; i < n; ++i) row[i] = (u32)c[i] + (c[i] < 0 ? q : 0u);
  } else {
    for (i64 i = 0; i < n; ++i) {
      const i64 r = c[i] % (i64)q;
      row[i] = (u32)(r < 0 ? r + (i64)q : r);
    }
  }
}

void ren_cpu_signed_residues(const i64* c, const u32* moduli, i64 L, i64 n, u32* out) {
  residues_args a = {c, moduli, n, out, 0};
  for (i64 i = 0; i < n; ++i) {
    const u64 v = c[i] < 0 ? -(u64)c[i] : (u64)c[i];
    a.most = v > a.most ? v : a.most;
  }
  ren_job j = {residues_limb, NULL, &a, 0, L, 0};
  const int threads = REN_SAMPLE_THREADS;
  job_share(&j, threads > 1 && L * n >= REN_PAR_MIN_WORK ? threads : 1,
            L > 1 && REN_SAMPLE_SHARE(L * n / 8));
}
