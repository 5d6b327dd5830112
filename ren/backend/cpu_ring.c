/* Ren's compiled ring kernels for the "cpu" device (ren/backend/cpu.py).

   Written for this project.  u32 residues in Montgomery form (R = 2^32), one row of N words per
   limb; every kernel writes fully reduced words, so its output is the NumPy backend's word for
   word.  Loops are written so that GCC/Clang vectorize them (-O3 -march=native): the inner loop
   always runs over coefficients with unit stride, or over butterfly blocks with a small constant
   stride in the last NTT stages.

   Entry points share one signature, void f(void** a): a[0] the output, a[1] the input, a[2] a
   const long long* of sizes, then the call's tables (see ren/ring/kernels.py for each table).
   The plan runner ren_run_plan calls a list of such entries in one C loop (the JIT's graph
   runner).  OpenMP, when compiled in, splits the limbs over REN_CPU_THREADS threads. */
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
#ifdef _OPENMP
#define REN_PARALLEL_FOR _Pragma("omp parallel for schedule(static) num_threads(ren_threads) if(ren_threads > 1)")
#else
#define REN_PARALLEL_FOR
#endif

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


#ifdef __AVX2__
/* ---- AVX2: 8 lazy butterflies at once (moduli below 2^30) --------------------------------- */
#include <immintrin.h>
typedef __m256i v8;
static inline v8 v_mulhi(v8 a, v8 b) {  /* high halves of the eight u32 products */
  const v8 even = _mm256_srli_epi64(_mm256_mul_epu32(a, b), 32);
  const v8 odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), _mm256_srli_epi64(b, 32));
  return _mm256_blend_epi32(even, odd, 0xAA);
}
static inline v8 v_shoup(v8 y, v8 w, v8 ws, v8 q) {
  return _mm256_sub_epi32(_mm256_mullo_epi32(y, w), _mm256_mullo_epi32(v_mulhi(y, ws), q));
}
static inline void v_ct(v8* X, v8* Y, v8 w, v8 ws, v8 q, v8 q2) {
  v8 a = _mm256_min_epu32(*X, _mm256_sub_epi32(*X, q2));
  const v8 t = v_shoup(*Y, w, ws, q);
  *X = _mm256_add_epi32(a, t);
  *Y = _mm256_add_epi32(_mm256_sub_epi32(a, t), q2);
}
static inline void v_gs(v8* X, v8* Y, v8 w, v8 ws, v8 q, v8 q2) {
  const v8 a = *X, b = *Y, s = _mm256_add_epi32(a, b);
  *X = _mm256_min_epu32(s, _mm256_sub_epi32(s, q2));
  *Y = v_shoup(_mm256_add_epi32(_mm256_sub_epi32(a, b), q2), w, ws, q);
}
#define LD(p) _mm256_loadu_si256((const v8*)(p))
#define ST(p, v) _mm256_storeu_si256((v8*)(p), (v))
/* one stage with half-size t >= 8: blocks of 2t, the inner loop 8 coefficients at a time */
#define V_WIDE(FLY, xp, t, cnt, widx)                                              \
  for (i64 i = 0; i < (cnt); ++i) {                                                \
    const v8 W = _mm256_set1_epi32((int)w[(widx) + i]);                            \
    const v8 WS = _mm256_set1_epi32((int)ws[(widx) + i]);                          \
    u32* X = (xp) + 2 * i * (t); u32* Y = X + (t);                                 \
    for (i64 j = 0; j < (t); j += 8) {                                             \
      v8 a = LD(X + j), b = LD(Y + j);                                             \
      FLY(&a, &b, W, WS, vq, vq2);                                                 \
      ST(X + j, a); ST(Y + j, b);                                                  \
    }                                                                              \
  }
/* t = 4, 2, 1: 16 coefficients (two vectors) a step, split into X and Y halves by shuffles */
#define V_T4(FLY, xp, cnt, widx)                                                   \
  for (i64 i = 0; i < (cnt); i += 2) {                                             \
    u32* p = (xp) + 8 * i;                                                         \
    const v8 v0 = LD(p), v1 = LD(p + 8);                                           \
    v8 a = _mm256_permute2x128_si256(v0, v1, 0x20);                                \
    v8 b = _mm256_permute2x128_si256(v0, v1, 0x31);                                \
    const v8 W = _mm256_set_m128i(_mm_set1_epi32((int)w[(widx) + i + 1]),         \
                                  _mm_set1_epi32((int)w[(widx) + i]));             \
    const v8 WS = _mm256_set_m128i(_mm_set1_epi32((int)ws[(widx) + i + 1]),       \
                                   _mm_set1_epi32((int)ws[(widx) + i]));           \
    FLY(&a, &b, W, WS, vq, vq2);                                                   \
    ST(p, _mm256_permute2x128_si256(a, b, 0x20));                                  \
    ST(p + 8, _mm256_permute2x128_si256(a, b, 0x31));                              \
  }
#define V_T2(FLY, xp, cnt, widx)                                                   \
  for (i64 i = 0; i < (cnt); i += 4) {                                             \
    u32* p = (xp) + 4 * i;                                                         \
    const v8 v0 = LD(p), v1 = LD(p + 8);                                           \
    v8 a = _mm256_unpacklo_epi64(v0, v1), b = _mm256_unpackhi_epi64(v0, v1);       \
    const v8 idx = _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3);                      \
    const v8 W = _mm256_permutevar8x32_epi32(                                      \
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(w + (widx) + i))), idx); \
    const v8 WS = _mm256_permutevar8x32_epi32(                                     \
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(ws + (widx) + i))), idx); \
    FLY(&a, &b, W, WS, vq, vq2);                                                   \
    ST(p, _mm256_unpacklo_epi64(a, b)); ST(p + 8, _mm256_unpackhi_epi64(a, b));    \
  }
#define V_T1(FLY, xp, cnt, widx)                                                   \
  for (i64 i = 0; i < (cnt); i += 8) {                                             \
    u32* p = (xp) + 2 * i;                                                         \
    const __m256 f0 = _mm256_castsi256_ps(LD(p)), f1 = _mm256_castsi256_ps(LD(p + 8)); \
    v8 a = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, _MM_SHUFFLE(2, 0, 2, 0)));  \
    v8 b = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, _MM_SHUFFLE(3, 1, 3, 1)));  \
    const v8 idx = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);                      \
    const v8 W = _mm256_permutevar8x32_epi32(LD(w + (widx) + i), idx);             \
    const v8 WS = _mm256_permutevar8x32_epi32(LD(ws + (widx) + i), idx);           \
    FLY(&a, &b, W, WS, vq, vq2);                                                   \
    ST(p, _mm256_unpacklo_epi32(a, b)); ST(p + 8, _mm256_unpackhi_epi32(a, b));    \
  }

/* Stages whose blocks fit in BLK coefficients (16 KiB, L1-resident) run block by block: all of
   them on one block before the next block, so each block is loaded from L2 once. */
#define BLK 4096
/* N >= 16 and q < 2^30: output in [0, 4q) (reduced by the caller) */
static void ntt_limb_avx2(u32* x, const u32* w, const u32* ws, u32 q, i64 n) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  i64 m = 1, t = n >> 1;
  for (; 2 * t > BLK; m <<= 1, t >>= 1) { V_WIDE(v_ct, x, t, m, m) }
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = 0; k < n / blk; ++k) {
    u32* xb = x + k * blk;
    i64 mb = m, tb = t;  /* global block count and half-size at this stage */
    for (; tb >= 8; mb <<= 1, tb >>= 1) {
      const i64 cnt = blk / (2 * tb);
      V_WIDE(v_ct, xb, tb, cnt, mb + k * cnt)
    }
    V_T4(v_ct, xb, blk / 8, mb + k * (blk / 8)) mb <<= 1;
    V_T2(v_ct, xb, blk / 4, mb + k * (blk / 4)) mb <<= 1;
    V_T1(v_ct, xb, blk / 2, mb + k * (blk / 2))
  }
}
/* N >= 16 and q < 2^30: output in [0, 2q) before the N^-1 step */
static void intt_limb_avx2(u32* x, const u32* w, const u32* ws, u32 q, i64 n) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = 0; k < n / blk; ++k) {
    u32* xb = x + k * blk;
    i64 mb = n >> 1;
    V_T1(v_gs, xb, blk / 2, mb + k * (blk / 2)) mb >>= 1;
    V_T2(v_gs, xb, blk / 4, mb + k * (blk / 4)) mb >>= 1;
    V_T4(v_gs, xb, blk / 8, mb + k * (blk / 8)) mb >>= 1;
    for (i64 tb = 8; 2 * tb <= blk; mb >>= 1, tb <<= 1) {
      const i64 cnt = blk / (2 * tb);
      V_WIDE(v_gs, xb, tb, cnt, mb + k * cnt)
    }
  }
  i64 m = n / (2 * blk);
  for (i64 t = blk; m >= 1; m >>= 1, t <<= 1) { V_WIDE(v_gs, x, t, m, m) }
}
#define REN_AVX2 1
#else
#define REN_AVX2 0
#endif

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

#define NTT_STAGES(FLY)                                                              \
  for (; t >= 8; m <<= 1, t >>= 1)                                                   \
    for (i64 i = 0; i < m; ++i) {                                                    \
      const u32 W = w[m + i], WS = ws[m + i];                                        \
      u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;                      \
      for (i64 j = 0; j < t; ++j) FLY(X[j], Y[j], W, WS);                            \
    }                                                                                \
  /* the last stages: the loop runs over blocks, strides are constants */           \
  if (t == 4) {                                                                      \
    for (i64 i = 0; i < m; ++i) {                                                    \
      const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 8 * i;                    \
      FLY(X[0], X[4], W, WS); FLY(X[1], X[5], W, WS);                                \
      FLY(X[2], X[6], W, WS); FLY(X[3], X[7], W, WS);                                \
    }                                                                                \
    m <<= 1; t >>= 1;                                                                \
  }                                                                                  \
  if (t == 2) {                                                                      \
    for (i64 i = 0; i < m; ++i) {                                                    \
      const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 4 * i;                    \
      FLY(X[0], X[2], W, WS); FLY(X[1], X[3], W, WS);                                \
    }                                                                                \
    m <<= 1; t >>= 1;                                                                \
  }                                                                                  \
  if (t == 1) {                                                                      \
    for (i64 i = 0; i < m; ++i) {                                                    \
      const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 2 * i;                    \
      FLY(X[0], X[1], W, WS);                                                        \
    }                                                                                \
  }

static void ntt_limb(u32* restrict x, const u32* restrict w, const u32* restrict ws, u32 q,
                     i64 n) {
  const u32 q2 = 2 * q;
  i64 m = 1, t = n >> 1;
  if (q < (1u << 30)) {
#if REN_AVX2
    if (n >= 16) ntt_limb_avx2(x, w, ws, q, n); else
#endif
    { NTT_STAGES(CT_LAZY) }
    for (i64 j = 0; j < n; ++j) {  /* [0, 4q) -> [0, q) */
      u32 v = x[j]; v = umin(v, v - q2); x[j] = umin(v, v - q);
    }
  } else {
    NTT_STAGES(CT_EXACT)
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
    if (n >= 2) {                                                                    \
      for (i64 i = 0; i < m; ++i) {                                                  \
        const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 2 * i;                  \
        FLY(X[0], X[1], W, WS);                                                      \
      }                                                                              \
      m >>= 1;                                                                       \
    }                                                                                \
    if (n >= 4) {                                                                    \
      for (i64 i = 0; i < m; ++i) {                                                  \
        const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 4 * i;                  \
        FLY(X[0], X[2], W, WS); FLY(X[1], X[3], W, WS);                              \
      }                                                                              \
      m >>= 1;                                                                       \
    }                                                                                \
    if (n >= 8) {                                                                    \
      for (i64 i = 0; i < m; ++i) {                                                  \
        const u32 W = w[m + i], WS = ws[m + i]; u32* X = x + 8 * i;                  \
        FLY(X[0], X[4], W, WS); FLY(X[1], X[5], W, WS);                              \
        FLY(X[2], X[6], W, WS); FLY(X[3], X[7], W, WS);                              \
      }                                                                              \
      m >>= 1;                                                                       \
    }                                                                                \
    for (i64 t = 8; m >= 1; m >>= 1, t <<= 1)                                        \
      for (i64 i = 0; i < m; ++i) {                                                  \
        const u32 W = w[m + i], WS = ws[m + i];                                      \
        u32* restrict X = x + 2 * i * t; u32* restrict Y = X + t;                    \
        for (i64 j = 0; j < t; ++j) FLY(X[j], Y[j], W, WS);                          \
      }                                                                              \
  }

static void intt_limb(u32* restrict x, const u32* restrict w, const u32* restrict ws, u32 q,
                      u32 ninv, u32 ninv_s, i64 n) {
  const u32 q2 = 2 * q;
  if (q < (1u << 30)) {
#if REN_AVX2
    if (n >= 16) intt_limb_avx2(x, w, ws, q, n); else
#endif
    INTT_STAGES(GS_LAZY)
  } else {
    INTT_STAGES(GS_EXACT)
  }
  for (i64 j = 0; j < n; ++j) {  /* times N^-1, then [0, 2q) -> [0, q) */
    const u32 v = shoup(x[j], ninv, ninv_s, q);
    x[j] = umin(v, v - q);
  }
}

/* a: out, in, sizes {N, L}, q, twiddles, twiddles_shoup */
void ren_cpu_ntt(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32 *q = (const u32*)a[3], *w = (const u32*)a[4], *ws = (const u32*)a[5];
  const i64 n = sz[0], L = sz[1];
  REN_PARALLEL_FOR
  for (i64 l = 0; l < L; ++l) {
    u32* x = out + l * n;
    if (x != in + l * n) memcpy(x, in + l * n, (size_t)n * sizeof(u32));
    ntt_limb(x, w + l * n, ws + l * n, q[l], n);
  }
}

/* a: out, in, sizes {N, L}, q, inv_twiddles, inv_twiddles_shoup, n_inv, n_inv_shoup */
void ren_cpu_intt(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32 *q = (const u32*)a[3], *w = (const u32*)a[4], *ws = (const u32*)a[5];
  const u32 *ni = (const u32*)a[6], *nis = (const u32*)a[7];
  const i64 n = sz[0], L = sz[1];
  REN_PARALLEL_FOR
  for (i64 l = 0; l < L; ++l) {
    u32* x = out + l * n;
    if (x != in + l * n) memcpy(x, in + l * n, (size_t)n * sizeof(u32));
    intt_limb(x, w + l * n, ws + l * n, q[l], ni[l], nis[l], n);
  }
}

/* ---- fast basis conversion (TO_RING onto new moduli) ---------------------------------------
   a: out, in, sizes {N, L_src, L_dst}, src_q, src_qneg, qhat_inv, q, qneg, bconv, copy_from.
   Scratch y (L_src x N: y_i = [x_i * qhat_i^-1]_{q_i}, standard form) is allocated per call,
   so concurrent calls never share it. */
void ren_cpu_bconv(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32 *sq = (const u32*)a[3], *sqn = (const u32*)a[4], *qhi = (const u32*)a[5];
  const u32 *q = (const u32*)a[6], *qn = (const u32*)a[7], *bc = (const u32*)a[8];
  const i64* from = (const i64*)a[9];
  const i64 n = sz[0], LS = sz[1], LD = sz[2];
  int convert = 0;
  for (i64 d = 0; d < LD; ++d) convert |= from[d] < 0;
  u32* y = convert ? (u32*)malloc((size_t)(LS * n) * sizeof(u32)) : NULL;
  if (convert) {
    REN_PARALLEL_FOR
    for (i64 i = 0; i < LS; ++i) {
      const u32 qi = sq[i], qni = sqn[i], c = qhi[i];
      const u32* restrict xi = in + i * n;
      u32* restrict yi = y + i * n;
      for (i64 j = 0; j < n; ++j) yi[j] = montmul(xi[j], c, qi, qni);
    }
  }
  /* sum_i y_i * M[d][i] as 64-bit sums of k terms with k * max(q_i) < 2^32, so each chunk is
     below p * 2^32 and one Montgomery reduction finishes it (M < p, y_i < q_i) */
  u32 maxq = 1;
  for (i64 i = 0; i < LS; ++i) maxq = sq[i] > maxq ? sq[i] : maxq;
  i64 k = (i64)(0xFFFFFFFFu / maxq);
  if (k < 1) k = 1;
  REN_PARALLEL_FOR
  for (i64 d = 0; d < LD; ++d) {
    u32* restrict o = out + d * n;
    if (from[d] >= 0) { memcpy(o, in + from[d] * n, (size_t)n * sizeof(u32)); continue; }
    const u32 p = q[d], pn = qn[d];
    const u32* restrict row = bc + d * LS;
    for (i64 c0 = 0; c0 < LS; c0 += k) {
      const i64 c = LS - c0 < k ? LS - c0 : k;
      const u32* restrict y0 = y + c0 * n;
      const u32 m0 = row[c0];
      /* the common chunk sizes written out, so the loop over coefficients vectorizes */
#define BCONV_CHUNK(SUM)                                                         \
      for (i64 j = 0; j < n; ++j) {                                             \
        const u32 r = redc((SUM), p, pn);                                       \
        o[j] = c0 == 0 ? r : modadd(o[j], r, p);                                \
      }
      if (c == 1) {
        BCONV_CHUNK((u64)y0[j] * m0)
      } else if (c == 2) {
        const u32* restrict y1 = y0 + n; const u32 m1 = row[c0 + 1];
        BCONV_CHUNK((u64)y0[j] * m0 + (u64)y1[j] * m1)
      } else if (c == 3) {
        const u32* restrict y1 = y0 + n; const u32* restrict y2 = y1 + n;
        const u32 m1 = row[c0 + 1], m2 = row[c0 + 2];
        BCONV_CHUNK((u64)y0[j] * m0 + (u64)y1[j] * m1 + (u64)y2[j] * m2)
      } else {
        for (i64 j = 0; j < n; ++j) {
          u64 acc = 0;
          for (i64 i = 0; i < c; ++i) acc += (u64)y0[i * n + j] * row[c0 + i];
          const u32 r = redc(acc, p, pn);
          o[j] = c0 == 0 ? r : modadd(o[j], r, p);
        }
      }
#undef BCONV_CHUNK
    }
  }
  free(y);
}

/* ---- exact divide-and-round by the K trailing moduli (ren.ring.divide_round_mont) ----------
   a: out, in, sizes {N, L_src, K}, src_q, src_qneg, src_r2, half, p_inv (K x L_src).
   Scratch z (L_src x N) is allocated per call. */
void ren_cpu_rescale(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32 *q = (const u32*)a[3], *qn = (const u32*)a[4], *r2 = (const u32*)a[5];
  const u32 *half = (const u32*)a[6], *pinv = (const u32*)a[7];
  const i64 n = sz[0], LS = sz[1], K = sz[2];
  u32* z = (u32*)malloc((size_t)(LS * n) * sizeof(u32));
  REN_PARALLEL_FOR
  for (i64 i = 0; i < LS; ++i) {  /* z = x + floor(P/2) */
    const u32 qi = q[i], h = half[i];
    for (i64 j = 0; j < n; ++j) z[i * n + j] = modadd(in[i * n + j], h, qi);
  }
  for (i64 s = 0; s < K; ++s) {
    const i64 jp = LS - 1 - s;  /* divide by p = q[jp], the last modulus first */
    const u32 p = q[jp], pn = qn[jp];
    u32* restrict zp = z + jp * n;
    for (i64 c = 0; c < n; ++c) zp[c] = montmul(zp[c], 1u, p, pn);  /* [z]_p, standard form */
    REN_PARALLEL_FOR
    for (i64 i = 0; i < jp; ++i) {
      const u32 qi = q[i], qni = qn[i], r2i = r2[i], pi = pinv[s * LS + i];
      u32* restrict zi = z + i * n;
      const u32* restrict r = zp;
      for (i64 c = 0; c < n; ++c) {
        /* r < 2^32 and r2i < qi, so r * r2i < qi * 2^32: one Montgomery product gives
           [r]_{qi} in Montgomery form, fully reduced, with no division */
        const u32 rm = montmul(r[c], r2i, qi, qni);
        zi[c] = montmul(modsub(zi[c], rm, qi), pi, qi, qni);
      }
    }
  }
  memcpy(out, z, (size_t)((LS - K) * n) * sizeof(u32));
  free(z);
}

/* ---- the plan runner: entries run in order, in one C loop ---------------------------------- */
typedef void (*ren_entry)(void**);
void ren_run_plan(i64 count, const ren_entry* fns, void*** args) {
  for (i64 k = 0; k < count; ++k) fns[k](args[k]);
}
