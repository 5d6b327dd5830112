/* Ren's compiled ring kernels: fast basis conversion and exact rescale (divide-and-round).
   Written for this project.  Included by cpu_ring.c (its helpers: montmul, redc, redc64,
   modadd, modsub, ren_split, REN_OMP, REN_PARALLEL_FOR, REN_IN_TEAM, ren_sync,
   ren_team_scratch). */

/* ---- fast basis conversion (TO_RING onto new moduli) ---------------------------------------
   a: out, in, sizes {N, L_src, L_dst}, src_q, src_qneg, qhat_inv, q, qneg, bconv, copy_from.
   Scratch y (L_src x N: y_i = [x_i * qhat_i^-1]_{q_i}, standard form) is allocated per call,
   so concurrent calls never share it; BCONV_BLOCK coefficients of 64-bit sums (4 KiB) sit on
   the stack. */
#define BCONV_BLOCK 512
#define BCONV_SPLIT 8  /* pieces per row when rows are split (ren_split) */
/* y's row stride: a line more than N, so that the rows q_sum16 reads side by side (N words
   apart, a power of two) do not all fall into one L1 set */
#define BCONV_STRIDE(n) ((n) + 16)
/* the scratch a conversion of L_src rows of N words takes (y); the plan runner sizes a team's
   scratch with it before the team opens (ren_plan_scratch), so no kernel meets the team to grow it */
static size_t ren_bconv_scratch_bytes(const i64 n, const i64 ls) {
  return (size_t)(ls * BCONV_STRIDE(n)) * sizeof(u32);
}
/* y's words of source row i, coefficients c0..c1-1: y_i = [x_i * qhat_i^-1]_{q_i} */
static inline void bconv_y(u32* y, const u32* in, const i64 n, const i64 i, const i64 c0,
                           const i64 c1, const u32* sq, const u32* sqn, const u32* qhi) {
  const u32 qi = sq[i], qni = sqn[i], c = qhi[i];
  const u32* restrict xi = in + i * n;
  u32* restrict yi = y + i * BCONV_STRIDE(n);
#if REN_AVX512
  if ((c1 - c0) % 16 == 0) {  /* in u64 lanes: the same words, fewer operations */
    const v8q C = Q1(c), Q = Q1(qi), QN = Q1(qni);
    for (i64 j = c0; j < c1; j += 16) ZST(yi + j, q_montmul16(ZLD(xi + j), C, Q, QN));
    return;
  }
#endif
  for (i64 j = c0; j < c1; ++j) yi[j] = montmul(xi[j], c, qi, qni);
}

/* output row d, coefficients c0..c1-1: sum_i y_i * M[d][i] (y_i < q_i, M < p) as 64-bit sums
   of up to k terms, k * max(q_i) * p < 2^64: about 16 products per sum for 30-bit moduli (a sum
   below p * 2^32, what one REDC takes, would allow 3).  A sum s = hi * 2^32 + lo is s * 2^-32 =
   hi + lo * 2^-32 (mod p): REDC(hi * (2^32 mod p)) + REDC(lo), the same residue as one REDC of
   a smaller sum, so every output is the canonical residue either way.  Coefficients go in
   blocks of BCONV_BLOCK, so that every loop over them is a plain multiply-add that vectorizes.
   Every word depends on its coefficient's y words alone: the same whatever the range. */
static inline void bconv_sum(u32* out, const u32* in, const u32* y, const i64 n, const i64 LS,
                             const i64 d, const i64 c0, const i64 c1, const u32* q,
                             const u32* qn, const u32* bc, const i64* from, const u32 maxq) {
  const i64 yn = BCONV_STRIDE(n);
  const i64 k1 = (i64)(0xFFFFFFFFu / maxq);  /* terms whose sum one REDC takes */
  u32* restrict o = out + d * n;
  if (from[d] >= 0) {
    memcpy(o + c0, in + from[d] * n + c0, (size_t)(c1 - c0) * sizeof(u32));
    return;
  }
  const u32 p = q[d], pn = qn[d], rp = (u32)((1ull << 32) % p);
  const u32* restrict row = bc + d * LS;
  if (LS <= k1 && LS <= 3) {  /* one sum below p * 2^32: one pass, one REDC per coefficient */
    const u32* restrict y0 = y;
    const u32 m0 = row[0];
    if (LS == 1) {
      for (i64 j = c0; j < c1; ++j) o[j] = redc((u64)y0[j] * m0, p, pn);
    } else if (LS == 2) {
      const u32* restrict y1 = y0 + yn; const u32 m1 = row[1];
      for (i64 j = c0; j < c1; ++j) o[j] = redc((u64)y0[j] * m0 + (u64)y1[j] * m1, p, pn);
    } else {
      const u32* restrict y1 = y0 + yn; const u32* restrict y2 = y1 + yn;
      const u32 m1 = row[1], m2 = row[2];
      for (i64 j = c0; j < c1; ++j)
        o[j] = redc((u64)y0[j] * m0 + (u64)y1[j] * m1 + (u64)y2[j] * m2, p, pn);
    }
    return;
  }
  i64 k = (i64)(0xFFFFFFFFFFFFFFFFull / ((u64)maxq * p));
  if (k < 1) k = 1;
  if (k > 32) k = 32;
#if REN_AVX512
  const i64 f1 = q_room1(maxq, p, p);  /* words below maxq, table entries below p */
  if ((c1 - c0) % 16 == 0 && f1 >= 1) {  /* the sums in registers, folded (q_sum16) */
    const v8q P = Q1(p), PN = Q1(pn), RP = Q1(rp), Z0 = _mm512_setzero_si512();
    const i64 f0 = q_room0(maxq, p);
    i64 j = c0;
    for (; j + 32 <= c1; j += 32)
      q_sum32(o + j, Z0, Z0, Z0, Z0, f0, y + j, yn, row, 1, LS, f1, P, PN, RP);
    if (j < c1) ZST(o + j, q_sum16(Z0, Z0, f0, y + j, yn, row, 1, LS, f1, P, PN, RP));
    return;
  }
#endif
  u64 acc[BCONV_BLOCK];
  for (i64 j0 = c0; j0 < c1; j0 += BCONV_BLOCK) {
    const i64 m = c1 - j0 < BCONV_BLOCK ? c1 - j0 : BCONV_BLOCK;
    u32* restrict oj = o + j0;
    for (i64 cs = 0; cs < LS; cs += k) {
      const i64 c = LS - cs < k ? LS - cs : k;
      const u32* restrict y0 = y + cs * yn + j0;
      const u64 m0 = row[cs];
      for (i64 j = 0; j < m; ++j) acc[j] = (u64)y0[j] * m0;
      for (i64 i = 1; i < c; ++i) {
        const u32* restrict yi = y0 + i * yn;
        const u64 mi = row[cs + i];
        for (i64 j = 0; j < m; ++j) acc[j] += (u64)yi[j] * mi;
      }
      for (i64 j = 0; j < m; ++j) {
        const u32 r = redc64(acc[j], p, pn, rp);
        oj[j] = cs == 0 ? r : modadd(oj[j], r, p);
      }
    }
  }
}

/* both loops of a conversion, on the calling thread, or shared out by every thread of the team
   that calls it (orphaned worksharing: the barrier after the first loop orders y's rows before
   the sums read them) */
static void bconv_loops(u32* out, const u32* in, u32* y, const i64 n,
                        const i64 LS, const i64 LD, const i64 ps, const i64 ys, const u32* sq,
                        const u32* sqn, const u32* qhi, const u32* q, const u32* qn,
                        const u32* bc, const i64* from, const u32 maxq) {
  if (y != NULL) {
    REN_OMP(for schedule(dynamic, 1) nowait)
    for (i64 task = 0; task < LS * ys; ++task) {
      const i64 i = task / ys, c0 = (task % ys) * (n / ys);
      bconv_y(y, in, n, i, c0, c0 + n / ys, sq, sqn, qhi);
    }
    ren_sync();  /* y's rows before the sums read them */
  }
  /* across output limbs (and pieces of them): each reads all LS input rows */
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 task = 0; task < LD * ps; ++task) {
    const i64 d = task / ps, c0 = (task % ps) * (n / ps);
    bconv_sum(out, in, y, n, LS, d, c0, c0 + n / ps, q, qn, bc, from, maxq);
  }
}

/* the conversion by coefficient ranges (`pieces` of them), each task one range of every row:
   its y words, then every output row's sums over it, so that the range's y words (LS rows of
   n / pieces words, sized to stay in L2) are read from there by all LD sums, where the row
   loops above read all of y (LS n words, megabytes at N = 2^16) from L3 once per output row;
   and the tasks need no barrier between the loops (each reads only the y words it wrote) */
static void bconv_ranges(u32* out, const u32* in, u32* y, const i64 n, const i64 LS,
                         const i64 LD, const i64 pieces, const u32* sq, const u32* sqn,
                         const u32* qhi, const u32* q, const u32* qn, const u32* bc,
                         const i64* from, const u32 maxq) {
  const i64 w = n / pieces;
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 t = 0; t < pieces; ++t) {
    const i64 c0 = t * w, c1 = c0 + w;
    if (y != NULL)
      for (i64 i = 0; i < LS; ++i) bconv_y(y, in, n, i, c0, c1, sq, sqn, qhi);
    for (i64 d = 0; d < LD; ++d) bconv_sum(out, in, y, n, LS, d, c0, c1, q, qn, bc, from, maxq);
  }
}
/* 0: every conversion takes the row loops (for tests and measurements: the words are the same) */
static int ren_bconv_ranges_on = 1;
void ren_cpu_set_bconv_ranges(int on) { ren_bconv_ranges_on = on != 0; }
/* a range's y words at most (LS rows of a range): well inside a core's L2 beside the output
   rows' ranges the sums write */
#define BCONV_RANGE_BYTES (256 << 10)
#define BCONV_RANGE_MIN 1024  /* words of a range at least (a multiple of 32: q_sum32) */
/* the ranges bconv_ranges takes on T threads: 0 (the row loops) when all of y fits in
   BCONV_RANGE_BYTES (N = 2^12: it stays in L2 anyway) or there would be fewer than 4 T ranges
   of BCONV_RANGE_MIN words or more (too few tasks to share out evenly); a power of two, so 2
   threads take equal shares, where whole rows left one thread a row more for an odd L_dst */
static i64 bconv_ranges_for(const i64 n, const i64 LS, const i64 T) {
  if (!ren_bconv_ranges_on || n % BCONV_RANGE_MIN != 0) return 0;
  i64 w = n;
  while (w > BCONV_RANGE_MIN && (size_t)(LS * w) * sizeof(u32) > BCONV_RANGE_BYTES) w >>= 1;
  if (w == n) return 0;
  while (w > BCONV_RANGE_MIN && n / w < 4 * T) w >>= 1;
  return n / w >= 4 * T ? n / w : 0;
}
/* for tests: the ranges a conversion of LS rows of n words takes on T threads (0: row loops) */
long long ren_cpu_bconv_ranges(long long n, long long LS, long long T) {
  return bconv_ranges_for(n, LS, T < 1 ? 1 : T);
}

/* a conversion's work on the calling thread or its team: by `ranges` coefficient ranges
   (bconv_ranges_for), or by rows and pieces of rows where that is 0 */
static void bconv_work(u32* out, const u32* in, u32* y, const i64 n, const i64 LS,
                       const i64 LD, const i64 ps, const i64 ys, const i64 ranges,
                       const u32* sq, const u32* sqn, const u32* qhi, const u32* q,
                       const u32* qn, const u32* bc, const i64* from, const u32 maxq) {
  if (ranges > 0)
    bconv_ranges(out, in, y, n, LS, LD, ranges, sq, sqn, qhi, q, qn, bc, from, maxq);
  else
    bconv_loops(out, in, y, n, LS, LD, ps, ys, sq, sqn, qhi, q, qn, bc, from, maxq);
}

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
  const size_t ybytes = ren_bconv_scratch_bytes(n, LS);
  const int in_team = REN_IN_TEAM();
  /* in a plan team the team's scratch (no allocation per call), else a buffer of this call's */
  u32* y = !convert ? NULL : in_team ? (u32*)ren_team_scratch(ybytes) : (u32*)malloc(ybytes);
  /* pieces of each row a task takes: the whole row, or n / BCONV_SPLIT words when there are
     too few rows for the threads (ren_split_rows; n a multiple of 4096) */
  const i64 ps = n % (BCONV_SPLIT * BCONV_BLOCK) == 0 && ren_split_rows(LD) ? BCONV_SPLIT : 1;
  const i64 ys = n % (BCONV_SPLIT * BCONV_BLOCK) == 0 && ren_split_rows(LS) ? BCONV_SPLIT : 1;
  u32 maxq = 1;
  for (i64 i = 0; i < LS; ++i) maxq = sq[i] > maxq ? sq[i] : maxq;
  /* one team for both loops (one wake-up a conversion, not two) when either loop's work (the
     rows to convert: LS n words; the sums: LD LS n) reaches REN_PAR_MIN_WORK */
  const int team = (convert && LS * ys > 1 && LS * n >= REN_PAR_MIN_WORK) ||
                   (LD * ps > 1 && LD * LS * n >= REN_PAR_MIN_WORK);
  const i64 T = in_team ? ren_team_threads() : team ? ren_threads : 1;
  const i64 ranges = bconv_ranges_for(n, LS, T);
  if (in_team) {  /* the runner's barrier follows: y stays the team's */
    bconv_work(out, in, y, n, LS, LD, ps, ys, ranges, sq, sqn, qhi, q, qn, bc, from, maxq);
    return;
  }
  REN_OMP(parallel num_threads(ren_threads) if(ren_threads > 1 && team))
  bconv_work(out, in, y, n, LS, LD, ps, ys, ranges, sq, sqn, qhi, q, qn, bc, from, maxq);
  free(y);
}

/* ---- exact divide-and-round by the K trailing moduli (ren.ring.divide_round_mont) ----------
   a: out, in, sizes {N, L_src, K, Z}, src_q, src_qneg, src_r2, half, p_inv (K x L_src), lift
   (K x L_src), p_all_inv (L_src).  With z = x + floor(P/2), P = p_1...p_K the dropped moduli:
   the mixed-radix digits d_s of [z]_P (the last modulus first) run on the K dropped rows only
   (K(K-1)/2 products), and every kept row takes out_i = (z_i - sum_s d_s W_s) * P^-1 mod q_i,
   W_s the product of the moduli dropped before the s-th: a multiply-add of K terms per word,
   the shape of the basis conversion, where dividing by one modulus at a time cost 2 K
   Montgomery products per word of every kept row.  Both are the residues of floor(z / P), so
   the words are the same.  Blocks of RESCALE_BLOCK coefficients keep a block's digits (on the
   stack) in cache while every kept row reads them.  The first Z source rows (kept rows, Z <= L_src
   - K) are 0 and not in `in`, which holds rows Z..L_src-1 (a key switch's mod-down reads only
   its K dropped rows: RingCall.zero_rows): a row of 0 reads a block of zeros that stays in L1.
   With AVX-512, more than RESCALE_FOLD dropped moduli take the fold's one sum of K + 1 products
   too, folded in registers (cpu_ring_avx512.c's q_sum16): 25-30 % less time at K = 8 (a key
   switch's mod-down at n16), the same words. */
#define RESCALE_BLOCK 1024
/* the digits' row stride: a line more than the block, so that the K rows a vector loop reads at
   once do not all fall into one L1 set (rows 4 KiB apart would) */
#define RESCALE_STRIDE (RESCALE_BLOCK + 16)
#define RESCALE_FOLD 3  /* up to this many dropped moduli, each kept word takes one reduction */
static const u32 rescale_zeros[RESCALE_BLOCK];  /* the words of a row of 0 (Z above) */
/* block b of the rescale (RESCALE_BLOCK coefficients of every kept row) */
static void rescale_block(const i64 b, u32* out, const u32* in, const i64 n, const i64 LS,
                          const i64 K, const i64 Z, const u32* q, const u32* qn, const u32* r2,
                          const u32* half, const u32* pinv, const u32* lift,
                          const u32* pall, const u32 maxp) {
  const i64 LK = LS - K;
  const i64 c0 = b * RESCALE_BLOCK;
  const i64 m = n - c0 < RESCALE_BLOCK ? n - c0 : RESCALE_BLOCK;
  u32 d[K * RESCALE_STRIDE];  /* row s: the digit of the s-th dropped modulus, standard form */
  for (i64 j = LK; j < LS; ++j) {  /* z = x + floor(P/2) on the dropped rows */
    const u32 qj = q[j], h = half[j];
    const u32* restrict x = in + (j - Z) * n + c0;
    u32* restrict zj = d + (LS - 1 - j) * RESCALE_STRIDE;
    for (i64 c = 0; c < m; ++c) zj[c] = modadd(x[c], h, qj);
  }
  for (i64 s = 0; s < K; ++s) {
    const i64 jp = LS - 1 - s;  /* the s-th digit, mod p = q[jp] */
    const u32 p = q[jp], pn = qn[jp];
    u32* restrict ds = d + s * RESCALE_STRIDE;
#if REN_AVX512
    if (m % 16 == 0) {  /* [z]_p, standard: montmul(z, 1) in u64 lanes */
      const v8q P = Q1(p), PN = Q1(pn), ONE = Q1(1);
      for (i64 c = 0; c < m; c += 16) ZST(ds + c, q_montmul16(ZLD(ds + c), ONE, P, PN));
    } else
#endif
    for (i64 c = 0; c < m; ++c) ds[c] = montmul(ds[c], 1u, p, pn);  /* [z]_p, standard */
    for (i64 t = s + 1; t < K; ++t) {  /* the moduli still to be divided by */
      const i64 i = LS - 1 - t;
      const u32 qi = q[i], qni = qn[i], r2i = r2[i], pi = pinv[s * LS + i];
      u32* restrict zi = d + t * RESCALE_STRIDE;
#if REN_AVX512
      /* (z - [d]_qi R) pi R^-1 = REDC(z pi + d b), b = -pi R mod qi: one reduction of a sum of
         two products below qi (qi + p) <= qi 2^32 (z < qi, d < p), the same canonical word */
      if (m % 16 == 0 && (u64)qi + p <= (1ull << 32)) {
        const u32 pr = montmul(pi, r2i, qi, qni);  /* pi R */
        const v8q Q = Q1(qi), QN = Q1(qni), PI = Q1(pi), B = Q1(pr == 0 ? 0 : qi - pr);
        for (i64 c = 0; c < m; c += 16) {
          const v16 z = ZLD(zi + c), dv = ZLD(ds + c);
          const v8q e = _mm512_add_epi64(_mm512_mul_epu32(z, PI), _mm512_mul_epu32(dv, B));
          const v8q o = _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(z, 32), PI),
                                         _mm512_mul_epu32(_mm512_srli_epi64(dv, 32), B));
          ZST(zi + c, _mm512_or_si512(q_redc(e, Q, QN), _mm512_slli_epi64(q_redc(o, Q, QN), 32)));
        }
        continue;
      }
#endif
      for (i64 c = 0; c < m; ++c) {
        /* d < 2^32 and r2i < qi, so d * r2i < qi * 2^32: one Montgomery product gives
           [d]_{qi} in Montgomery form, fully reduced, with no division */
        const u32 rm = montmul(ds[c], r2i, qi, qni);
        zi[c] = montmul(modsub(zi[c], rm, qi), pi, qi, qni);
      }
    }
  }
  for (i64 i = 0; i < LK; ++i) {
    const u32 qi = q[i], qni = qn[i], h = half[i], pa = pall[i];
    const u32 rq = (u32)((1ull << 32) % qi);
    /* terms whose 64-bit sum cannot wrap (the basis conversion's rule; at least one) */
    i64 kk = (i64)(0xFFFFFFFFFFFFFFFFull / ((u64)maxp * qi));
    if (kk < 1) kk = 1;
    const u32* restrict x = i < Z ? rescale_zeros : in + (i - Z) * n + c0;
    u32* restrict o = out + i * n + c0;
    if (K <= RESCALE_FOLD &&  /* K + 1 products below max(p, q_i) q_i each fit 64 bits */
        (u64)(K + 1) <= 0xFFFFFFFFFFFFFFFFull / ((u64)(maxp > qi ? maxp : qi) * qi)) {
      /* few dropped moduli: out = z P^-1 - sum_s d_s W_s P^-1 as ONE 64-bit sum of K + 1
         products (z pa + sum_s d_s b_s, b_s = -W_s P^-1 R^2 Montgomery-ready) and one
         reduction, where the loops above reduce the digits' sum, subtract and multiply by
         P^-1 (two reductions more).  Both give the canonical residue: the same words. */
      u64 bs[RESCALE_FOLD];
      for (i64 s = 0; s < K; ++s) {
        const u32 t = montmul(lift[s * LS + i], pa, qi, qni);  /* W_s P^-1 R^2 */
        bs[s] = t == 0 ? 0 : qi - t;
      }
      const u32* restrict d0 = d;
      const u32* restrict d1 = d + RESCALE_STRIDE;
      const u32* restrict d2 = d + 2 * RESCALE_STRIDE;
      if (K == 1) {
        for (i64 c = 0; c < m; ++c)
          o[c] = redc64((u64)modadd(x[c], h, qi) * pa + (u64)d0[c] * bs[0], qi, qni, rq);
      } else if (K == 2) {
        for (i64 c = 0; c < m; ++c)
          o[c] = redc64((u64)modadd(x[c], h, qi) * pa + (u64)d0[c] * bs[0] +
                        (u64)d1[c] * bs[1], qi, qni, rq);
      } else {
        for (i64 c = 0; c < m; ++c)
          o[c] = redc64((u64)modadd(x[c], h, qi) * pa + (u64)d0[c] * bs[0] +
                        (u64)d1[c] * bs[1] + (u64)d2[c] * bs[2], qi, qni, rq);
      }
      continue;
    }
#if REN_AVX512
    {  /* the K <= RESCALE_FOLD form's one sum of K + 1 products, folded in registers */
      const u32 big = maxp > qi ? maxp : qi;
      const i64 f0 = q_room0(big, qi), f1 = q_room1(big, qi, qi);
      if (m % 16 == 0 && f0 >= 2 && f1 >= 1 && K <= 64) {
        u32 bs[64];  /* -W_s P^-1 R^2, as the fold above */
        for (i64 s = 0; s < K; ++s) {
          const u32 t = montmul(lift[s * LS + i], pa, qi, qni);
          bs[s] = t == 0 ? 0 : qi - t;
        }
        const v16 Q16 = Z1(qi), H16 = Z1(h);
        const v8q Q = Q1(qi), QN = Q1(qni), RQ = Q1(rq), PA = Q1(pa);
        i64 c = 0;
        for (; c + 32 <= m; c += 32) {
          const v16 s0 = _mm512_add_epi32(ZLD(x + c), H16);
          const v16 s1 = _mm512_add_epi32(ZLD(x + c + 16), H16);
          const v16 z0 = _mm512_min_epu32(s0, _mm512_sub_epi32(s0, Q16));  /* modadd(x, h) */
          const v16 z1 = _mm512_min_epu32(s1, _mm512_sub_epi32(s1, Q16));
          q_sum32(o + c, _mm512_mul_epu32(z0, PA), _mm512_mul_epu32(_mm512_srli_epi64(z0, 32), PA),
                  _mm512_mul_epu32(z1, PA), _mm512_mul_epu32(_mm512_srli_epi64(z1, 32), PA),
                  f0 - 1, d + c, RESCALE_STRIDE, bs, 1, K, f1, Q, QN, RQ);
        }
        if (c < m) {
          const v16 s0 = _mm512_add_epi32(ZLD(x + c), H16);
          const v16 z = _mm512_min_epu32(s0, _mm512_sub_epi32(s0, Q16));
          const v8q e = _mm512_mul_epu32(z, PA), od = _mm512_mul_epu32(_mm512_srli_epi64(z, 32), PA);
          ZST(o + c, q_sum16(e, od, f0 - 1, d + c, RESCALE_STRIDE, bs, 1, K, f1, Q, QN, RQ));
        }
        continue;
      }
    }
#endif
    u64 acc[RESCALE_BLOCK];
    u32 r[RESCALE_BLOCK];
    for (i64 s0 = 0; s0 < K; s0 += kk) {
      const i64 cnt = K - s0 < kk ? K - s0 : kk;
      const u64 w0 = lift[s0 * LS + i];
      const u32* restrict d0 = d + s0 * RESCALE_STRIDE;
      for (i64 c = 0; c < m; ++c) acc[c] = (u64)d0[c] * w0;
      for (i64 s = 1; s < cnt; ++s) {
        const u64 ws = lift[(s0 + s) * LS + i];
        const u32* restrict dsr = d + (s0 + s) * RESCALE_STRIDE;
        for (i64 c = 0; c < m; ++c) acc[c] += (u64)dsr[c] * ws;
      }
      for (i64 c = 0; c < m; ++c) {  /* the partial sum in Montgomery form */
        const u32 v = redc64(acc[c], qi, qni, rq);
        r[c] = s0 == 0 ? v : modadd(r[c], v, qi);
      }
    }
    for (i64 c = 0; c < m; ++c)
      o[c] = montmul(modsub(modadd(x[c], h, qi), r[c], qi), pa, qi, qni);
  }
}

void ren_cpu_rescale(void** a) {
  u32* out = (u32*)a[0];
  const u32* in = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32 *q = (const u32*)a[3], *qn = (const u32*)a[4], *r2 = (const u32*)a[5];
  const u32 *half = (const u32*)a[6], *pinv = (const u32*)a[7], *lift = (const u32*)a[8];
  const u32* pall = (const u32*)a[9];
  const i64 n = sz[0], LS = sz[1], K = sz[2], Z = sz[3], LK = LS - K;
  const i64 blocks = (n + RESCALE_BLOCK - 1) / RESCALE_BLOCK;
  u32 maxp = 1;
  for (i64 j = LK; j < LS; ++j) maxp = q[j] > maxp ? q[j] : maxp;
  if (REN_IN_TEAM()) {
    REN_OMP(for schedule(dynamic, 1) nowait)
    for (i64 b = 0; b < blocks; ++b)
      rescale_block(b, out, in, n, LS, K, Z, q, qn, r2, half, pinv, lift, pall, maxp);
    return;
  }
  REN_PARALLEL_FOR(blocks > 1 ? LS * n * K : 0)
  for (i64 b = 0; b < blocks; ++b)
    rescale_block(b, out, in, n, LS, K, Z, q, qn, r2, half, pinv, lift, pall, maxp);
}
