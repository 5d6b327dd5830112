/* Ren's compiled ring kernels for the "cpu" device (ren/backend/cpu.py).

   Written for this project.  u32 residues in Montgomery form (R = 2^32), one row of N words per
   limb; every kernel writes fully reduced words, so its output is the NumPy backend's word for
   word.  Loops are written so that GCC/Clang vectorize them (-O3 -march=native): the inner loop
   always runs over coefficients with unit stride, or over butterfly blocks with a small constant
   stride in the last NTT stages.

   Entry points share one signature, void f(void** a): a[0] the output, a[1] the input, a[2] a
   const long long* of sizes, then the call's tables (see ren/ring/kernels.py for each table).
   The plan runner ren_run_plan calls a list of such entries in one C loop (the JIT's graph
   runner; cpu_ring_plan.c).  The basis conversion and the rescale are cpu_ring_rns.c.  OpenMP,
   when compiled in, splits the limbs over REN_CPU_THREADS threads.

   Vector paths (REN_CPU_ISA, ren/backend/cpu_isa.py): the library is built once per path with
   that path's flags, and the NTT/INTT take the best code those flags allow: cpu_ring_avx512.c
   (__AVX512F__: N >= 32, every modulus), cpu_ring_avx2.c (__AVX2__: N >= 16, moduli below
   2^30), else the scalar loops below.  ren_cpu_vector_bits() says which was compiled in. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;

static int ren_threads = 1;
void ren_set_threads(int n) { ren_threads = n < 1 ? 1 : n; }
/* REN_PARALLEL_FOR(work): the next loop (over limbs) runs on ren_threads OpenMP threads only
   when `work` (words the loop touches, weighted by cost) reaches REN_PAR_MIN_WORK: below it
   the fork and join of a team cost more than the loop (a 2^14-word NTT limb takes ~40 us; a
   team's wake-up and barrier ~5-50 us, far more on a loaded machine).  schedule(dynamic, 1):
   a thread that starts late (descheduled by other load) takes fewer limbs instead of holding
   the whole team at the barrier.  Every iteration writes its own rows only, so the results do
   not depend on the thread count or on which thread ran which limb. */
#define REN_PAR_MIN_WORK (1LL << 15)
#ifdef _OPENMP
#define REN_PRAGMA(x) _Pragma(#x)
#define REN_PARALLEL_FOR(work)                                                       \
  REN_PRAGMA(omp parallel for schedule(dynamic, 1) num_threads(ren_threads)          \
             if(ren_threads > 1 && (work) >= REN_PAR_MIN_WORK))
#define REN_OMP(x) REN_PRAGMA(omp x)
#else
#define REN_PARALLEL_FOR(work)
#define REN_OMP(x)
#endif
int ren_cpu_parallel_min_work(void) { return (int)REN_PAR_MIN_WORK; }
#include "cpu_ring_team.c"
/* REN_IN_TEAM(): whether the kernel runs on every thread of the team ren_run_plan opened for a
   stretch of kernels (cpu_ring_team.c): its loops are then shared out by orphaned worksharing
   with `nowait` (the runner's barrier follows the kernel; ren_sync between its own phases)
   instead of forking a team of their own */
#define REN_IN_TEAM() (ren_cur_team != NULL)
/* the threads a kernel's split decisions count on: the plan team's own size inside one (every
   team thread decides alike even if ren_set_threads runs meanwhile), else ren_threads */
static i64 ren_team_threads(void) {
#ifdef _OPENMP
  if (REN_IN_TEAM()) return omp_get_num_threads();
#endif
  return ren_threads;
}

/* Whether a kernel over L limbs of n words splits each limb over the threads (coefficient
   blocks, or butterfly ranges of one NTT stage) instead of giving each thread whole limbs: when
   there are fewer limbs than threads, or an uneven count that leaves a thread idle for a large
   share of the loop (3 limbs on 2 threads: one thread does 2, the other 1): 5 L < 4 T ceil(L/T).
   A row split costs nothing more (basis conversion, elementwise kernels).  The NTT's split
   costs a barrier per pass over the stages of half-size BLK and up: on one thread at N = 2^16,
   1.13x (forward and inverse) the time of a whole limb with AVX-512 (the passes are z_ntt's
   own, shared out by butterfly range), 1.3x / 1.4x on the other paths (plain loops, one stage
   a pass), so those split only where a thread would otherwise get no limb at all (L < T).
   The words do not depend on either: every residue is computed fully reduced.  ren_split_rows:
   the same rule for a row split at any n (the basis conversion's pieces, N = 2^12 too). */
static int ren_split_rows(i64 L) {
#ifdef _OPENMP
  const i64 T = ren_team_threads();
  return T > 1 && L >= 1 && 5 * L < 4 * T * ((L + T - 1) / T);
#else
  (void)L;
  return 0;
#endif
}
static int ren_split(i64 L, i64 n) { return n >= 2 * 4096 && ren_split_rows(L); }

static inline u32 mulhi(u32 a, u32 b) { return (u32)(((u64)a * b) >> 32); }
static inline u32 umin(u32 a, u32 b) { return a < b ? a : b; }
/* x*w mod q in [0, 2q) for any u32 x (Shoup; ws = floor(w*2^32/q)) */
static inline u32 shoup(u32 x, u32 w, u32 ws, u32 q) { return x * w - mulhi(x, ws) * q; }
static inline u32 montmul(u32 a, u32 b, u32 q, u32 qn) {
  const u32 lo = a * b, hi = mulhi(a, b), m = lo * qn;
  const u32 r = hi + mulhi(m, q) + (lo != 0u);
  return umin(r, r - q);
}
/* Montgomery reduction t * 2^-32 mod q of a 64-bit t < q * 2^32 */
static inline u32 redc(u64 t, u32 q, u32 qn) {
  const u32 lo = (u32)t, m = lo * qn;
  const u32 r = (u32)(t >> 32) + mulhi(m, q) + (lo != 0u);
  return umin(r, r - q);
}
static inline u32 modadd(u32 a, u32 b, u32 q) { u32 s = a + b; return umin(s, s - q); }
static inline u32 modsub(u32 a, u32 b, u32 q) { u32 d = a - b; return umin(d, d + q); }
/* t * 2^-32 mod q of any 64-bit t (a sum of products): t = hi * 2^32 + lo gives
   hi + lo * 2^-32, i.e. REDC(hi * rq) + REDC(lo) with rq = 2^32 mod q */
static inline u32 redc64(u64 t, u32 q, u32 qn, u32 rq) {
  return modadd(montmul((u32)(t >> 32), rq, q, qn), redc((u32)t, q, qn), q);
}


/* Stages whose blocks fit in BLK coefficients (16 KiB, L1-resident) run block by block: all of
   them on one block before the next block, so each block is loaded from L2 once. */
#define BLK 4096

#ifdef __AVX2__
#include "cpu_ring_avx2.c"
#define REN_AVX2 1
#else
#define REN_AVX2 0
#endif
#ifdef __AVX512F__
#include "cpu_ring_avx512.c"
#define REN_AVX512 1
#else
#define REN_AVX512 0
#endif
#include "cpu_ring_keccak.c"
#if defined(__AVX512F__)
#include "cpu_ring_keccak_x8.c"
#elif defined(__AVX2__)
#include "cpu_ring_keccak_x4.c"
#endif
#include "cpu_ring_share.c"
#include "cpu_ring_sample.c"
#include "cpu_ring_sample_small.c"
#include "cpu_ring_to_rns.c"

/* the widest vectors the NTT of this build uses: 512, 256 or 0 (scalar) */
int ren_cpu_vector_bits(void) { return REN_AVX512 ? 512 : REN_AVX2 ? 256 : 0; }

/* whether the NTT splits (ren_split's rule for it) */
static int ren_split_ntt(i64 L, i64 n) {
  return ren_split(L, n) && (REN_AVX512 || L < ren_team_threads());
}
/* in a plan team, the NTT rows that whole rows would leave uneven over the threads (L mod T of
   L > T rows: 5 rows on 2 threads would keep one thread idle for a whole row's transform at
   the next barrier): they split as above, the rest go whole; 0 below the split's size */
static i64 ren_team_rest(i64 L, i64 n) {
  const i64 T = ren_team_threads();
  return T > 1 && L > T && n >= 2 * BLK ? L % T : 0;
}
/* for tests: 1 when rows split, 2 when the NTT splits too */
int ren_cpu_split(long long L, long long n) { return ren_split(L, n) + ren_split_ntt(L, n); }

/* ---- forward NTT: Cooley-Tukey, bit-reversed output (ren.ring.ntt's convention) ---------- */
/* Harvey's lazy butterfly: X, Y in [0, 4q) -> [0, 4q); needs 4q < 2^32. */
#define CT_LAZY(X, Y, W, WS)                                   \
  do {                                                         \
    u32 a_ = (X); a_ = umin(a_, a_ - q2);                      \
    const u32 t_ = shoup((Y), (W), (WS), q);                   \
    (X) = a_ + t_; (Y) = a_ - t_ + q2;                         \
  } while (0)
/* fully reduced butterfly for moduli >= 2^30 */
#define CT_EXACT(X, Y, W, WS)                                  \
  do {                                                         \
    const u32 a_ = (X); u32 t_ = shoup((Y), (W), (WS), q);     \
    t_ = umin(t_, t_ - q);                                     \
    (X) = modadd(a_, t_, q); (Y) = modsub(a_, t_, q);          \
  } while (0)

/* ---- the forward butterfly's own rate (benchmarks/bench_ntt.py, "in registers") ----------- */
/* `rounds` lazy Cooley-Tukey butterflies (the NTT's, for q < 2^30) on each of FLY_PAIRS
   independent pairs of this build's widest vectors (16, 8 or 1 words), with no load, store or
   shuffle in the loop: the rate the butterfly's arithmetic alone reaches on this CPU.  The
   NTT's rate against it is what the transform's memory traffic and shuffles cost, and the ratio
   of two paths' rates is what the wider path gains on the butterfly itself.  x: 2 * FLY_PAIRS
   * lanes words in [0, 4q), the X words first, then the Y words; both are written back, so a
   test can check the arithmetic.  Returns the number of butterflies done. */
#define FLY_PAIRS 8
int ren_cpu_fly_pairs(void) { return FLY_PAIRS; }
i64 ren_cpu_fly_regs(u32* x, i64 rounds, u32 q, u32 w, u32 ws) {
#if REN_AVX512
  const zq m = { Z1(q), Z1(2 * q) };
  const v16 W = Z1(w), WS = Z1(ws);
  v16 X[FLY_PAIRS], Y[FLY_PAIRS];
  for (int k = 0; k < FLY_PAIRS; ++k) {
    X[k] = ZLD(x + 16 * k); Y[k] = ZLD(x + 16 * (FLY_PAIRS + k));
  }
  for (i64 r = 0; r < rounds; ++r) {
#pragma GCC unroll 8
    for (int k = 0; k < FLY_PAIRS; ++k) z_ct(&X[k], &Y[k], W, WS, z_odd(WS), m, 0);
  }
  for (int k = 0; k < FLY_PAIRS; ++k) {
    ZST(x + 16 * k, X[k]); ZST(x + 16 * (FLY_PAIRS + k), Y[k]);
  }
  return rounds * FLY_PAIRS * 16;
#elif REN_AVX2
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  const v8 W = _mm256_set1_epi32((int)w), WS = _mm256_set1_epi32((int)ws);
  v8 X[FLY_PAIRS], Y[FLY_PAIRS];
  for (int k = 0; k < FLY_PAIRS; ++k) {
    X[k] = LD(x + 8 * k); Y[k] = LD(x + 8 * (FLY_PAIRS + k));
  }
  for (i64 r = 0; r < rounds; ++r) {
#pragma GCC unroll 8
    for (int k = 0; k < FLY_PAIRS; ++k) v_ct(&X[k], &Y[k], W, WS, vq, vq2);
  }
  for (int k = 0; k < FLY_PAIRS; ++k) {
    ST(x + 8 * k, X[k]); ST(x + 8 * (FLY_PAIRS + k), Y[k]);
  }
  return rounds * FLY_PAIRS * 8;
#else
  const u32 q2 = 2 * q;
  u32 X[FLY_PAIRS], Y[FLY_PAIRS];
  memcpy(X, x, sizeof X); memcpy(Y, x + FLY_PAIRS, sizeof Y);
  for (i64 r = 0; r < rounds; ++r)
    for (int k = 0; k < FLY_PAIRS; ++k) CT_LAZY(X[k], Y[k], w, ws);
  memcpy(x, X, sizeof X); memcpy(x + FLY_PAIRS, Y, sizeof Y);
  return rounds * FLY_PAIRS;
#endif
}

/* One stage of butterflies FLY at the constant distance T (4, 2 or 1) between partners, over the
   m blocks of 2T words: the strides are compile-time constants and the inner loop unrolls
   fully, as the long stages' runtime stride would not (NTT_STAGES, INTT_STAGES) */
#define SHORT_STAGE(FLY, T)                                                          \
  for (i64 i = 0; i < m; ++i) {                                                      \
    const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 2 * (T) * i;                \
    _Pragma("GCC unroll 4")                                                          \
    for (int j = 0; j < (T); ++j) FLY(X[j], X[j + (T)], W, WS);                      \
  }

#define NTT_STAGES(FLY)                                                              \
  for (; t >= 8; m <<= 1, t >>= 1)                                                   \
    for (i64 i = 0; i < m; ++i) {                                                    \
      const u32 W = w[m + i], WS = ws[m + i];                                        \
      u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;                      \
      for (i64 j = 0; j < t; ++j) FLY(X[j], Y[j], W, WS);                            \
    }                                                                                \
  /* the last stages: the loop runs over blocks, strides are constants */           \
  if (t == 4) { SHORT_STAGE(FLY, 4) m <<= 1; t >>= 1; }                              \
  if (t == 2) { SHORT_STAGE(FLY, 2) m <<= 1; t >>= 1; }                              \
  if (t == 1) { SHORT_STAGE(FLY, 1) }

/* x: the limb's output row; src: its input row (x itself when in place; never a partial
   overlap).  The vector paths read src in their first pass instead of copying it first. */
static void ntt_limb(u32* x, const u32* src, const u32* restrict w, const u32* restrict ws,
                     u32 q, i64 n) {
#if REN_AVX512
  if (n >= 32) { ntt_limb_avx512(x, src, w, ws, q, n); return; }
#endif
  const u32 q2 = 2 * q;
  const int lazy = q < (1u << 30);
  i64 m = 1, t = n >> 1;
#if REN_AVX2
  if (lazy && n >= 16) ntt_limb_avx2(x, src, w, ws, q, n);
  else
#endif
  {
    if (x != src) memcpy(x, src, (size_t)n * sizeof(u32));
    if (lazy) { NTT_STAGES(CT_LAZY) } else { NTT_STAGES(CT_EXACT) }
  }
  if (lazy)
    for (i64 j = 0; j < n; ++j) {  /* [0, 4q) -> [0, q) */
      u32 v = x[j]; v = umin(v, v - q2); x[j] = umin(v, v - q);
    }
}

/* ---- inverse NTT: Gentleman-Sande from the smallest butterflies, then N^-1 ----------------- */
/* lazy: X, Y in [0, 2q) -> [0, 2q) */
#define GS_LAZY(X, Y, W, WS)                                   \
  do {                                                         \
    const u32 a_ = (X), b_ = (Y);                              \
    const u32 s_ = a_ + b_;                                    \
    (X) = umin(s_, s_ - q2);                                   \
    (Y) = shoup(a_ - b_ + q2, (W), (WS), q);                   \
  } while (0)
#define GS_EXACT(X, Y, W, WS)                                  \
  do {                                                         \
    const u32 a_ = (X), b_ = (Y);                              \
    (X) = modadd(a_, b_, q);                                   \
    u32 t_ = shoup(modsub(a_, b_, q), (W), (WS), q);           \
    (Y) = umin(t_, t_ - q);                                    \
  } while (0)

#define INTT_STAGES(FLY)                                                             \
  {                                                                                  \
    i64 m = n >> 1;                                                                  \
    if (n >= 2) { SHORT_STAGE(FLY, 1) m >>= 1; }                                     \
    if (n >= 4) { SHORT_STAGE(FLY, 2) m >>= 1; }                                     \
    if (n >= 8) { SHORT_STAGE(FLY, 4) m >>= 1; }                                     \
    for (i64 t = 8; m >= 1; m >>= 1, t <<= 1)                                        \
      for (i64 i = 0; i < m; ++i) {                                                  \
        const u32 W = w[m + i], WS = ws[m + i];                                      \
        u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;                    \
        for (i64 j = 0; j < t; ++j) FLY(X[j], Y[j], W, WS);                          \
      }                                                                              \
  }

/* x, src: as for ntt_limb */
static void intt_limb(u32* x, const u32* src, const u32* restrict w, const u32* restrict ws,
                      u32 q, u32 ninv, u32 ninv_s, i64 n) {
#if REN_AVX512
  if (n >= 32) { intt_limb_avx512(x, src, w, ws, q, ninv, ninv_s, n); return; }
#endif
  const u32 q2 = 2 * q;
  const int lazy = q < (1u << 30);
#if REN_AVX2
  if (lazy && n >= 16) intt_limb_avx2(x, src, w, ws, q, n);
  else
#endif
  {
    if (x != src) memcpy(x, src, (size_t)n * sizeof(u32));
    if (lazy) INTT_STAGES(GS_LAZY) else INTT_STAGES(GS_EXACT)
  }
  for (i64 j = 0; j < n; ++j) {  /* times N^-1, then [0, 2q) -> [0, q) */
    const u32 v = shoup(x[j], ninv, ninv_s, q);
    x[j] = umin(v, v - q);
  }
}

/* ---- one limb over several threads (ren_split; n >= 2 BLK) ----------------------------------
   Forward: the stages of half-size BLK and up run over the whole limb set as butterfly ranges
   of SPLIT_CHUNK (an `omp for` each, its barrier the stage boundary), fully reduced; then every
   block of BLK words finishes on its own (ntt_blocks: the path's own block code).  Inverse: the
   blocks first, then the large stages the same way, the last one times N^-1.  Called by every
   thread of a parallel region: the `omp for` loops share the work out. */
#define SPLIT_CHUNK 2048

/* blocks k0..k1-1 of a forward transform whose stages of half-size BLK and up are done (the
   words in [0, q)): the remaining stages, output fully reduced */
static void ntt_blocks(u32* x, const u32* restrict w, const u32* restrict ws, u32 q, i64 n,
                       i64 k0, i64 k1) {
#if REN_AVX512
  ntt_blocks_avx512(x, w, ws, q, n, k0, k1);
#else
  const u32 q2 = 2 * q;
  const int lazy = q < (1u << 30);
#if REN_AVX2
  if (lazy) ntt_blocks_avx2(x, x, w, ws, q, n, n / BLK, BLK / 2, k0, k1);
  else
#endif
  for (i64 k = k0; k < k1; ++k)
    for (i64 m = n / BLK, t = BLK / 2; t >= 1; m <<= 1, t >>= 1) {
      const i64 cnt = BLK / (2 * t);
      for (i64 i = k * cnt; i < (k + 1) * cnt; ++i) {
        const u32 W = w[m + i], WS = ws[m + i];
        u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;
        if (lazy) for (i64 j = 0; j < t; ++j) CT_LAZY(X[j], Y[j], W, WS);
        else for (i64 j = 0; j < t; ++j) CT_EXACT(X[j], Y[j], W, WS);
      }
    }
  if (lazy)
    for (i64 j = k0 * BLK; j < k1 * BLK; ++j) {  /* [0, 4q) -> [0, q) */
      u32 v = x[j]; v = umin(v, v - q2); x[j] = umin(v, v - q);
    }
#endif
}

/* blocks k0..k1-1 of an inverse transform: every stage of half-size below BLK, reading src;
   output in [0, 2q) */
static void intt_blocks(u32* x, const u32* src, const u32* restrict w, const u32* restrict ws,
                        u32 q, i64 n, i64 k0, i64 k1) {
#if REN_AVX512
  intt_blocks_avx512(x, src, w, ws, q, n, k0, k1);
#else
  const u32 q2 = 2 * q;
  const int lazy = q < (1u << 30);
#if REN_AVX2
  if (lazy) intt_blocks_avx2(x, src, w, ws, q, n, k0, k1);
  else
#endif
  for (i64 k = k0; k < k1; ++k) {
    if (x != src) memcpy(x + k * BLK, src + k * BLK, BLK * sizeof(u32));
    for (i64 m = n >> 1, t = 1; t < BLK; m >>= 1, t <<= 1) {
      const i64 cnt = BLK / (2 * t);
      for (i64 i = k * cnt; i < (k + 1) * cnt; ++i) {
        const u32 W = w[m + i], WS = ws[m + i];
        u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;
        if (lazy) for (i64 j = 0; j < t; ++j) GS_LAZY(X[j], Y[j], W, WS);
        else for (i64 j = 0; j < t; ++j) GS_EXACT(X[j], Y[j], W, WS);
      }
    }
  }
#endif
}

static void ntt_split(u32* out, const u32* in, const i64 n, const i64 L, const u32* qs,
                      const u32* const* w, const u32* const* ws) {
  const i64 per = (n >> 1) / SPLIT_CHUNK, blocks = n / BLK;
#if REN_AVX512
  /* z_ntt's passes (two stages a pass while t > BLK), shared out by group and butterfly range */
  const u32* from = in;
  for (i64 m = 1, t = n >> 1; 2 * t > BLK; from = out) {
    const int pair = t > BLK;
    const i64 span = pair ? t >> 1 : t, chunk = span < SPLIT_CHUNK ? span : SPLIT_CHUNK;
    const i64 parts = span / chunk, tasks = m * parts;
    REN_OMP(for schedule(static) nowait)
    for (i64 k = 0; k < L * tasks; ++k) {
      const i64 l = k / tasks, r = k % tasks, j0 = (r % parts) * chunk;
      ntt_pass_avx512(out + l * n, from + l * n, w[l], ws[l], qs[l], m, t, pair, r / parts, j0,
                      j0 + chunk);
    }
    ren_sync();
    if (pair) { m <<= 2; t >>= 2; } else { m <<= 1; t >>= 1; }
  }
  (void)per;
#else
  for (i64 m = 1, t = n >> 1; t >= BLK; m <<= 1, t >>= 1) {
    const u32* src = m == 1 ? in : out;
    REN_OMP(for schedule(static) nowait)
    for (i64 k = 0; k < L * per; ++k) {
      const i64 l = k / per, b = (k % per) * SPLIT_CHUNK, i = b / t, j0 = b % t;
      const u32 q = qs[l], W = w[l][m + i], WS = ws[l][m + i];
      const u32* restrict SX = src + l * n + 2 * i * t + j0;
      const u32* restrict SY = SX + t;
      u32* restrict X = out + l * n + 2 * i * t + j0;
      u32* restrict Y = X + t;
      for (i64 j = 0; j < SPLIT_CHUNK; ++j) {
        u32 a = SX[j], y = SY[j];
        CT_EXACT(a, y, W, WS);
        X[j] = a; Y[j] = y;
      }
    }
    ren_sync();
  }
#endif
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 k = 0; k < L * blocks; ++k) {
    const i64 l = k / blocks, kb = k % blocks;
    ntt_blocks(out + l * n, w[l], ws[l], qs[l], n, kb, kb + 1);
  }
}

static void intt_split(u32* out, const u32* in, const i64 n, const i64 L, const u32* qs,
                       const u32* const* w, const u32* const* ws, const u32* ni,
                       const u32* nis) {
  const i64 per = (n >> 1) / SPLIT_CHUNK, blocks = n / BLK;
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 k = 0; k < L * blocks; ++k) {
    const i64 l = k / blocks, kb = k % blocks;
    intt_blocks(out + l * n, in + l * n, w[l], ws[l], qs[l], n, kb, kb + 1);
  }
  ren_sync();
#if REN_AVX512
  /* z_intt's passes (two stages a pass while two are left), shared out likewise */
  for (i64 m = n / (2 * BLK), t = BLK; m >= 1;) {
    const int pair = m >= 2;
    const i64 chunk = t < SPLIT_CHUNK ? t : SPLIT_CHUNK, parts = t / chunk;
    const i64 tasks = (pair ? m / 2 : m) * parts;
    REN_OMP(for schedule(static) nowait)
    for (i64 k = 0; k < L * tasks; ++k) {
      const i64 l = k / tasks, r = k % tasks, j0 = (r % parts) * chunk;
      intt_pass_avx512(out + l * n, w[l], ws[l], qs[l], ni[l], nis[l], m, t, pair, r / parts, j0,
                       j0 + chunk);
    }
    if (pair) { m >>= 2; t <<= 2; } else { m >>= 1; t <<= 1; }
    if (m >= 1) ren_sync();
  }
  (void)per;
#else
  for (i64 m = n / (2 * BLK), t = BLK; m >= 1; m >>= 1, t <<= 1) {
    REN_OMP(for schedule(static) nowait)
    for (i64 k = 0; k < L * per; ++k) {
      const i64 l = k / per, b = (k % per) * SPLIT_CHUNK, i = b / t, j0 = b % t;
      const u32 q = qs[l], W = w[l][m + i], WS = ws[l][m + i];
      u32* restrict X = out + l * n + 2 * i * t + j0;
      u32* restrict Y = X + t;
      if (m > 1) {
        for (i64 j = 0; j < SPLIT_CHUNK; ++j) {  /* [0, 2q) in, [0, q) out */
          u32 a = X[j], y = Y[j];
          a = umin(a, a - q); y = umin(y, y - q);
          GS_EXACT(a, y, W, WS);
          X[j] = a; Y[j] = y;
        }
      } else {  /* the last stage, then N^-1 */
        const u32 nv = ni[l], nvs = nis[l];
        for (i64 j = 0; j < SPLIT_CHUNK; ++j) {
          u32 a = X[j], y = Y[j];
          a = umin(a, a - q); y = umin(y, y - q);
          GS_EXACT(a, y, W, WS);
          a = shoup(a, nv, nvs, q); y = shoup(y, nv, nvs, q);
          X[j] = umin(a, a - q); Y[j] = umin(y, y - q);
        }
      }
    }
    if (m > 1) ren_sync();
  }
#endif
}

/* a: out, in, sizes {N, L}, q, twiddle rows, Shoup rows (a pointer per limb to its modulus' own
   row of N words: rows are shared between calls, not stacked per limb set) */
void ren_cpu_ntt(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32* q = (const u32*)a[3];
  const u32* const* w = (const u32* const*)a[4];
  const u32* const* ws = (const u32* const*)a[5];
  const i64 n = sz[0], L = sz[1];
  if (ren_split_ntt(L, n)) {
    if (REN_IN_TEAM()) { ntt_split(out, in, n, L, q, w, ws); return; }
    REN_OMP(parallel num_threads(ren_threads))
    ntt_split(out, in, n, L, q, w, ws);
    return;
  }
  if (REN_IN_TEAM()) {  /* the rows that do not share out evenly first, split; then whole rows */
    const i64 r = ren_team_rest(L, n), l0 = L - r;
    if (r > 0) ntt_split(out + l0 * n, in + l0 * n, n, r, q + l0, w + l0, ws + l0);
    REN_OMP(for schedule(dynamic, 1) nowait)
    for (i64 l = 0; l < l0; ++l) ntt_limb(out + l * n, in + l * n, w[l], ws[l], q[l], n);
    return;
  }
  REN_PARALLEL_FOR(L > 1 ? L * n * 4 : 0)  /* log2(n) butterfly passes per word: weighted x4 */
  for (i64 l = 0; l < L; ++l) {
    ntt_limb(out + l * n, in + l * n, w[l], ws[l], q[l], n);
  }
}

/* a: out, in, sizes {N, L}, q, inverse twiddle rows, Shoup rows (pointers per limb, as for
   ren_cpu_ntt), n_inv, n_inv_shoup */
void ren_cpu_intt(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32* q = (const u32*)a[3];
  const u32* const* w = (const u32* const*)a[4];
  const u32* const* ws = (const u32* const*)a[5];
  const u32 *ni = (const u32*)a[6], *nis = (const u32*)a[7];
  const i64 n = sz[0], L = sz[1];
  if (ren_split_ntt(L, n)) {
    if (REN_IN_TEAM()) { intt_split(out, in, n, L, q, w, ws, ni, nis); return; }
    REN_OMP(parallel num_threads(ren_threads))
    intt_split(out, in, n, L, q, w, ws, ni, nis);
    return;
  }
  if (REN_IN_TEAM()) {  /* as the forward transform */
    const i64 r = ren_team_rest(L, n), l0 = L - r;
    if (r > 0)
      intt_split(out + l0 * n, in + l0 * n, n, r, q + l0, w + l0, ws + l0, ni + l0, nis + l0);
    REN_OMP(for schedule(dynamic, 1) nowait)
    for (i64 l = 0; l < l0; ++l)
      intt_limb(out + l * n, in + l * n, w[l], ws[l], q[l], ni[l], nis[l], n);
    return;
  }
  REN_PARALLEL_FOR(L > 1 ? L * n * 4 : 0)
  for (i64 l = 0; l < L; ++l) {
    intt_limb(out + l * n, in + l * n, w[l], ws[l], q[l], ni[l], nis[l], n);
  }
}

#include "cpu_ring_rns.c"
#include "cpu_ring_plan.c"
