/* TO_RNS for the "cpu" device: packed integer coefficients to Montgomery residues.
   Included by cpu_ring.c (its helpers: shoup, umin, modadd, modsub, REN_PARALLEL_FOR).

   Written for this project.  The input is n coefficients of W u32 words each (little-endian
   two's complement, coefficient j at words[j*W .. j*W+W-1]); limb l of the output is
   [c_j]_{q_l} * R mod q_l (R = 2^32), fully reduced: the word the NumPy backend's
   to_mont(reduce_words(...)) gives, for any W >= 1 and any q < 2^31.

   With c = sum_k w_k 2^(32k) - s 2^(32W) (s the sign bit of the top word),
     c R = sum_k w_k R^(k+1) - s R^(W+1)  (mod q),
   so each word takes one Shoup product by the constant R^(k+1) mod q (any u32 w_k: the product
   lands in [0, 2q), one conditional subtraction), the terms are summed with modadd and a
   negative coefficient subtracts R^(W+1) mod q: no division per residue, and the result is the
   canonical residue, the same word as a Horner remainder converted to Montgomery form.

   Loops: coefficients go in blocks of TORNS_BLOCK; a block's words are transposed, up to
   TORNS_CHUNK words at a time, into planes on the stack (one plane per word, unit stride), and
   every limb of a task then runs a plain loop over the block that vectorizes (W = 2 and 3, the
   diagonals' widths, are one chunk; wider W accumulate chunk by chunk in the output row).
   Tasks are (block, group of limbs): whole limb ranges per block, and when the blocks alone are
   too few for the threads the limbs are split into groups too.  A task writes only its own
   words, and every word is computed the same way whatever the split, so the output does not
   depend on the thread count.

   a: out (L x n u32), words (n x W u32), sizes {n, L, W} (long long), q (L u32). */
#define TORNS_BLOCK 1024
#define TORNS_CHUNK 4

/* [x R^(k+1)]_q for one word x: a Shoup product in [0, 2q), then one conditional subtraction */
static inline u32 torns_term(u32 x, u32 w, u32 ws, u32 q) {
  const u32 t = shoup(x, w, ws, q);
  return umin(t, t - q);
}

/* o[j] (+)= sum_{k < KC} [p_k[j] R^(k0+k+1)]_q, minus R^(W+1) where the top word is negative
   (the last chunk).  One function per KC and one loop per case (first chunk or not, last or
   not), each a plain loop that vectorizes. */
#define TORNS_ROWS(KC)                                                                        \
  static void torns_rows##KC(u32* restrict o, const u32* restrict pl, const i64 m,            \
                             const u32* restrict tw, const u32* restrict ts, const u32 q,       \
                             const u32 wrap, const int first, const int last) {                \
    const u32* restrict p0 = pl;                                                              \
    const u32* restrict p1 = pl + TORNS_BLOCK;                                                \
    const u32* restrict p2 = pl + 2 * TORNS_BLOCK;                                            \
    const u32* restrict p3 = pl + 3 * TORNS_BLOCK;                                            \
    const u32* restrict top = pl + (KC - 1) * TORNS_BLOCK;                                    \
    const u32 w0 = tw[0], s0 = ts[0];                                                         \
    const u32 w1 = KC > 1 ? tw[1] : 0, s1 = KC > 1 ? ts[1] : 0;                               \
    const u32 w2 = KC > 2 ? tw[2] : 0, s2 = KC > 2 ? ts[2] : 0;                               \
    const u32 w3 = KC > 3 ? tw[3] : 0, s3 = KC > 3 ? ts[3] : 0;                               \
    if (first && last) {                                                                      \
      for (i64 j = 0; j < m; ++j)                                                             \
        o[j] = modsub(TORNS_SUM(KC), (0u - (top[j] >> 31)) & wrap, q);                        \
    } else if (first) {                                                                       \
      for (i64 j = 0; j < m; ++j) o[j] = TORNS_SUM(KC);                                        \
    } else if (last) {                                                                        \
      for (i64 j = 0; j < m; ++j)                                                             \
        o[j] = modsub(modadd(o[j], TORNS_SUM(KC), q), (0u - (top[j] >> 31)) & wrap, q);       \
    } else {                                                                                  \
      for (i64 j = 0; j < m; ++j) o[j] = modadd(o[j], TORNS_SUM(KC), q);                       \
    }                                                                                         \
  }
#define TORNS_T(k) torns_term(p##k[j], w##k, s##k, q)
#define TORNS_SUM(KC)                                                                         \
  (KC == 1 ? TORNS_T(0)                                                                       \
   : KC == 2 ? modadd(TORNS_T(0), TORNS_T(1), q)                                              \
   : KC == 3 ? modadd(modadd(TORNS_T(0), TORNS_T(1), q), TORNS_T(2), q)                       \
   : modadd(modadd(TORNS_T(0), TORNS_T(1), q), modadd(TORNS_T(2), TORNS_T(3), q), q))
TORNS_ROWS(1)
TORNS_ROWS(2)
TORNS_ROWS(3)
TORNS_ROWS(4)

/* per limb, W + 1 weights R^(k+1) mod q (k = 0..W; the last is the wrap R^(W+1)) and their
   Shoup companions floor(w 2^32 / q): L (W + 2) divisions a call, none per residue.  One
   malloc'd block: the weights (L (W + 1) words), then their companions; NULL when it cannot be
   allocated */
static u32* torns_weights(const u32* q, const i64 L, const i64 W) {
  const i64 S = W + 1;
  u32* tw = (u32*)malloc((size_t)(2 * L * S) * sizeof(u32));
  if (tw == NULL) return NULL;
  u32* ts = tw + L * S;
  for (i64 l = 0; l < L; ++l) {
    const u64 ql = q[l];
    u64 w = (1ull << 32) % ql;
    for (i64 k = 0; k < S; ++k) {
      tw[l * S + k] = (u32)w;
      ts[l * S + k] = (u32)((w << 32) / ql);
      w = (w << 32) % ql;
    }
  }
  return tw;
}

/* limb groups per block: 1, or enough for about 4 tasks a thread when the blocks are few */
static i64 torns_groups(const i64 blocks, const i64 L, const i64 threads) {
  i64 groups = 1;
  if (threads > 1 && blocks < 4 * threads) {
    groups = (4 * threads + blocks - 1) / blocks;
    if (groups > L) groups = L;
  }
  return groups;
}

/* task `task` of blocks x groups: coefficient block task / groups (TORNS_BLOCK of them) of
   limb group task % groups; `tw`: torns_weights of all L limbs */
static void torns_task(u32* out, const u32* words, const i64 n, const i64 L, const i64 W,
                       const u32* q, const u32* tw, const i64 groups, const i64 task) {
  const i64 S = W + 1;
  const u32* ts = tw + L * S;
  const i64 b = task / groups, g = task % groups;
  const i64 l0 = g * L / groups, l1 = (g + 1) * L / groups;
  const i64 c0 = b * TORNS_BLOCK;
  const i64 m = n - c0 < TORNS_BLOCK ? n - c0 : TORNS_BLOCK;
  const u32* restrict in = words + c0 * W;
  u32 pl[TORNS_CHUNK * TORNS_BLOCK];
  for (i64 k0 = 0; k0 < W; k0 += TORNS_CHUNK) {
    const int kc = (int)(W - k0 < TORNS_CHUNK ? W - k0 : TORNS_CHUNK);
    const int first = k0 == 0, last = k0 + kc == W;
    if (W == 2) {
      for (i64 j = 0; j < m; ++j) {
        pl[j] = in[2 * j];
        pl[TORNS_BLOCK + j] = in[2 * j + 1];
      }
    } else if (W == 3) {
      for (i64 j = 0; j < m; ++j) {
        pl[j] = in[3 * j];
        pl[TORNS_BLOCK + j] = in[3 * j + 1];
        pl[2 * TORNS_BLOCK + j] = in[3 * j + 2];
      }
    } else {
      for (int k = 0; k < kc; ++k)
        for (i64 j = 0; j < m; ++j) pl[k * TORNS_BLOCK + j] = in[j * W + k0 + k];
    }
    for (i64 l = l0; l < l1; ++l) {
      u32* restrict o = out + l * n + c0;
      const u32* wl = tw + l * S + k0;
      const u32* sl = ts + l * S + k0;
      const u32 ql = q[l], wrap = tw[l * S + W];
      switch (kc) {
        case 1: torns_rows1(o, pl, m, wl, sl, ql, wrap, first, last); break;
        case 2: torns_rows2(o, pl, m, wl, sl, ql, wrap, first, last); break;
        case 3: torns_rows3(o, pl, m, wl, sl, ql, wrap, first, last); break;
        default: torns_rows4(o, pl, m, wl, sl, ql, wrap, first, last); break;
      }
    }
  }
}

/* limb r alone (every block of its row), as torns_task computes it for any split: the row
   entry of a plan tile (cpu_ring_plan.c), which then runs the kernels after it on the row
   while it is in the thread's L2; the weights of that limb only (W + 2 divisions) */
static void torns_row(void** a, const i64 r) {
  u32* out = (u32*)a[0];
  const u32* words = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32* q = (const u32*)a[3];
  const i64 n = sz[0], L = sz[1], W = sz[2];
  if (n <= 0 || r < 0 || r >= L) return;
  if (W <= 0) {
    memset(out + r * n, 0, (size_t)n * sizeof(u32));
    return;
  }
  u32* tw = torns_weights(q + r, 1, W);
  if (tw == NULL) return;  /* (cannot happen for any ring's sizes) */
  const i64 blocks = (n + TORNS_BLOCK - 1) / TORNS_BLOCK;
  for (i64 b = 0; b < blocks; ++b) torns_task(out + r * n, words, n, 1, W, q + r, tw, 1, b);
  free(tw);
}

/* TO_RNS tasks run inside plan teams so far (for tests: a one-limb call is shared out too) */
static i64 ren_to_rns_team_tasks = 0;
i64 ren_cpu_to_rns_team_tasks(void) {
  return __atomic_load_n(&ren_to_rns_team_tasks, __ATOMIC_RELAXED);
}

/* TO_RNS called by every thread of a plan team (cpu_ring_plan.c): the same tasks (coefficient
   blocks x limb groups, sized for the team) shared out by orphaned worksharing without a
   barrier (the runner's follows), so a call of few limbs (one, at level 0) is split over its
   coefficients too; each thread computes the weights for itself (L (W + 2) divisions) */
#ifdef _OPENMP
static void torns_team(void** a, const i64 nth) {
  u32* out = (u32*)a[0];
  const u32* words = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32* q = (const u32*)a[3];
  const i64 n = sz[0], L = sz[1], W = sz[2];
  if (n <= 0 || L <= 0) return;
  if (W <= 0) {  /* no words: every coefficient is 0 (rows shared out) */
    REN_OMP(for schedule(dynamic, 1) nowait)
    for (i64 l = 0; l < L; ++l) memset(out + l * n, 0, (size_t)n * sizeof(u32));
    return;
  }
  u32* tw = torns_weights(q, L, W);
  const i64 blocks = (n + TORNS_BLOCK - 1) / TORNS_BLOCK;
  const i64 groups = torns_groups(blocks, L, nth), tasks = blocks * groups;
  i64 mine = 0;
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 task = 0; task < tasks; ++task) {
    if (tw != NULL) torns_task(out, words, n, L, W, q, tw, groups, task);  /* (cannot fail) */
    ++mine;
  }
  __atomic_add_fetch(&ren_to_rns_team_tasks, mine, __ATOMIC_RELAXED);
  free(tw);
}
#endif

void ren_cpu_to_rns(void** a) {
  u32* out = (u32*)a[0];
  const u32* words = (const u32*)a[1];
  const i64* sz = (const i64*)a[2];
  const u32* q = (const u32*)a[3];
  const i64 n = sz[0], L = sz[1], W = sz[2];
  if (n <= 0 || L <= 0) return;
  if (W <= 0) {  /* no words: every coefficient is 0 */
    memset(out, 0, (size_t)(L * n) * sizeof(u32));
    return;
  }
  u32* tw = torns_weights(q, L, W);
  if (tw == NULL) return;  /* cannot happen for any ring's sizes; leaves out untouched */
  const i64 blocks = (n + TORNS_BLOCK - 1) / TORNS_BLOCK;
  const i64 groups = torns_groups(blocks, L, (i64)ren_threads);  /* (serial: tasks in turn) */
  const i64 tasks = blocks * groups;
  REN_PARALLEL_FOR(tasks > 1 ? L * n * W : 0)
  for (i64 task = 0; task < tasks; ++task) torns_task(out, words, n, L, W, q, tw, groups, task);
  free(tw);
}
