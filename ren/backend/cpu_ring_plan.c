/* Ren's compiled ring kernels: the plan runner (the JIT's graph runner, ren/backend/cpu_plan.py).
   Written for this project.  Included by cpu_ring.c, last: it names the ring kernels. */

#if defined(__linux__)
#include <time.h>
#endif

/* ---- the plan runner: entries run in order, in one C loop ---------------------------------- */
typedef void (*ren_entry)(void**);
/* Entries run in order.  On more than one thread, a stretch of two or more consecutive team
   kernels (`team[k]` nonzero: ring kernels that share their loops out when REN_IN_TEAM, and
   elementwise kernels built with a team path, ren/backend/elementwise_c.py) runs inside one
   OpenMP parallel region: every thread calls every kernel of the stretch, the kernels share
   their loops out by orphaned worksharing with `nowait`, and the threads meet at the plan
   team's own barrier (cpu_ring_team.c) between kernels.  So a stretch wakes the team once,
   however many kernels it holds (a bootstrapping replay at N = 2^12: ~4,400 kernels, one or a
   few wake-ups instead of ~3,400), and a kernel too small to fork a team of its own is still
   shared out.  Other entries (to_rns, hosted kernels, ...) run as before, outside any region.
   Every kernel writes the words it writes on its own, so nothing changes in the output.
   `team` NULL: the ring kernels above are the team kernels (ren_team_kernel). */
static int ren_plan_teams = 1;
/* 0: every kernel of a plan forks its own team, as eager calls do (for measurements) */
void ren_set_plan_teams(int on) { ren_plan_teams = on != 0; }
/* the team kernels among the ring library's own entries */
static int ren_ring_team_kernel(ren_entry f) {
  return f == ren_cpu_ntt || f == ren_cpu_intt || f == ren_cpu_rescale || f == ren_cpu_bconv ||
         f == ren_cpu_to_rns;
}
/* TO_RNS inside a plan team: its tasks (coefficient blocks x limb groups, cpu_ring_to_rns.c's
   torns_team) shared out among the team's threads, so a call of one limb (an encoding at level
   0) is split over its coefficients too, not run by one thread (every word is computed the
   same way whatever the split).  A stretch no longer ends at an encryption's plaintext: one
   team and no fork of its own. */
static void ren_team_to_rns(void** a) {
#ifdef _OPENMP
  torns_team(a, omp_get_num_threads());
#else
  ren_cpu_to_rns(a);
#endif
}
/* a kernel of a stretch, called by every thread of its team */
static void ren_team_call(ren_entry f, void** a) {
  if (f == ren_cpu_to_rns) ren_team_to_rns(a);
  else f(a);
}
/* team[k]: bit 0, entry k is a team kernel; bit 1, the team meets at a barrier before it (the
   caller's dependence analysis, ren/backend/cpu_plan.py: a kernel that touches nothing the
   kernels since the last barrier wrote, nor writes what they read, needs none) */
static int ren_is_team(i64 k, const ren_entry* fns, const signed char* team) {
  return team != NULL ? (team[k] & 1) != 0 : ren_ring_team_kernel(fns[k]);
}
static int ren_needs_sync(i64 k, const signed char* team) {
  return team == NULL || (team[k] & 2) != 0;
}
/* teams opened by ren_run_plan_teams so far (for tests and measurements) */
static i64 ren_teams_opened = 0;
i64 ren_cpu_teams_opened(void) { return __atomic_load_n(&ren_teams_opened, __ATOMIC_RELAXED); }

/* measurements: when set, ren_run_plan_teams called from this thread with at most `count`
   entries adds the seconds team threads 0 and 1 wait at the barrier after entry j to wait[2 j]
   and wait[2 j + 1] (where the second thread is idle); per calling thread, so that another
   thread's plans never write into it */
static __thread double* ren_team_wait = NULL;
static __thread i64 ren_team_wait_count = 0;
void ren_set_team_wait(double* wait, i64 count) {
  ren_team_wait = wait;
  ren_team_wait_count = count;
}
static double ren_now(void) {
#ifdef _OPENMP
  return omp_get_wtime();
#else
  return 0.0;
#endif
}
/* measurements, likewise: the CPU seconds (the thread's own clock, which stops while it is
   descheduled: the same on a loaded machine) team threads 0 and 1 spend in their own share of
   entry j, barriers excluded, added to work[2 j] and work[2 j + 1]: where the work is not
   divided evenly, whatever the load (ren/backend/cpu_plan.py, CompiledPlan.team_work) */
static __thread double* ren_team_work = NULL;
static __thread i64 ren_team_work_count = 0;
void ren_set_team_work(double* work, i64 count) {
  ren_team_work = work;
  ren_team_work_count = count;
}
static double ren_thread_cpu(void) {
#if defined(__linux__)
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
  return 0.0;
#endif
}
static void ren_timed_sync(double* wait, double own) {
  const double t0 = ren_now();
  ren_team_sync_after(own);
#ifdef _OPENMP
  const int tid = omp_get_thread_num();
  if (tid < 2) wait[tid] += ren_now() - t0;
#endif
}

/* the scratch the team kernels k..e-1 ask the team for (ren_team_scratch): a basis
   conversion's y rows (its sizes {N, L_src, L_dst}; cpu_ring_rns.c's ren_bconv_scratch_bytes);
   allocated once before the team opens, so that no kernel meets the team to grow it */
static size_t ren_plan_scratch(i64 k, i64 e, const ren_entry* fns, void*** args) {
  size_t need = 0;
  for (i64 j = k; j < e; ++j) {
    if (fns[j] != ren_cpu_bconv) continue;
    const i64* sz = (const i64*)args[j][2];
    const size_t bytes = ren_bconv_scratch_bytes(sz[0], sz[1]);
    need = bytes > need ? bytes : need;
  }
  return need;
}

/* ---- tiles: a chain of row-local kernels run row by row (owner computes) -------------------
   team[k] bit 2 (TILE): entry k runs in one tile with entry k-1 (its bit 1: where the team
   meets before it when the tile runs kernel by kernel; inside a tile run row by row, nowhere).  The kernels of a tile are
   row-local (row r of every output depends on rows r of its inputs alone, every array at the
   same addresses: ren/backend/cpu_plan.py's team_flags checks it), so instead of each kernel
   sharing its rows out and the team meeting between them, one loop shares the row indices
   out and a thread runs the whole chain on its row: the row a kernel wrote is still in the
   thread's L2 when the next reads it (a row of 2^16 words is 256 KiB; kernel by kernel, each
   streams its whole multi-MiB arrays through memory, which two threads share), and no barrier
   is met inside the tile.  tile[k]: entry k's row function (an elementwise kernel's
   ren_rows_*, ren/backend/elementwise_loop.py: rows r0..r1-1, returns its row count), or the
   NTT/INTT entry itself (rows by ntt_limb/intt_limb), or the TO_RNS entry (rows by torns_row:
   every input word goes into each row, so a TO_RNS only starts a tile, never joins one).  Every row is computed by the code of
   the whole kernel, whole and fully reduced, so the words are the same. */
typedef i64 (*ren_rows_fn)(void**, i64, i64);
static i64 ren_tile_rows(ren_entry f, void* tile, void** a) {
  if (f == ren_cpu_ntt || f == ren_cpu_intt || f == ren_cpu_to_rns) return ((const i64*)a[2])[1];
  return ((ren_rows_fn)tile)(a, 0, 0);
}
static void ren_tile_row(ren_entry f, void* tile, void** a, i64 r) {
  if (f == ren_cpu_to_rns) {  /* first in its tile only (its row reads every input word) */
    torns_row(a, r);
    return;
  }
  if (f == ren_cpu_ntt || f == ren_cpu_intt) {
    const i64 n = ((const i64*)a[2])[0];
    const u32* q = (const u32*)a[3];
    const u32* const* w = (const u32* const*)a[4];
    const u32* const* ws = (const u32* const*)a[5];
    u32* out = (u32*)a[0] + r * n;
    const u32* in = (const u32*)a[1] + r * n;
    if (f == ren_cpu_ntt) ntt_limb(out, in, w[r], ws[r], q[r], n);
    else intt_limb(out, in, w[r], ws[r], q[r], ((const u32*)a[6])[r], ((const u32*)a[7])[r], n);
    return;
  }
  ((ren_rows_fn)tile)(a, r, r + 1);
}
/* the most rows of the tile k..m */
static i64 ren_tile_height(i64 k, i64 m, const ren_entry* fns, void*** args, void* const* tile) {
  i64 R = 0;
  for (i64 j = k; j <= m; ++j) {
    const i64 rows = ren_tile_rows(fns[j], tile[j], args[j]);
    R = rows > R ? rows : R;
  }
  return R;
}
/* entries k..m (one tile of R rows) on the calling team thread's share of the rows */
static void ren_run_tile(i64 k, i64 m, i64 R, const ren_entry* fns, void*** args,
                         void* const* tile) {
  REN_OMP(for schedule(dynamic, 1) nowait)
  for (i64 r = 0; r < R; ++r)
    for (i64 j = k; j <= m; ++j)
      if (r < ren_tile_rows(fns[j], tile[j], args[j])) ren_tile_row(fns[j], tile[j], args[j], r);
}
/* tiles run so far (for tests and measurements) */
static i64 ren_tiles_run = 0;
i64 ren_cpu_tiles_run(void) { return __atomic_load_n(&ren_tiles_run, __ATOMIC_RELAXED); }
/* a tile runs row by row when it has at least this many rows per team thread, else kernel by
   kernel with barriers between (as untiled): its rows go to the threads whole, so few rows
   would leave a thread idle (one row: the other threads do nothing; 5 rows on 2 threads: one
   does 3), where the kernels alone split a row's coefficients or its NTT's butterflies.  At 4,
   the rows of one thread differ by at most a quarter.  0: no tiles (for measurements). */
static int ren_plan_tiles = 4;
void ren_set_plan_tiles(int rows_per_thread) {
  ren_plan_tiles = rows_per_thread < 0 ? 0 : rows_per_thread;
}
int ren_cpu_plan_tiles(void) { return ren_plan_tiles; }

void ren_run_plan_tiled(i64 count, const ren_entry* fns, void*** args, const signed char* team,
                        void* const* tile);
void ren_run_plan_teams(i64 count, const ren_entry* fns, void*** args, const signed char* team) {
  ren_run_plan_tiled(count, fns, args, team, NULL);
}
/* ren_run_plan_teams with tiles (team bit 2, `tile` the row functions; NULL: none) */
void ren_run_plan_tiled(i64 count, const ren_entry* fns, void*** args, const signed char* team,
                        void* const* tile) {
  i64 k = 0;
  while (k < count) {
    i64 e = k;
#ifdef _OPENMP
    while (ren_plan_teams && ren_threads > 1 && e < count && ren_is_team(e, fns, team)) ++e;
#endif
    if (e - k < 2) {
      fns[k](args[k]);
      ++k;
      continue;
    }
    const int tiling = tile != NULL ? ren_plan_tiles : 0;
    const size_t need = ren_plan_scratch(k, e, fns, args);
    ren_team tm = {0, 0, 0, need > 0 ? malloc(need) : NULL, 0};
    tm.scratch_bytes = tm.scratch != NULL ? need : 0;
    __atomic_add_fetch(&ren_teams_opened, 1, __ATOMIC_RELAXED);
    double* const wait = count <= ren_team_wait_count ? ren_team_wait : NULL;
    double* const work = count <= ren_team_work_count ? ren_team_work : NULL;
    REN_OMP(parallel num_threads(ren_threads))
    {
      ren_cur_team = &tm;
      double since = ren_now();  /* when this thread last left a barrier */
#ifdef _OPENMP
      const int me = omp_get_thread_num(), nth = omp_get_num_threads();
#else
      const int me = 0, nth = 1;
#endif
      double cpu = work != NULL ? ren_thread_cpu() : 0.0;
      for (i64 j = k; j < e; ++j) {
        i64 m = j, R = 0;  /* the tile that starts at j ends at m; its rows */
        if (tiling)
          while (m + 1 < e && (team[m + 1] & 4) != 0) ++m;
        if (m > j) R = ren_tile_height(j, m, fns, args, tile);
        if (m > j && R >= (i64)tiling * nth) {
          if (me == 0) __atomic_add_fetch(&ren_tiles_run, 1, __ATOMIC_RELAXED);
          ren_run_tile(j, m, R, fns, args, tile);
          j = m;
        } else {
          ren_team_call(fns[j], args[j]);
        }
        if (work != NULL && me < 2) {
          const double now = ren_thread_cpu();
          work[2 * j + me] += now - cpu;
          cpu = now;
        }
        /* the region's end joins the last (a tile run kernel by kernel meets where its
           entries' barrier bits say, as untiled) */
        if (j + 1 < e && ren_needs_sync(j + 1, team)) {
          const double own = ren_now() - since;  /* its work since then: it spins the longer */
          if (wait == NULL) ren_team_sync_after(own);
          else ren_timed_sync(wait + 2 * j, own);
          since = ren_now();
          if (work != NULL) cpu = ren_thread_cpu();
        }
      }
      ren_cur_team = NULL;
    }
    free(tm.scratch);
    k = e;
  }
}
void ren_run_plan(i64 count, const ren_entry* fns, void*** args) {
  ren_run_plan_teams(count, fns, args, NULL);
}
/* for tests: how many teams ren_run_plan opens for these entries (stretches of two or more ring
   team kernels) at the current thread count */
i64 ren_cpu_plan_teams(i64 count, const ren_entry* fns, void*** args) {
  (void)args;
  i64 teams = 0, run = 0;
  for (i64 k = 0; k <= count; ++k) {
    if (k < count && ren_threads > 1 && ren_ring_team_kernel(fns[k])) { ++run; continue; }
    teams += run >= 2;
    run = 0;
  }
  return teams;
}
