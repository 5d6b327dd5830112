/* Ren's compiled ring kernels: the plan team (the plan runner's own barrier, cpu_ring_plan.c).
   Written for this project.  Included by cpu_ring.c before the kernels, which share their loops
   out in a plan team and meet at its barrier (ren_sync) between the phases of one kernel.

   A plan's stretch of team kernels runs inside one OpenMP parallel region: every thread calls
   every kernel of the stretch, the kernels share their loops out by orphaned worksharing with
   `nowait`, and the threads meet at this barrier between kernels, not at libgomp's.  libgomp's
   barrier under the passive wait policy (Ren's default, cpu.py's omp_environment) puts a
   waiting thread to sleep at once, and its wake-up costs ~50 us on this kind of VM, which is
   more than a whole kernel at N = 2^12; its spinning policy spins for a fixed count even while
   the partner is descheduled (5x slower on a loaded machine).  This barrier spins for a bounded
   number of pauses (ren_set_plan_spin; a few tens of microseconds) and, after a long kernel, for
   a share of the waiter's own time in it (ren_set_plan_spin_share), yields once, then sleeps on
   a futex: on idle cores the threads pass kernel boundaries in well under a microsecond, on a
   loaded machine a waiter gives its core back soon. */
#if defined(__linux__) && defined(_OPENMP)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#define REN_FUTEX 1
#else
#define REN_FUTEX 0
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define REN_PAUSE() _mm_pause()
#else
#define REN_PAUSE() ((void)0)
#endif

typedef struct {
  int count;     /* threads arrived at the current barrier */
  int gen;       /* barriers passed (the futex word) */
  int sleepers;  /* threads asleep on gen */
  void* scratch;  /* grown by thread 0 only, between barriers (ren_team_scratch) */
  size_t scratch_bytes;
} ren_team;

/* the plan team this thread runs in (NULL outside one) */
static __thread ren_team* ren_cur_team = NULL;
/* pauses a thread spins at the barrier before it yields and sleeps (~30 ns each) */
static int ren_plan_spin = 1000;
void ren_set_plan_spin(int pauses) { ren_plan_spin = pauses < 0 ? 0 : pauses; }
int ren_cpu_plan_spin(void) { return ren_plan_spin; }
/* barriers met in plan teams so far (for tests and measurements; counted by the last arrival) */
static i64 ren_team_barriers = 0;
i64 ren_cpu_team_barriers(void) { return __atomic_load_n(&ren_team_barriers, __ATOMIC_RELAXED); }
/* waits at plan-team barriers that ended asleep on the futex (the partner came late) */
static i64 ren_team_sleeps = 0;
i64 ren_cpu_team_sleeps(void) { return __atomic_load_n(&ren_team_sleeps, __ATOMIC_RELAXED); }

/* the barrier after a kernel spins longer when the kernel was long: besides its pauses, a
   waiter spins for `ren_plan_spin_share` of the seconds it spent in its own share of the kernel
   (at most ren_plan_spin_cap seconds) before it sleeps.  At N = 2^16 a thread often waits a
   whole row of work (~0.1 ms for an NTT row) at a barrier, longer than the pauses; a futex
   sleep there costs a wake-up each time (the jitted multiply: 8-14 sleeps a run).  Kernels of
   tens of microseconds (N = 2^12) add next to nothing, so a waiter whose partner was
   descheduled on a loaded machine still gives its core back soon.  0: pauses only. */
static double ren_plan_spin_share = 0.25, ren_plan_spin_cap = 0.5e-3;
void ren_set_plan_spin_share(double share, double cap_seconds) {
  ren_plan_spin_share = share > 0 ? share : 0;
  ren_plan_spin_cap = cap_seconds > 0 ? cap_seconds : 0;
}
double ren_cpu_plan_spin_share(void) { return ren_plan_spin_share; }
static double ren_team_clock(void) {
#ifdef _OPENMP
  return omp_get_wtime();
#else
  return 0.0;
#endif
}

/* every thread of the team (nth of them) waits here until all have arrived; what each wrote
   before it is visible to all after it; `extra`: seconds to spin after the pauses */
static void ren_team_sync_spin(ren_team* t, int nth, double extra) {
  const int g = __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&t->count, 1, __ATOMIC_ACQ_REL) == nth) {
    __atomic_store_n(&t->count, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&ren_team_barriers, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&t->gen, g + 1, __ATOMIC_SEQ_CST);
#if REN_FUTEX
    if (__atomic_load_n(&t->sleepers, __ATOMIC_SEQ_CST))
      syscall(SYS_futex, &t->gen, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#endif
    return;
  }
  for (int i = 0; i < ren_plan_spin; ++i) {
    if (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) != g) return;
    REN_PAUSE();
  }
  if (extra > 0) {
    const double end = ren_team_clock() + extra;
    do {
      for (int i = 0; i < 64; ++i) {
        if (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) != g) return;
        REN_PAUSE();
      }
    } while (ren_team_clock() < end);
  }
#if REN_FUTEX
  sched_yield();
  if (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) != g) return;
  __atomic_add_fetch(&ren_team_sleeps, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&t->sleepers, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&t->gen, __ATOMIC_SEQ_CST) == g)
    syscall(SYS_futex, &t->gen, FUTEX_WAIT_PRIVATE, g, NULL, NULL, 0);
  __atomic_sub_fetch(&t->sleepers, 1, __ATOMIC_SEQ_CST);
#else
  while (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) == g) REN_PAUSE();
#endif
}
static void ren_team_sync(ren_team* t, int nth) { ren_team_sync_spin(t, nth, 0.0); }
/* seconds a waiter spins after its pauses at the runner's barrier, having worked `own` seconds
   since it last left one (exported for tests) */
double ren_cpu_plan_extra_spin(double own) {
  const double extra = own > 0 ? own * ren_plan_spin_share : 0;
  return extra < ren_plan_spin_cap ? extra : ren_plan_spin_cap;
}
/* the runner's barrier after a kernel: this thread worked `own` seconds since the last one */
static void ren_team_sync_after(double own) {
#ifdef _OPENMP
  ren_team_sync_spin(ren_cur_team, omp_get_num_threads(), ren_cpu_plan_extra_spin(own));
#else
  (void)own;
#endif
}

/* the barrier between two phases of a kernel whose loops are shared out with `nowait`: the plan
   team's, or OpenMP's in a region the kernel opened itself */
static void ren_sync(void) {
#ifdef _OPENMP
  if (ren_cur_team != NULL) ren_team_sync(ren_cur_team, omp_get_num_threads());
  else {
    REN_OMP(barrier)
  }
#endif
}

/* scratch of at least `bytes` shared by the plan team (every thread calls it): valid until the
   kernel returns (the runner's barrier follows every kernel, so the next kernel's scratch never
   moves under a thread still reading this one's).  The runner allocates the largest scratch its
   stretch's kernels ask for before it opens the team (ren_plan_scratch), so a call returns it at
   once, without meeting the team; a larger request (a kernel the runner does not size) grows it
   between two barriers, so that every thread compared the same size before thread 0 changes it */
static void* ren_team_scratch(size_t bytes) {
  ren_team* t = ren_cur_team;
  if (bytes <= t->scratch_bytes) return t->scratch;
#ifdef _OPENMP
  ren_sync();
  if (omp_get_thread_num() == 0) {
    free(t->scratch);
    t->scratch = malloc(bytes);
    t->scratch_bytes = t->scratch != NULL ? bytes : 0;
  }
#endif
  ren_sync();
  return t->scratch;
}
