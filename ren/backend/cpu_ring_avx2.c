/* The AVX2 path of Ren's compiled ring kernels: 8 lazy butterflies at once, moduli below 2^30.

   Written for this project.  Included by cpu_ring.c (ren.backend.cpu inlines it into the
   library's source) when the library is built with AVX2 (REN_CPU_ISA=avx2, or avx512 for
   N = 16); it uses cpu_ring.c's types and scalar helpers. */
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
/* one stage with half-size t >= 8: blocks of 2t, the inner loop 8 coefficients at a time; the
   words come from sp (xp itself, or the input row in a transform's first pass: no copy pass) */
#define V_WIDE(FLY, xp, sp, t, cnt, widx)                                          \
  for (i64 i = 0; i < (cnt); ++i) {                                                \
    const v8 W = _mm256_set1_epi32((int)w[(widx) + i]);                            \
    const v8 WS = _mm256_set1_epi32((int)ws[(widx) + i]);                          \
    u32* X = (xp) + 2 * i * (t); u32* Y = X + (t);                                 \
    const u32* SX = (sp) + 2 * i * (t); const u32* SY = SX + (t);                  \
    for (i64 j = 0; j < (t); j += 8) {                                             \
      v8 a = LD(SX + j), b = LD(SY + j);                                           \
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
/* (V_T1 reads its words from sp, as V_WIDE does) */
#define V_T1(FLY, xp, sp, cnt, widx)                                               \
  for (i64 i = 0; i < (cnt); i += 8) {                                             \
    u32* p = (xp) + 2 * i; const u32* sq = (sp) + 2 * i;                           \
    const __m256 f0 = _mm256_castsi256_ps(LD(sq)), f1 = _mm256_castsi256_ps(LD(sq + 8)); \
    v8 a = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, _MM_SHUFFLE(2, 0, 2, 0)));  \
    v8 b = _mm256_castps_si256(_mm256_shuffle_ps(f0, f1, _MM_SHUFFLE(3, 1, 3, 1)));  \
    const v8 idx = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);                      \
    const v8 W = _mm256_permutevar8x32_epi32(LD(w + (widx) + i), idx);             \
    const v8 WS = _mm256_permutevar8x32_epi32(LD(ws + (widx) + i), idx);           \
    FLY(&a, &b, W, WS, vq, vq2);                                                   \
    ST(p, _mm256_unpacklo_epi32(a, b)); ST(p + 8, _mm256_unpackhi_epi32(a, b));    \
  }

/* N >= 16 and q < 2^30: output in [0, 4q) (reduced by the caller); src: the input row (x itself
   when in place), read by the first pass */
static void ntt_blocks_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n,
                            i64 m, i64 t, i64 k0, i64 k1);
static void ntt_limb_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  i64 m = 1, t = n >> 1;
  for (; 2 * t > BLK; m <<= 1, t >>= 1, src = x) { V_WIDE(v_ct, x, src, t, m, m) }
  const i64 blk = n < BLK ? n : BLK;
  ntt_blocks_avx2(x, src, w, ws, q, n, m, t, 0, n / blk);
}
/* the forward transform's blocks k0..k1-1 of BLK words (or the one block of n < BLK words) from
   stage t (half-size, t < BLK; global group count m) on; output in [0, 4q) */
static void ntt_blocks_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n,
                            i64 m, i64 t, i64 k0, i64 k1) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = k0; k < k1; ++k) {
    u32* xb = x + k * blk;
    const u32* sb = src + k * blk;  /* the input block, for the first pass over it */
    i64 mb = m, tb = t;  /* global block count and half-size at this stage */
    for (; tb >= 8; mb <<= 1, tb >>= 1, sb = xb) {
      const i64 cnt = blk / (2 * tb);
      V_WIDE(v_ct, xb, sb, tb, cnt, mb + k * cnt)
    }
    V_T4(v_ct, xb, blk / 8, mb + k * (blk / 8)) mb <<= 1;
    V_T2(v_ct, xb, blk / 4, mb + k * (blk / 4)) mb <<= 1;
    V_T1(v_ct, xb, xb, blk / 2, mb + k * (blk / 2))
  }
}
/* N >= 16 and q < 2^30: output in [0, 2q) before the N^-1 step; src: the input row (x itself
   when in place), read by the first pass */
static void intt_blocks_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n,
                             i64 k0, i64 k1);
static void intt_limb_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  const i64 blk = n < BLK ? n : BLK;
  intt_blocks_avx2(x, src, w, ws, q, n, 0, n / blk);
  i64 m = n / (2 * blk);
  for (i64 t = blk; m >= 1; m >>= 1, t <<= 1) { V_WIDE(v_gs, x, x, t, m, m) }
}
/* the inverse transform's blocks k0..k1-1 (every stage of half-size below BLK); output in
   [0, 2q) */
static void intt_blocks_avx2(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n,
                             i64 k0, i64 k1) {
  const v8 vq = _mm256_set1_epi32((int)q), vq2 = _mm256_set1_epi32((int)(2 * q));
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = k0; k < k1; ++k) {
    u32* xb = x + k * blk;
    i64 mb = n >> 1;
    V_T1(v_gs, xb, src + k * blk, blk / 2, mb + k * (blk / 2)) mb >>= 1;
    V_T2(v_gs, xb, blk / 4, mb + k * (blk / 4)) mb >>= 1;
    V_T4(v_gs, xb, blk / 8, mb + k * (blk / 8)) mb >>= 1;
    for (i64 tb = 8; 2 * tb <= blk; mb >>= 1, tb <<= 1) {
      const i64 cnt = blk / (2 * tb);
      V_WIDE(v_gs, xb, xb, tb, cnt, mb + k * cnt)
    }
  }
}
