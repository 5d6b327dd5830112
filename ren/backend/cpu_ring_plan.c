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

void ren_run_plan_teams(i64 count, const ren_entry* fns, void*** args, const signed char* team) {
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
      const int me = omp_get_thread_num();
#else
      const int me = 0;
#endif
      double cpu = work != NULL ? ren_thread_cpu() : 0.0;
      for (i64 j = k; j < e; ++j) {
        ren_team_call(fns[j], args[j]);
        if (work != NULL && me < 2) {
          const double now = ren_thread_cpu();
          work[2 * j + me] += now - cpu;
          cpu = now;
        }
        if (j + 1 < e && ren_needs_sync(j + 1, team)) {  /* the region's end joins the last */
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
