/* The AVX-512 path of Ren's compiled ring kernels: 16 lazy butterflies at once, N >= 32.

   Written for this project.  Included by cpu_ring.c (ren.backend.cpu inlines it into the
   library's source) when the library is built for REN_CPU_ISA=avx512 (-mavx512f ...); it uses
   cpu_ring.c's types and BLK.

   Two word ranges, chosen per limb:
   * q < 2^30: Harvey's butterflies, words in [0, 4q) (forward) / [0, 2q) (inverse), as on AVX2;
   * 2^30 <= q < 2^31 (which the AVX2 path leaves to scalar code): words stay in [0, 2q) < 2^32,
     at the price of one more min per butterfly.
   The stages over large blocks run two at a time (radix 4: four vectors loaded, two butterfly
   stages in registers, four stored), which halves the loads and stores; the four stages of
   half-size 8, 4, 2, 1 shuffle 32 words across two vectors with vpermt2d, a stage at a time,
   into layouts whose twiddles are one broadcast load.  The forward transform fully reduces its
   words in its last stage, the inverse in its N^-1 step.  The first pass of a transform reads
   the input row, so an out-of-place call needs no copy pass. */
#include <immintrin.h>
typedef __m512i v16;
#define ZLD(p) _mm512_loadu_si512((const void*)(p))
#define ZST(p, v) _mm512_storeu_si512((void*)(p), (v))
#define ZINLINE static inline __attribute__((always_inline))

ZINLINE v16 z_min(v16 a, v16 b) { return _mm512_min_epu32(a, b); }
ZINLINE v16 z_sub(v16 a, v16 b) { return _mm512_sub_epi32(a, b); }
ZINLINE v16 z_add(v16 a, v16 b) { return _mm512_add_epi32(a, b); }
/* high halves of the sixteen u32 products a * b; bo holds b's odd lanes in the even ones (b >> 32
   per 64-bit lane), which the caller often has for free (hoisted out of a loop, or loaded) */
ZINLINE v16 z_mulhi(v16 a, v16 b, v16 bo) {
  const v16 even = _mm512_mul_epu32(a, b);  /* lane 2k's high half sits in word 2k + 1 */
  const v16 odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), bo);
  /* one masked word swap moves even's high halves down into the even lanes of odd's (where
     AVX2 needs a shift and a blend) */
  return _mm512_mask_shuffle_epi32(odd, (__mmask16)0x5555, even, _MM_PERM_CDAB);
}
ZINLINE v16 z_odd(v16 v) { return _mm512_srli_epi64(v, 32); }
/* y*w mod q in [0, 2q) for any u32 y (Shoup; ws = floor(w 2^32 / q), wso = z_odd(ws)) */
ZINLINE v16 z_shoup(v16 y, v16 w, v16 ws, v16 wso, v16 q) {
  return z_sub(_mm512_mullo_epi32(y, w), _mm512_mullo_epi32(z_mulhi(y, ws, wso), q));
}

/* The modulus of a limb: q, the lazy bound r (2q when q < 2^30, else q), and big = q >= 2^30
   (a constant in each specialization, so the branches below vanish). */
typedef struct { v16 q, r; } zq;

/* Cooley-Tukey: q < 2^30: X, Y in [0, 4q) -> [0, 4q); big: X in [0, 2q) -> [0, 2q) */
ZINLINE void z_ct(v16* X, v16* Y, v16 w, v16 ws, v16 wso, zq m, int big) {
  const v16 a = z_min(*X, z_sub(*X, m.r));
  v16 t = z_shoup(*Y, w, ws, wso, m.q);
  if (big) t = z_min(t, z_sub(t, m.q));
  *X = z_add(a, t);
  *Y = z_add(z_sub(a, t), m.r);
}
/* Gentleman-Sande: X, Y in [0, 2q) -> [0, 2q) */
ZINLINE void z_gs(v16* X, v16* Y, v16 w, v16 ws, v16 wso, zq m, int big) {
  v16 a = *X, b = *Y;
  if (big) { a = z_min(a, z_sub(a, m.q)); b = z_min(b, z_sub(b, m.q)); }
  const v16 s = z_add(a, b);
  *X = big ? s : z_min(s, z_sub(s, m.r));
  *Y = z_shoup(z_add(z_sub(a, b), m.r), w, ws, wso, m.q);
}
/* the forward transform's last butterfly: as z_ct, but both words come out fully reduced (a
   and t are reduced before they are combined: one uop fewer than reducing X and Y after) */
ZINLINE void z_ct_last(v16* X, v16* Y, v16 w, v16 ws, v16 wso, zq m, int big) {
  v16 a = z_min(*X, z_sub(*X, m.r));  /* [0, 2q) (big: [0, q)) */
  if (!big) a = z_min(a, z_sub(a, m.q));
  v16 t = z_shoup(*Y, w, ws, wso, m.q);
  t = z_min(t, z_sub(t, m.q));  /* [0, q) */
  const v16 s = z_add(a, t), d = z_sub(a, t);
  *X = z_min(s, z_sub(s, m.q));
  *Y = z_min(d, z_add(d, m.q));  /* a < t: d wrapped, d + q is the word */
}
ZINLINE void z_fly(v16* X, v16* Y, v16 w, v16 ws, v16 wso, zq m, int big, int gs) {
  if (gs) z_gs(X, Y, w, ws, wso, m, big); else z_ct(X, Y, w, ws, wso, m, big);
}
#define Z1(p) _mm512_set1_epi32((int)(p))

/* The inverse transform's last butterfly also multiplies by N^-1: X = (a + b) N^-1 and
   Y = (a - b) (w N^-1), with the merged twiddle w N^-1 and its Shoup constant made once per
   limb, so no pass of its own is needed; both come out fully reduced. */
typedef struct { v16 ni, nis, wl, wls; } zlast;
ZINLINE void z_gs_last(v16* X, v16* Y, const zlast* L, zq m, int big) {
  v16 a = *X, b = *Y;
  if (big) { a = z_min(a, z_sub(a, m.q)); b = z_min(b, z_sub(b, m.q)); }
  const v16 x = z_shoup(z_add(a, b), L->ni, L->nis, z_odd(L->nis), m.q);  /* [0, 2q) out */
  const v16 y = z_shoup(z_add(z_sub(a, b), m.r), L->wl, L->wls, z_odd(L->wls), m.q);
  *X = z_min(x, z_sub(x, m.q));
  *Y = z_min(y, z_sub(y, m.q));
}

/* one stage of half-size t >= 16 over cnt blocks of 2t; twiddle i of block i.  The words come
   from src (x itself, or the input row in a transform's first pass: no copy pass before it). */
/* (z_stage_r, z_stage2_r: the butterflies j0 <= j < j1 of each block only, multiples of 16:
   a share of a stage, for threads that split one limb) */
ZINLINE void z_stage_r(u32* x, const u32* src, i64 t, i64 cnt, const u32* w, const u32* ws,
                       zq m, int big, int gs, const zlast* last, i64 j0, i64 j1) {
  for (i64 i = 0; i < cnt; ++i) {
    const v16 W = Z1(w[i]), WS = Z1(ws[i]), WSO = z_odd(WS);
    u32* X = x + 2 * i * t; u32* Y = X + t;
    const u32* SX = src + 2 * i * t; const u32* SY = SX + t;
    for (i64 j = j0; j < j1; j += 16) {
      v16 a = ZLD(SX + j), b = ZLD(SY + j);
      if (last) z_gs_last(&a, &b, last, m, big); else z_fly(&a, &b, W, WS, WSO, m, big, gs);
      ZST(X + j, a); ZST(Y + j, b);
    }
  }
}
ZINLINE void z_stage(u32* x, const u32* src, i64 t, i64 cnt, const u32* w, const u32* ws, zq m,
                     int big, int gs, const zlast* last) {
  z_stage_r(x, src, t, cnt, w, ws, m, big, gs, last, 0, t);
}
/* two stages over cnt blocks of 2t (t >= 32): the stage of half-size t (twiddles w1[i]) and
   the one of half-size t/2 (twiddles w2[2i], w2[2i+1]); forward runs t first, inverse t/2;
   the words come from src, as in z_stage */
ZINLINE void z_stage2_r(u32* x, const u32* src, i64 t, i64 cnt, const u32* w1,
                        const u32* ws1, const u32* w2, const u32* ws2, zq m, int big, int gs,
                        const zlast* last, i64 j0, i64 j1) {
  const i64 h = t >> 1;
  for (i64 i = 0; i < cnt; ++i) {
    const v16 W = Z1(w1[i]), WS = Z1(ws1[i]), WSO = z_odd(WS);
    const v16 W0 = Z1(w2[2 * i]), WS0 = Z1(ws2[2 * i]), WSO0 = z_odd(WS0);
    const v16 W1 = Z1(w2[2 * i + 1]), WS1 = Z1(ws2[2 * i + 1]), WSO1 = z_odd(WS1);
    u32* A = x + 2 * i * t;
    const u32* S = src + 2 * i * t;
    for (i64 j = j0; j < j1; j += 16) {
      v16 a = ZLD(S + j), b = ZLD(S + j + h), c = ZLD(S + j + t), d = ZLD(S + j + t + h);
      if (gs) {
        z_gs(&a, &b, W0, WS0, WSO0, m, big); z_gs(&c, &d, W1, WS1, WSO1, m, big);
        if (last) { z_gs_last(&a, &c, last, m, big); z_gs_last(&b, &d, last, m, big); }
        else { z_gs(&a, &c, W, WS, WSO, m, big); z_gs(&b, &d, W, WS, WSO, m, big); }
      } else {
        z_ct(&a, &c, W, WS, WSO, m, big); z_ct(&b, &d, W, WS, WSO, m, big);
        z_ct(&a, &b, W0, WS0, WSO0, m, big); z_ct(&c, &d, W1, WS1, WSO1, m, big);
      }
      ZST(A + j, a); ZST(A + j + h, b); ZST(A + j + t, c); ZST(A + j + t + h, d);
    }
  }
}
ZINLINE void z_stage2(u32* x, const u32* src, i64 t, i64 cnt, const u32* w1, const u32* ws1,
                      const u32* w2, const u32* ws2, zq m, int big, int gs, const zlast* last) {
  z_stage2_r(x, src, t, cnt, w1, ws1, w2, ws2, m, big, gs, last, 0, t >> 1);
}

/* The four stages of half-size 8, 4, 2, 1 run on 32 words held in two vectors, in registers.
   Layout t (a stage's): the 32 words form 16 / t blocks of 2t, and lane k of the X vector holds
   word j of block b, k = j (16 / t) + b, the Y vector word j + t of it, so lane k's twiddle is
   the block's, number k mod (16 / t): the twiddles of a group are one broadcast load, with no
   permute.  Layout 0 is memory order (words 0..15, 16..31).  Between two stages one vpermt2d
   per vector moves the words from one layout to the next. */
static int z_word(int t, int l) {  /* the word lane l (0..15 X, 16..31 Y) holds in layout t */
  if (t == 0) return l;
  const int blocks = 16 / t, k = l & 15;
  return (k % blocks) * 2 * t + k / blocks + (l >= 16 ? t : 0);
}
/* the vpermt2d index taking layout `from` to the X (y = 0) or Y (y = 1) vector of layout `to`
   (to = 0: the low or high half of memory order) */
static v16 z_index(int from, int to, int y) {
  int lane_of[32], idx[16];  /* lane_of: where each word sits in layout `from` */
  for (int l = 0; l < 32; ++l) lane_of[z_word(from, l)] = l;
  for (int k = 0; k < 16; ++k) idx[k] = lane_of[z_word(to, k + 16 * y)];
  return _mm512_loadu_si512((const void*)idx);
}
typedef struct { v16 x[5], y[5]; } zsmall;  /* 5 moves, 4 stages */
static zsmall z_small_plan(int gs) {
  zsmall P;
  int layout[6] = {0, 8, 4, 2, 1, 0};
  if (gs) { layout[1] = 1; layout[2] = 2; layout[3] = 4; layout[4] = 8; }
  for (int s = 0; s < 5; ++s) {
    P.x[s] = z_index(layout[s], layout[s + 1], 0);
    P.y[s] = z_index(layout[s], layout[s + 1], 1);
  }
  return P;
}
/* 16 / t consecutive words from p, repeated over the sixteen lanes (one load, no shuffle) */
ZINLINE v16 z_repeat(const u32* p, int t) {
  switch (t) {
    case 8: { u64 v; memcpy(&v, p, 8); return _mm512_set1_epi64((long long)v); }
    case 4: return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)p));
    case 2: return _mm512_broadcast_i32x8(_mm256_loadu_si256((const __m256i*)p));
    default: return ZLD(p);
  }
}
/* stage s's twiddles for group g (16 / t of them, in the lanes of layout t); WSO: the odd
   lanes' Shoup constants in the even ones, loaded one word on (t > 1: that word is still in the
   twiddle table, the next stage's or this one's) instead of shifted */
ZINLINE void z_small_twiddles(const u32* const* w, const u32* const* ws, int s, int t, i64 g,
                              v16* W, v16* WS, v16* WSO) {
  const i64 at = g * (16 / t);
  *W = z_repeat(w[s] + at, t);
  *WS = z_repeat(ws[s] + at, t);
  *WSO = t > 1 ? z_repeat(ws[s] + at + 1, t)  /* t = 1: the even lanes of words at + 1.. */
               : _mm512_maskz_loadu_epi32((__mmask16)0x5555, ws[s] + at + 1);
}
/* one of the stages of half-size 8..1 over len words (stage s of 4: t = 8 >> s forward,
   1 << s inverse), group of 32 by group: move the words from the last stage's layout to this
   one's, one butterfly; the last stage moves them back to memory order (the forward transform
   fully reducing them first).  Stage by stage over the block rather than all four stages on
   one group: a group's four stages are one dependent chain (~100 cycles), and the groups of
   one stage are independent, which measured 3-5 % faster overall (N = 2^12, 2^16) than
   chaining them; the extra loads and stores stay in L1 and use the load/store ports.  The
   words come from src, as in z_stage. */
ZINLINE void z_small_stage(u32* x, const u32* src, i64 len, const u32* const* w,
                           const u32* const* ws, const zsmall* P, zq m, int big, int gs, int s) {
  const int t = gs ? 1 << s : 8 >> s;  /* a constant once inlined */
  for (i64 o = 0, g = 0; o < len; o += 32, ++g) {
    v16 a = ZLD(src + o), b = ZLD(src + o + 16);
    const v16 a2 = _mm512_permutex2var_epi32(a, P->x[s], b);
    b = _mm512_permutex2var_epi32(a, P->y[s], b);
    a = a2;
    v16 W, WS, WSO;
    z_small_twiddles(w, ws, s, t, g, &W, &WS, &WSO);
    if (s < 3 || gs) z_fly(&a, &b, W, WS, WSO, m, big, gs);
    else z_ct_last(&a, &b, W, WS, WSO, m, big);
    if (s < 3) {
      ZST(x + o, a); ZST(x + o + 16, b);
      continue;
    }
    ZST(x + o, _mm512_permutex2var_epi32(a, P->x[4], b));
    ZST(x + o + 16, _mm512_permutex2var_epi32(a, P->y[4], b));
  }
}
/* the stages of half-size 8..1 (forward, also fully reducing) or 1..8 (inverse) over len words,
   the first reading src; w[s], ws[s]: stage s's twiddles for these words */
ZINLINE void z_small(u32* x, const u32* src, i64 len, const u32* const* w, const u32* const* ws,
                     const zsmall* P, zq m, int big, int gs) {
  z_small_stage(x, src, len, w, ws, P, m, big, gs, 0);
  z_small_stage(x, x, len, w, ws, P, m, big, gs, 1);
  z_small_stage(x, x, len, w, ws, P, m, big, gs, 2);
  z_small_stage(x, x, len, w, ws, P, m, big, gs, 3);
}

/* the forward transform's blocks k0..k1-1 of BLK words (or the one block of n < BLK words),
   from stage t (half-size, t < BLK) on: every stage of half-size 2t and up is done; mm: that
   stage's global group count; src: the input row for the first pass (x itself when in place) */
ZINLINE void z_ntt_blocks(u32* x, const u32* src, const u32* w, const u32* ws, zq m, i64 n,
                          int big, i64 mm, i64 t, i64 k0, i64 k1) {
  const zsmall P = z_small_plan(0);
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = k0; k < k1; ++k) {
    u32* xb = x + k * blk;
    const u32* sb = src + k * blk;  /* the input block, for the first pass over it */
    i64 mb = mm, tb = t;  /* global twiddle base and half-size at this stage */
    while (tb >= 16) {
      const i64 cnt = blk / (2 * tb), base = mb + k * cnt;
      if (tb >= 32) {
        z_stage2(xb, sb, tb, cnt, w + base, ws + base, w + 2 * base, ws + 2 * base, m, big, 0,
                 NULL);
        mb <<= 2; tb >>= 2;
      } else {
        z_stage(xb, sb, tb, cnt, w + base, ws + base, m, big, 0, NULL);
        mb <<= 1; tb >>= 1;
      }
      sb = xb;
    }
    const u32 *sw[4], *sws[4];
    for (int s = 0; s < 4; ++s, mb <<= 1) {  /* t = 8, 4, 2, 1 */
      const i64 base = mb + k * (blk / (2 * (8 >> s)));
      sw[s] = w + base; sws[s] = ws + base;
    }
    z_small(xb, sb, blk, sw, sws, &P, m, big, 0);
  }
}

/* forward, N >= 32: output fully reduced; src: the input row (x itself when in place), read by
   the first pass */
ZINLINE void z_ntt(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n, int big) {
  const zq m = { Z1(q), Z1(big ? q : 2 * q) };
  i64 mm = 1, t = n >> 1;
  while (2 * t > BLK) {  /* blocks larger than BLK: over the whole limb, two stages a pass */
    if (t > BLK) {
      z_stage2(x, src, t, mm, w + mm, ws + mm, w + 2 * mm, ws + 2 * mm, m, big, 0, NULL);
      mm <<= 2; t >>= 2;
    } else {
      z_stage(x, src, t, mm, w + mm, ws + mm, m, big, 0, NULL);
      mm <<= 1; t >>= 1;
    }
    src = x;
  }
  const i64 blk = n < BLK ? n : BLK;
  z_ntt_blocks(x, src, w, ws, m, n, big, mm, t, 0, n / blk);
}

/* the inverse transform's blocks k0..k1-1 of BLK words (or the one block of n < BLK words),
   every stage of half-size below BLK (and the last ones, with L, when n <= BLK) */
ZINLINE void z_intt_blocks(u32* x, const u32* src, const u32* w, const u32* ws, zq m, i64 n,
                           int big, const zlast* Lp, i64 k0, i64 k1) {
  const zlast L = *Lp;
  const zsmall P = z_small_plan(1);
  const i64 blk = n < BLK ? n : BLK;
  for (i64 k = k0; k < k1; ++k) {
    u32* xb = x + k * blk;
    i64 mb = n >> 1;
    const u32 *sw[4], *sws[4];
    for (int s = 0; s < 4; ++s, mb >>= 1) {  /* t = 1, 2, 4, 8 */
      const i64 base = mb + k * (blk / (2 << s));
      sw[s] = w + base; sws[s] = ws + base;
    }
    z_small(xb, src + k * blk, blk, sw, sws, &P, m, big, 1);
    for (i64 tb = 16; 2 * tb <= blk;) {  /* stage tb (twiddle base mb), then 2 tb (mb / 2) */
      const i64 cnt = blk / (2 * tb), base = mb + k * cnt;
      if (4 * tb <= blk) {
        const i64 base1 = mb / 2 + k * (cnt / 2);
        const zlast* last = 4 * tb == n ? &L : NULL;
        z_stage2(xb, xb, 2 * tb, cnt / 2, w + base1, ws + base1, w + base, ws + base, m, big, 1,
                 last);
        mb >>= 2; tb <<= 2;
      } else {
        z_stage(xb, xb, tb, cnt, w + base, ws + base, m, big, 1, 2 * tb == n ? &L : NULL);
        mb >>= 1; tb <<= 1;
      }
    }
  }
}

/* inverse, N >= 32: output fully reduced, times N^-1 (in the last stage, a block of n words
   with the twiddle w[1]); src: the input row (x itself when in place), read by the first pass */
ZINLINE void z_intt(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, u32 ninv,
                    u32 ninv_s, i64 n, int big) {
  const zq m = { Z1(q), Z1(big ? q : 2 * q) };
  const u32 wl = (u32)((u64)w[1] * ninv % q);
  const zlast L = { Z1(ninv), Z1(ninv_s), Z1(wl), Z1((u32)(((u64)wl << 32) / q)) };
  const i64 blk = n < BLK ? n : BLK;
  z_intt_blocks(x, src, w, ws, m, n, big, &L, 0, n / blk);
  i64 mm = n / (2 * blk);
  for (i64 t = blk; mm >= 1;) {
    if (mm >= 2) {
      z_stage2(x, x, 2 * t, mm / 2, w + mm / 2, ws + mm / 2, w + mm, ws + mm, m, big, 1,
               mm == 2 ? &L : NULL);
      mm >>= 2; t <<= 2;
    } else {
      z_stage(x, x, t, mm, w + mm, ws + mm, m, big, 1, &L);
      mm >>= 1; t <<= 1;
    }
  }
}

static void ntt_limb_avx512(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 n) {
  if (q < (1u << 30)) z_ntt(x, src, w, ws, q, n, 0); else z_ntt(x, src, w, ws, q, n, 1);
}
static void intt_limb_avx512(u32* x, const u32* src, const u32* w, const u32* ws, u32 q,
                             u32 ninv, u32 ninv_s, i64 n) {
  if (q < (1u << 30)) z_intt(x, src, w, ws, q, ninv, ninv_s, n, 0);
  else z_intt(x, src, w, ws, q, ninv, ninv_s, n, 1);
}
/* blocks k0..k1-1 of BLK words of a limb (n >= 2 BLK) whose stages of half-size BLK and up
   are done (forward; x in [0, q)) or are left to the caller (inverse: output in [0, 2q)) */
static void ntt_blocks_avx512(u32* x, const u32* w, const u32* ws, u32 q, i64 n, i64 k0,
                              i64 k1) {
  const int big = q >= (1u << 30);
  const zq m = { Z1(q), Z1(big ? q : 2 * q) };
  if (big) z_ntt_blocks(x, x, w, ws, m, n, 1, n / BLK, BLK / 2, k0, k1);
  else z_ntt_blocks(x, x, w, ws, m, n, 0, n / BLK, BLK / 2, k0, k1);
}
static void intt_blocks_avx512(u32* x, const u32* src, const u32* w, const u32* ws, u32 q,
                               i64 n, i64 k0, i64 k1) {
  const int big = q >= (1u << 30);
  const zq m = { Z1(q), Z1(big ? q : 2 * q) };
  const zlast L = { Z1(1), Z1(0), Z1(1), Z1(0) };  /* unused: n >= 2 BLK has no last stage here */
  if (big) z_intt_blocks(x, src, w, ws, m, n, 1, &L, k0, k1);
  else z_intt_blocks(x, src, w, ws, m, n, 0, &L, k0, k1);
}

/* a share of one pass over the stages of half-size BLK and up of a split limb (cpu_ring.c's
   ntt_split / intt_split), the passes of z_ntt / z_intt: forward, stage t (group count m) and,
   when pair, t/2 with it; inverse, stage t and, when pair, 2t (then m counts the first's
   groups).  Group i of the pass, butterflies j0..j1-1 of it; the inverse's last stage times
   N^-1.  Words stay in the lazy ranges z_ntt / z_intt keep between passes. */
static void ntt_pass_avx512(u32* x, const u32* src, const u32* w, const u32* ws, u32 q, i64 m,
                            i64 t, int pair, i64 i, i64 j0, i64 j1) {
  const int big = q >= (1u << 30);
  const zq z = { Z1(q), Z1(big ? q : 2 * q) };
  u32* xi = x + 2 * i * t;
  const u32* si = src + 2 * i * t;
  const u32 *w1 = w + m + i, *ws1 = ws + m + i, *w2 = w + 2 * (m + i), *ws2 = ws + 2 * (m + i);
  if (pair) {
    if (big) z_stage2_r(xi, si, t, 1, w1, ws1, w2, ws2, z, 1, 0, NULL, j0, j1);
    else z_stage2_r(xi, si, t, 1, w1, ws1, w2, ws2, z, 0, 0, NULL, j0, j1);
  } else {
    if (big) z_stage_r(xi, si, t, 1, w + m + i, ws + m + i, z, 1, 0, NULL, j0, j1);
    else z_stage_r(xi, si, t, 1, w + m + i, ws + m + i, z, 0, 0, NULL, j0, j1);
  }
}
static void intt_pass_avx512(u32* x, const u32* w, const u32* ws, u32 q, u32 ninv, u32 ninv_s,
                             i64 m, i64 t, int pair, i64 i, i64 j0, i64 j1) {
  const int big = q >= (1u << 30);
  const zq z = { Z1(q), Z1(big ? q : 2 * q) };
  const u32 wl = (u32)((u64)w[1] * ninv % q);
  const zlast L = { Z1(ninv), Z1(ninv_s), Z1(wl), Z1((u32)(((u64)wl << 32) / q)) };
  if (pair) {  /* stages t (m groups) and 2t (m / 2 groups): block i of 4t words */
    const zlast* last = m == 2 ? &L : NULL;
    u32* xi = x + 4 * i * t;
    const u32 *w1 = w + m / 2 + i, *ws1 = ws + m / 2 + i, *w2 = w + m + 2 * i;
    const u32* ws2 = ws + m + 2 * i;
    if (big) z_stage2_r(xi, xi, 2 * t, 1, w1, ws1, w2, ws2, z, 1, 1, last, j0, j1);
    else z_stage2_r(xi, xi, 2 * t, 1, w1, ws1, w2, ws2, z, 0, 1, last, j0, j1);
  } else {
    const zlast* last = m == 1 ? &L : NULL;
    u32* xi = x + 2 * i * t;
    if (big) z_stage_r(xi, xi, t, 1, w + m + i, ws + m + i, z, 1, 1, last, j0, j1);
    else z_stage_r(xi, xi, t, 1, w + m + i, ws + m + i, z, 0, 1, last, j0, j1);
  }
}

/* ---- sums of products mod p, 16 coefficients at once (cpu_ring_rns.c's basis conversion and
   mod-down) -----------------------------------------------------------------------------------
   The scalar loops keep a block of 64-bit sums in an array (each term loads and stores it) and
   reduce every chunk of k terms (k max(x) max(c) < 2^64) with two Montgomery reductions
   (redc64), then add the chunks' residues.  Here 16 words are loaded once, their even and odd
   words multiplied in two u64 vectors, and a full sum is folded instead: t = hi 2^32 + lo ->
   hi (2^32 mod p) + lo, the same residue, below p 2^32 (<= (2^32 - 1)(p - 1) + 2^32 - 1), which
   leaves room for more terms (`k1`: two with 31-bit words); after the last term one more fold
   and ONE reduction REDC(t) = t 2^-32 mod p give the canonical residue of the whole sum times
   2^-32, what the chunks' redc64 residues add up to: the same words, in ~25 % fewer vector
   operations (the loops are bound by them, not by memory). */
typedef __m512i v8q;
#define Q1(x) _mm512_set1_epi64((long long)(x))
/* t 2^-32 mod q, canonical, for t < q 2^32 (montmul/redc in u64 lanes; qn = -q^-1 mod 2^32) */
ZINLINE v8q q_redc(v8q t, v8q q, v8q qn) {
  const v8q m = _mm512_mul_epu32(t, qn);  /* its low 32 bits: (t mod 2^32) qn mod 2^32 */
  const v8q mq = _mm512_mul_epu32(m, q);
  v8q r = _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_srli_epi64(mq, 32));
  /* t + m q = 0 mod 2^32: its low halves carry exactly when t's low half is not 0 */
  r = _mm512_mask_add_epi64(r, _mm512_test_epi64_mask(t, Q1(0xFFFFFFFFu)), r, Q1(1));
  return _mm512_min_epu64(r, _mm512_sub_epi64(r, q));  /* r < 2q */
}
/* hi 2^32 + lo -> hi rq + lo (rq = 2^32 mod p): the same residue, below p 2^32 */
ZINLINE v8q q_fold(v8q t, v8q rq) {
  return _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(t, 32), rq),
                          _mm512_and_si512(t, Q1(0xFFFFFFFFu)));
}
/* the 16 words (e's sums in the even words, o's in the odd ones) of
   (e + o terms so far + sum_{s < cnt} rows[s stride + 0..16) c[s cstride]) 2^-32 mod p,
   canonical; `room`: terms that still fit before a fold; k1: terms that fit after one */
ZINLINE v16 q_sum16(v8q e, v8q o, i64 room, const u32* rows, i64 stride, const u32* c,
                    i64 cstride, i64 cnt, i64 k1, v8q p, v8q pn, v8q rp) {
  for (i64 s = 0; s < cnt; ++s) {
    if (room == 0) { e = q_fold(e, rp); o = q_fold(o, rp); room = k1; }
    const v8q m = Q1(c[s * cstride]);
    const v16 y = ZLD(rows + s * stride);
    e = _mm512_add_epi64(e, _mm512_mul_epu32(y, m));
    o = _mm512_add_epi64(o, _mm512_mul_epu32(_mm512_srli_epi64(y, 32), m));
    --room;
  }
  e = q_redc(q_fold(e, rp), p, pn);
  o = q_redc(q_fold(o, rp), p, pn);
  return _mm512_or_si512(e, _mm512_slli_epi64(o, 32));
}
/* q_sum16 over 32 words (two groups of 16, rows[.. + 16] the second): one pass over the terms
   for both, so the loop's own work (the coefficient's broadcast, the count, the fold test) is
   shared, and four independent sums overlap their latencies */
ZINLINE void q_sum32(u32* out, v8q e0, v8q o0, v8q e1, v8q o1, i64 room, const u32* rows,
                     i64 stride, const u32* c, i64 cstride, i64 cnt, i64 k1, v8q p, v8q pn,
                     v8q rp) {
  for (i64 s = 0; s < cnt; ++s) {
    if (room == 0) {
      e0 = q_fold(e0, rp); o0 = q_fold(o0, rp); e1 = q_fold(e1, rp); o1 = q_fold(o1, rp);
      room = k1;
    }
    const v8q m = Q1(c[s * cstride]);
    const v16 y0 = ZLD(rows + s * stride), y1 = ZLD(rows + s * stride + 16);
    e0 = _mm512_add_epi64(e0, _mm512_mul_epu32(y0, m));
    o0 = _mm512_add_epi64(o0, _mm512_mul_epu32(_mm512_srli_epi64(y0, 32), m));
    e1 = _mm512_add_epi64(e1, _mm512_mul_epu32(y1, m));
    o1 = _mm512_add_epi64(o1, _mm512_mul_epu32(_mm512_srli_epi64(y1, 32), m));
    --room;
  }
  e0 = q_redc(q_fold(e0, rp), p, pn); o0 = q_redc(q_fold(o0, rp), p, pn);
  e1 = q_redc(q_fold(e1, rp), p, pn); o1 = q_redc(q_fold(o1, rp), p, pn);
  ZST(out, _mm512_or_si512(e0, _mm512_slli_epi64(o0, 32)));
  ZST(out + 16, _mm512_or_si512(e1, _mm512_slli_epi64(o1, 32)));
}
/* montmul(x[j], c) for 16 words: x c R^-1 mod q, canonical (c < q, any u32 x: x c < q 2^32) */
ZINLINE v16 q_montmul16(v16 x, v8q c, v8q q, v8q qn) {
  const v8q e = q_redc(_mm512_mul_epu32(x, c), q, qn);
  const v8q o = q_redc(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), c), q, qn);
  return _mm512_or_si512(e, _mm512_slli_epi64(o, 32));
}
/* terms (products below xmax cmax) that fit 64 bits: k0 from 0, k1 after a fold (0: none) */
static inline i64 q_room0(u32 xmax, u32 cmax) {
  return (i64)(0xFFFFFFFFFFFFFFFFull / ((u64)xmax * cmax));
}
static inline i64 q_room1(u32 xmax, u32 cmax, u32 p) {
  return (i64)((0xFFFFFFFFFFFFFFFFull - ((u64)p << 32)) / ((u64)xmax * cmax));
}
