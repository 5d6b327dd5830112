/* ren.sampling's small-coefficient distributions in C (ternary, uniform on an interval, sparse
   ternary, Gaussian) and their residues mod each q_i: the "cpu" device's samplers.

   Written for this project.  Included by cpu_ring.c after cpu_ring_sample.c, whose thread
   counts (REN_SAMPLE_THREADS), KECCAK_WAYS and permutation it uses, and after
   cpu_ring_share.c (job_share, the board). */

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
    for (int j = 0; j < count; ++j) lane_absorb(s, KECCAK_WAYS, j, SHAKE256_RATE, msg[j], len[j]);
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

/* the streams one task of the parted sampler squeezes: the vector path's lanes, and two on the
   scalar path (one after another), so that a task of two purposes still holds a whole part */
#define PARTED_WAYS (KECCAK_WAYS > 1 ? KECCAK_WAYS : 2)

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
  u8 msg[PARTED_WAYS][REN_SAMPLE_MAX_INPUT];
  i64 len[PARTED_WAYS];
  lane_out o[PARTED_WAYS];
  const i64 first = t * a->parts_per_task, parts = (a->n + REN_PART - 1) / REN_PART;
  const i64 last = first + a->parts_per_task < parts ? first + a->parts_per_task : parts;
  int count = 0;
  for (i64 k = first; k < last; ++k)
    for (int q = 0; q < a->purposes; ++q, ++count) {
      len[count] = stream_message(msg[count], a->prefix[q], a->prefix_len[q], k, a->seed,
                                  a->seed_len);
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
  a->parts_per_task = PARTED_WAYS / a->purposes;
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

/* coefficient i from its x (a tie to the caller, or clip(rint(x))) */
static inline void gauss_put(gauss_args* a, i64 i, double x) {
  const double sigma = a->sigma;
  const i64 bound = a->bound;
  if (fabs(x - floor(x) - 0.5) <= a->tie_eps * (1.0 + fabs(x) + sigma)) {
    const i64 t = __atomic_fetch_add(&a->nties, 1, __ATOMIC_RELAXED);
    if (t < a->max_ties) a->ties[t] = i;
    a->out[i] = 0;
    return;
  }
  const double k = rint(x);
  a->out[i] = k < (double)-bound ? -bound : k > (double)bound ? bound : (i64)k;
}

/* The Gaussian's log and cos, eight at a time: glibc's vector math library (libmvec, AVX-512
   variants, at most 4 ulp from the correctly rounded value), looked up when first needed.
   One Gaussian at N = 2^16 is 2 x 65536 libm calls, most of its sampler's ~2.1 ms on one
   thread (~0.8 ms with the vector calls) and ~75 % of encryption's sampling.  The values differ
   from libm's (and NumPy's) in the last bits at most, ~1e-16 relative, far inside the TIE_EPS
   margin
   that already sends a coefficient near a rounding tie to NumPy: the coefficients are the
   same.  Without libmvec (another libc, no AVX-512) the scalar loop runs. */
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__linux__)
#include <dlfcn.h>
#define REN_GAUSS_VECTOR 1
typedef __m512d (*ren_vmath8)(__m512d);
static ren_vmath8 ren_vlog8 = NULL, ren_vcos8 = NULL;
static pthread_once_t ren_vmath_once = PTHREAD_ONCE_INIT;
static int ren_gauss_vector_on = 1;  /* tests turn it off to compare the two */
static void ren_vmath_load(void) {
  void* h = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  ren_vmath8 lg = (ren_vmath8)dlsym(h, "_ZGVeN8v_log"), cs = (ren_vmath8)dlsym(h, "_ZGVeN8v_cos");
  if (lg && cs) {
    ren_vlog8 = lg;
    ren_vcos8 = cs;
  }
}
static int gauss_vector(void) {
  if (!ren_gauss_vector_on) return 0;
  pthread_once(&ren_vmath_once, ren_vmath_load);
  return ren_vlog8 != NULL;
}
#else
#define REN_GAUSS_VECTOR 0
static int ren_gauss_vector_on = 1;
static int gauss_vector(void) { return 0; }
#endif
/* whether the Gaussian's vector log and cos run (1), or libm's scalar ones (0); on = 0 / 1
   turns them off / on (a test's comparison), -1 only asks */
int ren_cpu_gauss_vector(int on) {
  if (on >= 0) ren_gauss_vector_on = on != 0;
  return gauss_vector();
}

static void gauss_range(const void* p, i64 start, i64 end) {
  gauss_args* a = (gauss_args*)p;  /* nties only, atomically */
  const double two_pi = 2.0 * M_PI, sigma = a->sigma;
  i64 i = start;
#if REN_GAUSS_VECTOR
  if (gauss_vector()) {
    /* the scalar loop's operations in its order, each correctly rounded as there (the u's are
       exact: w >> 11 < 2^53 converts exactly, and 2^-53 is a power of two), log and cos aside */
    const __m512d scale = _mm512_set1_pd(1.0 / GAUSS_TWO53), one = _mm512_set1_pd(1.0),
                  m2 = _mm512_set1_pd(-2.0), tp = _mm512_set1_pd(two_pi),
                  sg = _mm512_set1_pd(sigma), zero = _mm512_setzero_pd();
    double x[8] __attribute__((aligned(64)));
    for (; i + 8 <= end; i += 8) {
      const __m512i v1 = _mm512_srli_epi64(_mm512_loadu_si512((const void*)(a->w1 + i)), 11);
      const __m512i v2 = _mm512_srli_epi64(_mm512_loadu_si512((const void*)(a->w2 + i)), 11);
      const __m512d u1 = _mm512_mul_pd(_mm512_add_pd(_mm512_cvtepu64_pd(v1), one), scale);
      const __m512d u2 = _mm512_mul_pd(_mm512_cvtepu64_pd(v2), scale);
      /* -2 log(u1) >= 0 (u1 <= 1); the max keeps a last-bit log(1) > 0 from a NaN: libm's
         -0.0 and this 0 both give x = +-0, coefficient 0 */
      const __m512d radius = _mm512_sqrt_pd(_mm512_max_pd(_mm512_mul_pd(m2, ren_vlog8(u1)),
                                                          zero));
      const __m512d c = ren_vcos8(_mm512_mul_pd(tp, u2));
      _mm512_store_pd(x, _mm512_mul_pd(_mm512_mul_pd(radius, c), sg));
      for (int k = 0; k < 8; ++k) gauss_put(a, i + k, x[k]);
    }
  }
#endif
  for (; i < end; ++i) {
    const double radius = sqrt(-2.0 * log(((double)(a->w1[i] >> 11) + 1.0) / GAUSS_TWO53));
    const double x = radius * cos(two_pi * ((double)(a->w2[i] >> 11) / GAUSS_TWO53)) * sigma;
    gauss_put(a, i, x);
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

/* c mod q in [0, q); `small`: |c| < q, so no division */
static inline u32 signed_residue(i64 c, u32 q, int small) {
  if (small) return (u32)c + (c < 0 ? q : 0u);
  const i64 r = c % (i64)q;
  return (u32)(r < 0 ? r + (i64)q : r);
}

/* The storage-form residues of small coefficients c[0..n) into row (aligned to the vector and n
   a multiple of a tile), a tile of RESIDUE_TILE words at a time: computed in L1, then written
   with streaming stores.  A sample's rows (11 MiB at 44 limbs of 2^16) are read only after
   the other leaves' samples, so a plain store's read for ownership of every line was pure
   traffic: in the op, ternary and Gaussian samplers at 44 limbs of 2^16 spent 0.1-0.3 ms less
   CPU a leaf.  Returns 0 (nothing written) where the build has no streaming store or the row
   does not fit the tiles. */
#define RESIDUE_TILE 1024
static int stream_tiles(u32* row, const i64* c, i64 n, u32 q, storage_factor f) {
#if defined(__AVX512F__) || defined(__AVX2__)
#if defined(__AVX512F__)
  const uintptr_t align = 64;
#else
  const uintptr_t align = 32;
#endif
  if (((uintptr_t)row & (align - 1)) != 0 || n % RESIDUE_TILE != 0) return 0;
  u32 tile[RESIDUE_TILE] __attribute__((aligned(64)));
  for (i64 b = 0; b < n; b += RESIDUE_TILE) {
    for (i64 i = 0; i < RESIDUE_TILE; ++i)
      tile[i] = to_storage_narrow(signed_residue(c[b + i], q, 1), f, q);
#if defined(__AVX512F__)
    for (i64 i = 0; i < RESIDUE_TILE; i += 16)
      _mm512_stream_si512((void*)(row + b + i), _mm512_load_si512((const void*)(tile + i)));
#else
    for (i64 i = 0; i < RESIDUE_TILE; i += 8)
      _mm256_stream_si256((__m256i*)(row + b + i), _mm256_load_si256((const __m256i*)(tile + i)));
#endif
  }
  _mm_sfence();  /* the streamed words are visible before the job's end says so */
  return 1;
#else
  (void)row, (void)c, (void)n, (void)q, (void)f;
  return 0;
#endif
}

static void residues_limb(const void* p, i64 l) {
  const residues_args* a = (const residues_args*)p;
  const i64* c = a->c;
  const i64 n = a->n;
  const u32 q = a->moduli[l];
  const int small = a->most < q;
  u32* row = a->out + l * n;
  /* one loop per case, each with `small` a constant: the common one (small, standard form)
     stays a plain vectorizable add */
  if (a->stored) {
    const storage_factor f = storage_factor_of(q);
    if (small && REN_STORAGE_NARROW(q)) {  /* the common case: 32-bit lanes throughout */
      if (stream_tiles(row, c, n, q, f)) return;
      for (i64 i = 0; i < n; ++i) row[i] = to_storage_narrow(signed_residue(c[i], q, 1), f, q);
    } else if (small)
      for (i64 i = 0; i < n; ++i) row[i] = to_storage(signed_residue(c[i], q, 1), f, q);
    else
      for (i64 i = 0; i < n; ++i) row[i] = to_storage(signed_residue(c[i], q, 0), f, q);
  } else if (small) {
    for (i64 i = 0; i < n; ++i) row[i] = signed_residue(c[i], q, 1);
  } else {
    for (i64 i = 0; i < n; ++i) row[i] = signed_residue(c[i], q, 0);
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
