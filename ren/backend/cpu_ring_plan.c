/* Ren's compiled ring kernels: the plan runner (the JIT's graph runner, ren/backend/cpu_plan.py).
   Written for this project.  Included by cpu_ring.c, last: it names the ring kernels. */

/* ---- the plan runner: entries run in order, in one C loop ---------------------------------- */
typedef void (*ren_entry)(void**);
/* Whether entry `f` on `a` is a ring kernel that would share its loops over a team of its own
   (the thresholds of each kernel above): only such kernels go into a team ren_run_plan opens,
   since a kernel that runs on one thread by itself would pay a barrier there */
static int ren_team_kernel(ren_entry f, void** a) {
  if (ren_threads < 2 || !(f == ren_cpu_ntt || f == ren_cpu_intt || f == ren_cpu_rescale ||
                            f == ren_cpu_bconv))
    return 0;  /* (another entry's a[2] is no sizes array) */
  const i64* sz = (const i64*)a[2];
  const i64 n = sz[0];
  if (f == ren_cpu_ntt || f == ren_cpu_intt) {
    const i64 L = sz[1];
    return ren_split_ntt(L, n) || (L > 1 && L * n * 4 >= REN_PAR_MIN_WORK);
  }
  if (f == ren_cpu_rescale) {
    const i64 LS = sz[1], K = sz[2];
    return n > RESCALE_BLOCK && LS * n * K >= REN_PAR_MIN_WORK;
  }
  if (f == ren_cpu_bconv) {
    const i64 LS = sz[1], LD = sz[2];
    const i64* from = (const i64*)a[9];
    int convert = 0;
    for (i64 d = 0; d < LD; ++d) convert |= from[d] < 0;
    const int cut = n % (BCONV_SPLIT * BCONV_BLOCK) == 0;
    const i64 ps = cut && ren_split(LD, n) ? BCONV_SPLIT : 1;
    const i64 ys = cut && ren_split(LS, n) ? BCONV_SPLIT : 1;
    return (convert && LS * ys > 1 && LS * n >= REN_PAR_MIN_WORK) ||
           (LD * ps > 1 && LD * LS * n >= REN_PAR_MIN_WORK);
  }
  return 0;
}

/* Entries run in order.  A run of two or more consecutive ring kernels that would each fork a
   team (an INTT, a basis conversion and an NTT of a key switch, say) runs inside one team
   instead: every thread calls every kernel of the run, whose loops are shared out by orphaned
   worksharing (REN_IN_TEAM) and end with a barrier, so the run wakes the team once instead of
   once per kernel.  Every kernel writes the words it writes on its own, so nothing changes in
   the output. */
static int ren_plan_teams = 1;
/* 0: every kernel of a plan forks its own team, as eager calls do (for measurements) */
void ren_set_plan_teams(int on) { ren_plan_teams = on != 0; }
void ren_run_plan(i64 count, const ren_entry* fns, void*** args) {
  i64 k = 0;
  while (k < count) {
    i64 e = k;
#ifdef _OPENMP
    while (ren_plan_teams && e < count && ren_team_kernel(fns[e], args[e])) ++e;
#endif
    if (e - k < 2) {
      fns[k](args[k]);
      ++k;
      continue;
    }
    REN_OMP(parallel num_threads(ren_threads))
    for (i64 j = k; j < e; ++j) fns[j](args[j]);
    k = e;
  }
}
/* for tests: how many teams ren_run_plan opens for these entries (runs of two or more) */
i64 ren_cpu_plan_teams(i64 count, const ren_entry* fns, void*** args) {
  i64 teams = 0, run = 0;
  for (i64 k = 0; k <= count; ++k) {
    if (k < count && ren_team_kernel(fns[k], args[k])) { ++run; continue; }
    teams += run >= 2;
    run = 0;
  }
  return teams;
}
