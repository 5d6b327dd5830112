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
static void reduce_row(u32* x, i64 n, u32 q, int stored) {
  if (q == 1) {
    memset(x, 0, (size_t)n * sizeof(u32));
    return;
  }
  const u32 m = (u32)((1ULL << 32) / q);
  if (stored) {  /* and times 2^32 mod q (storage form): a Shoup product by R = 2^32 mod q */
    const u64 R = (1ULL << 32) % q, shoup = (R << 32) / q;
    for (i64 i = 0; i < n; ++i) {
      const u32 w = x[i], r = w - (u32)(((u64)w * m) >> 32) * q;
      const u64 v = r >= q ? r - q : r, t = v * R - ((v * shoup) >> 32) * q;
      x[i] = (u32)(t >= q ? t - q : t);
    }
    return;
  }
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
                          i64 seed_len, const u32* moduli, i64 L, i64 n, u32* out, i64* next,
                          int stored) {
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
          if (limb[j] >= 0) reduce_row(out + limb[j] * n, n, moduli[limb[j]], stored);
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
   A purpose's words (ren.sampling.stream_words) come in parts of REN_PART indices, part k the
   first rows * m words of SHAKE-256(prefix || k as 4 little-endian bytes || seed), prefix
   "ren-sample\0" purpose "\0" (from the caller), row r's m words going to out[r n + k PART ..].
   The parts are independent streams: a job's task squeezes a few parts' streams at once in the
   lanes of one vector permutation (KECCAK_WAYS streams: a permutation of eight costs about one
   scalar permutation on the AVX-512 path) and maps their coefficients; the tasks run on this
   thread's team and, for a side-by-side sampler, on the board's helpers.  The values depend on
   neither the tasks, the lanes nor the threads.  The ren_cpu_map_* entry points take words
   squeezed elsewhere (the tests feed them crafted words), in chunks of REN_SMALL_CHUNK. */
#include <math.h>

#define REN_PART 1024 /* ren.sampling.PART */
#define REN_SMALL_CHUNK 4096
/* whether a sampler of n coefficients uses a team (REN_PARALLEL_FOR's threshold) */
#define REN_SMALL_PAR(n) (REN_SAMPLE_THREADS > 1 && (n) * 8 >= REN_PAR_MIN_WORK)
#define REN_SMALL_CHUNKS(n) (((n) + REN_SMALL_CHUNK - 1) / REN_SMALL_CHUNK)
/* the tasks of j on this thread's team, and on the board for a side-by-side sampler */
static void small_job(ren_job* j, i64 n) {
  job_share(j, REN_SMALL_PAR(n) && j->count > 1 ? REN_SAMPLE_THREADS : 1,
            j->count > 1 && REN_SAMPLE_SHARE(n));
}
/* the chunks of a mapping of n coefficients as a job */
static void small_share(void (*task)(const void*, i64), const void* ctx, i64 n) {
  ren_job j = {task, NULL, ctx, 0, REN_SMALL_CHUNKS(n), 0};
  small_job(&j, n);
}
#define REN_CHUNK_END(c, n) ((c + 1) * REN_SMALL_CHUNK < (n) ? (c + 1) * REN_SMALL_CHUNK : (n))

/* where one stream's words go: `rows` rows of m words (row r at row0 + r * stride) */
typedef struct {
  u64* row0;
  i64 stride, m;
  int rows, r; /* the row being written */
  i64 c;       /* the next word's column in it */
} lane_out;

/* copies up to `avail` words (lane j of the interleaved block p, `ways` lanes) into o */
static inline void lane_take(const u64* p, int ways, int avail, lane_out* o) {
  for (int k = 0; k < avail && o->r < o->rows; ++k) {
    o->row0[o->r * o->stride + o->c] = p[k * ways];
    if (++o->c == o->m) {
      o->c = 0;
      ++o->r;
    }
  }
}

/* count (<= KECCAK_WAYS) SHAKE-256 streams, inputs msg[j] of len[j] bytes, each into its o[j]:
   in the lanes of each vector permutation, or one after another on the scalar path */
static void shake256_lanes(int count, u8 (*msg)[REN_SAMPLE_MAX_INPUT], const i64* len,
                           lane_out* o) {
#if KECCAK_WAYS > 1
  if (count > 1) {
    u64 s[25 * KECCAK_WAYS] = {0};
    for (int j = 0; j < count; ++j) {
      u64 a[25];
      shake_absorb(a, SHAKE256_RATE, msg[j], len[j]);
      for (int i = 0; i < 25; ++i) s[i * KECCAK_WAYS + j] = a[i];
    }
    for (;;) {  /* the block in the state, then the next permutation while a stream needs more */
      int more = 0;
      for (int j = 0; j < count; ++j) {
        lane_take(s + j, KECCAK_WAYS, SHAKE256_RATE / 8, &o[j]);
        more |= o[j].r < o[j].rows;
      }
      if (!more) return;
      keccak_f1600_ways(s);
    }
  }
#endif
  for (int j = 0; j < count; ++j) {
    shake_reader r;
    shake_open(&r, SHAKE256_RATE, msg[j], len[j]);
    for (int k = 0; k < o[j].rows; ++k) shake_read_u64(&r, o[j].row0 + k * o[j].stride, o[j].m);
  }
}

/* one or two purposes' words over the same n indices (ternary's "hi" and "lo", or one of the
   sparse secret's, or the Gaussian's two-row "gauss"), and what maps a task's indices */
typedef struct {
  const u8* prefix[2];
  i64 prefix_len[2];
  u64* out[2];
  int rows[2], purposes;
  const u8* seed;
  i64 seed_len, n;
  i64 parts_per_task;
  void (*map)(const void* ctx, i64 start, i64 end);
  const void* ctx;
} parted_args;

/* task t: parts [t ppt, (t + 1) ppt), every purpose's stream of each, squeezed together, then
   their indices mapped */
static void parted_task(const void* p, i64 t) {
  const parted_args* a = (const parted_args*)p;
  u8 msg[KECCAK_WAYS > 1 ? KECCAK_WAYS : 2][REN_SAMPLE_MAX_INPUT];
  i64 len[KECCAK_WAYS > 1 ? KECCAK_WAYS : 2];
  lane_out o[KECCAK_WAYS > 1 ? KECCAK_WAYS : 2];
  const i64 first = t * a->parts_per_task, parts = (a->n + REN_PART - 1) / REN_PART;
  const i64 last = first + a->parts_per_task < parts ? first + a->parts_per_task : parts;
  int count = 0;
  for (i64 k = first; k < last; ++k)
    for (int q = 0; q < a->purposes; ++q, ++count) {
      u8* m = msg[count];
      memcpy(m, a->prefix[q], (size_t)a->prefix_len[q]);
      for (int i = 0; i < 4; ++i) m[a->prefix_len[q] + i] = (u8)((u64)k >> (8 * i));
      memcpy(m + a->prefix_len[q] + 4, a->seed, (size_t)a->seed_len);
      len[count] = a->prefix_len[q] + 4 + a->seed_len;
      const i64 start = k * REN_PART;
      o[count] = (lane_out){a->out[q] + start, a->n,
                            a->n - start < REN_PART ? a->n - start : REN_PART, a->rows[q], 0, 0};
    }
  shake256_lanes(count, msg, len, o);
  if (a->map) a->map(a->ctx, first * REN_PART, last * REN_PART < a->n ? last * REN_PART : a->n);
}

/* the parted words of a's purposes, and a->map of every task's indices; 1 when an input would be
   longer than REN_SAMPLE_MAX_INPUT (nothing done) */
static int parted_run(parted_args* a) {
  for (int q = 0; q < a->purposes; ++q)
    if (a->prefix_len[q] < 0 || a->seed_len < 0 ||
        a->prefix_len[q] + 4 + a->seed_len > REN_SAMPLE_MAX_INPUT)
      return 1;
  if (a->n <= 0) return 0;
  const int ways = KECCAK_WAYS > 1 ? KECCAK_WAYS : 2;
  a->parts_per_task = ways / a->purposes;
  const i64 parts = (a->n + REN_PART - 1) / REN_PART;
  ren_job j = {parted_task, NULL, a, 0, (parts + a->parts_per_task - 1) / a->parts_per_task, 0};
  /* (a part's words cost like a mapping's several times over: the same thresholds by n) */
  small_job(&j, a->n * a->rows[0]);
  return 0;
}

/* the first n indices' words (rows a index) of one purpose (the tests' check against hashlib);
   1 when the input is too long */
int ren_cpu_shake256_parted(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                            int rows, i64 n, u64* out) {
  parted_args a = {{prefix, NULL}, {prefix_len, 0}, {out, NULL}, {rows, 0}, 1, seed, seed_len,
                   n, 0, NULL, NULL};
  return parted_run(&a);
}

/* uniform_on_interval / ternary: out[i] = lo + (high[i] 2^64 + low[i]) mod width, high and
   low the words of the "hi" and "lo" streams (ren.sampling's _mod_u128: the same u64 steps,
   whose result is the exact remainder); 0 < width <= 2^32 */
typedef struct {
  const u64 *high, *low;
  u64 width, two64;
  i64 lo, n;
  i64* out;
} interval_args;

static void interval_range(const void* p, i64 start, i64 end) {
  const interval_args* a = (const interval_args*)p;
  const u64 *high = a->high, *low = a->low, width = a->width, two64 = a->two64;
  const i64 lo = a->lo;
  i64* out = a->out;
  if (width == 3) {  /* ternary: constant divisors (no division); 2^64 mod 3 is 1 */
    for (i64 i = start; i < end; ++i)
      out[i] = lo + (i64)((high[i] % 3 + low[i] % 3) % 3);
  } else {
    for (i64 i = start; i < end; ++i)
      out[i] = lo + (i64)(((high[i] % width) * two64 % width + low[i] % width) % width);
  }
}

static void interval_chunk(const void* p, i64 c) {
  interval_range(p, c * REN_SMALL_CHUNK, REN_CHUNK_END(c, ((const interval_args*)p)->n));
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

/* gaussian(sigma), clipped to +-bound, from the "gauss" words w1 (row 0) and w2 (row 1):
   u1 = ((w1[i] >> 11) + 1) / 2^53, u2 = (w2[i] >> 11) / 2^53,
   x = sqrt(-2 log u1) cos(2 pi u2) sigma, coefficient i = clip(rint(x)): ren.sampling's
   operations in its order.  libm's log and cos may differ from NumPy's in the last bit, which
   changes a coefficient only where x sits at a rounding tie: where x lies within
   tie_eps (1 + |x| + sigma) of a half-integer the coefficient is left to the caller (NumPy, from
   the same words): its index goes to ties (at most max_ties of them; any order), and the
   functions return how many there are (more than max_ties: the caller computes them all). */
#define GAUSS_TWO53 9007199254740992.0

typedef struct {
  const u64 *w1, *w2;
  double sigma, tie_eps;
  i64 bound, n;
  i64 *out, *ties, max_ties;
  i64 nties;  /* atomic */
} gauss_args;

static void gauss_range(const void* p, i64 start, i64 end) {
  gauss_args* a = (gauss_args*)p;  /* nties only, atomically */
  const double two_pi = 2.0 * M_PI, sigma = a->sigma;
  const i64 bound = a->bound;
  for (i64 i = start; i < end; ++i) {
    const double radius = sqrt(-2.0 * log(((double)(a->w1[i] >> 11) + 1.0) / GAUSS_TWO53));
    const double x = radius * cos(two_pi * ((double)(a->w2[i] >> 11) / GAUSS_TWO53)) * sigma;
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

static void gauss_chunk(const void* p, i64 c) {
  gauss_range(p, c * REN_SMALL_CHUNK, REN_CHUNK_END(c, ((const gauss_args*)p)->n));
}

/* from words squeezed elsewhere (see above) */
i64 ren_cpu_map_gaussian(const u64* w1, const u64* w2, double sigma, i64 bound, double tie_eps,
                         i64 n, i64* out, i64* ties, i64 max_ties) {
  if (n <= 0) return 0;
  gauss_args a = {w1, w2, sigma, tie_eps, bound, n, out, ties, max_ties, 0};
  small_share(gauss_chunk, &a, n);
  return a.nties;
}

/* from the "gauss" parts (prefix: stream_prefix("gauss")): each task squeezes its parts and
   maps their coefficients; -2 when out of memory, -1 when the input is too long */
i64 ren_cpu_sample_gaussian(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                            double sigma, i64 bound, double tie_eps, i64 n, i64* out, i64* ties,
                            i64 max_ties) {
  if (n <= 0) return 0;
  u64* u = (u64*)malloc((size_t)n * 2 * sizeof(u64));
  if (!u) return -2;
  gauss_args g = {u, u + n, sigma, tie_eps, bound, n, out, ties, max_ties, 0};
  parted_args a = {{prefix, NULL}, {prefix_len, 0}, {u, NULL}, {2, 0}, 1, seed, seed_len, n, 0,
                   gauss_range, &g};
  const int status = parted_run(&a);
  free(u);
  return status ? -1 : g.nties;
}

/* uniform_on_interval / ternary from the "hi" and "lo" parts: a task squeezes both purposes'
   streams of its parts, then maps them.  Returns 0, 1 when out of memory, 2 when an input is
   too long. */
int ren_cpu_sample_interval(const u8* pre_hi, i64 len_hi, const u8* pre_lo, i64 len_lo,
                            const u8* seed, i64 seed_len, u64 width, i64 lo, i64 n, i64* out) {
  if (n <= 0) return 0;
  u64* low = (u64*)malloc((size_t)n * sizeof(u64));
  if (!low) return 1;
  u64* high = (u64*)out;  /* the "hi" words go where their coefficients will */
  const interval_args m = {high, low, width, (((1ULL << 63) % width) * 2) % width, lo, n, out};
  parted_args a = {{pre_hi, pre_lo}, {len_hi, len_lo}, {high, low}, {1, 1}, 2, seed, seed_len, n,
                   0, interval_range, &m};  /* out[i] after high[i] only */
  const int status = parted_run(&a);
  free(low);
  return status ? 2 : 0;
}

/* sparse_ternary(h) from the "positions" and "signs" parts, then ren_cpu_map_sparse.  Returns 0,
   1 when out of memory, 2 when an input is too long. */
int ren_cpu_sample_sparse(const u8* pre_pos, i64 len_pos, const u8* pre_sign, i64 len_sign,
                          const u8* seed, i64 seed_len, i64 h, i64 n, i64* out) {
  if (n <= 0) return 0;
  u64* keys = (u64*)malloc((size_t)n * sizeof(u64));
  u64* signs = (u64*)malloc((size_t)(h > 0 ? h : 1) * sizeof(u64));
  if (!keys || !signs) {
    free(keys);
    free(signs);
    return 1;
  }
  parted_args a = {{pre_pos, NULL}, {len_pos, 0}, {keys, NULL}, {1, 0}, 1, seed, seed_len, n,
                   0, NULL, NULL};
  parted_args b = {{pre_sign, NULL}, {len_sign, 0}, {signs, NULL}, {1, 0}, 1, seed, seed_len, h,
                   0, NULL, NULL};
  int status = parted_run(&a) || parted_run(&b) ? 2 : 0;
  if (!status) status = ren_cpu_map_sparse(keys, signs, h, n, out);
  free(keys);
  free(signs);
  return status;
}

void ren_cpu_signed_residues_form(const i64* c, const u32* moduli, i64 L, i64 n, u32* out,
                                  int stored);

/* out (L x n, row-major): the residues c mod moduli[l] (in [0, q)) of n signed coefficients,
   ren.sampling.sample's rows of a small-coefficient node; limbs on the threads.  A limb whose
   q exceeds every |c| (ternary, Gaussian) takes c, or c + q for c < 0, with no division. */
typedef struct {
  const i64* c;
  const u32* moduli;
  i64 n;
  u32* out;
  u64 most;   /* the largest |c| */
  int stored; /* times 2^32 mod q (storage form) */
} residues_args;

static void residues_limb(const void* p, i64 l) {
  const residues_args* a = (const residues_args*)p;
  const i64* c = a->c;
  const i64 n = a->n;
  const u32 q = a->moduli[l];
  u32* row = a->out + l * n;
  if (a->stored) {  /* [c]_q R mod q, R = 2^32 mod q: a Shoup product per word */
    const u64 R = (1ULL << 32) % q, shoup = (R << 32) / q;
    for (i64 i = 0; i < n; ++i) {
      u64 v;
      if (a->most < q) {
        v = (u32)c[i] + (c[i] < 0 ? q : 0u);
      } else {
        const i64 r = c[i] % (i64)q;
        v = (u64)(r < 0 ? r + (i64)q : r);
      }
      const u64 t = v * R - ((v * shoup) >> 32) * q;
      row[i] = (u32)(t >= q ? t - q : t);
    }
  } else if (a->most < q) {
    for (i64 i = 0; i < n; ++i) row[i] = (u32)c[i] + (c[i] < 0 ? q : 0u);
  } else {
    for (i64 i = 0; i < n; ++i) {
      const i64 r = c[i] % (i64)q;
      row[i] = (u32)(r < 0 ? r + (i64)q : r);
    }
  }
}

void ren_cpu_signed_residues(const i64* c, const u32* moduli, i64 L, i64 n, u32* out) {
  ren_cpu_signed_residues_form(c, moduli, L, n, out, 0);
}

/* ren_cpu_signed_residues, in storage form (r 2^32 mod q) when `stored` */
void ren_cpu_signed_residues_form(const i64* c, const u32* moduli, i64 L, i64 n, u32* out,
                                  int stored) {
  residues_args a = {c, moduli, n, out, 0, stored};
  for (i64 i = 0; i < n; ++i) {
    const u64 v = c[i] < 0 ? -(u64)c[i] : (u64)c[i];
    a.most = v > a.most ? v : a.most;
  }
  ren_job j = {residues_limb, NULL, &a, 0, L, 0};
  const int threads = REN_SAMPLE_THREADS;
  job_share(&j, threads > 1 && L * n >= REN_PAR_MIN_WORK ? threads : 1,
            L > 1 && REN_SAMPLE_SHARE(L * n / 8));
}
