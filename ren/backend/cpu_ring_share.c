/* A board where side-by-side samplers (cpu_ring_sample.c) post work that other threads may join.

   Written for this project.  Included by cpu_ring.c before cpu_ring_sample.c.

   Realization draws a graph's random leaves side by side on a pool of as many threads as the
   device has, each sampler on one thread when two run at once on two.  A sampler's team is fixed
   when it starts, so a pool thread that finished its own leaf used to idle while the other
   sampler ran on alone (key generation's public key: a 59-limb uniform, ~5.6 ms on one thread
   at N = 2^16, beside a Gaussian of ~4 ms).  Here a side-by-side sampler posts each divisible
   stretch of its work as a job: a shared counter of tasks (a uniform's limbs, a mapping's
   chunks, a residue conversion's limbs) that anyone may claim.  A pool thread that finished its leaf calls ren_cpu_sample_help and
   claims tasks of any job posted until none is left; the owner claims too, then takes the job
   off the board and waits for its helpers to finish their tasks before returning.  Every task
   writes its own words, computed as the owner would: the words never depend on who ran what.

   A helper waits for a job (on a condition variable) only while the last post, close or end of
   a side-by-side sampler is less than `grace` ago (cpu_sampling.HELP_GRACE_S: a sampler's next
   stretch within one C call), then returns to the pool, which may hold a leaf for it.  Jobs are
   joined only while open: a helper never delays an owner, and an owner waits at most for its
   helpers' last tasks (a chunk or a limb each; a uniform's helper, the limbs in its
   Keccak lanes, up to 8). */
#include <pthread.h>
#include <sched.h>
#include <time.h>

typedef struct ren_job ren_job;
struct ren_job {
  void (*task)(const void* ctx, i64 i);  /* does task i of [0, count) */
  void (*run)(ren_job* j);               /* or claims from j->next itself (the uniform's lanes) */
  const void* ctx;
  i64 next, count;  /* the next task to claim (atomic); claims from count on mean none left */
  int helpers;      /* board threads inside the job (atomic) */
};

#define REN_BOARD_SLOTS 16
static ren_job* ren_board[REN_BOARD_SLOTS];
static pthread_mutex_t ren_board_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ren_board_cond = PTHREAD_COND_INITIALIZER;
static i64 ren_board_event = 0;  /* CLOCK_MONOTONIC ns of the last post, close or end */
static i64 ren_board_joins = 0;  /* jobs joined by helpers since the library loaded (tests) */

/* a child forked while a pool thread held the lock (or had a job posted) starts with an empty
   board and a free lock: the forking thread is the child's only thread */
static void ren_board_after_fork(void) {
  pthread_mutex_init(&ren_board_lock, NULL);
  pthread_cond_init(&ren_board_cond, NULL);
  memset(ren_board, 0, sizeof(ren_board));
}
__attribute__((constructor)) static void ren_board_at_fork(void) {
  pthread_atfork(NULL, NULL, ren_board_after_fork);
}

static i64 ren_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (i64)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static i64 job_claim(ren_job* j) { return __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED); }

/* claim and do j's tasks until none is left */
static void job_work(ren_job* j) {
  if (j->run) {
    j->run(j);
    return;
  }
  for (i64 i = job_claim(j); i < j->count; i = job_claim(j)) j->task(j->ctx, i);
}

/* a post, a close or a side-by-side sampler's end, under the lock: wakes the waiting helpers */
static void board_event_locked(void) {
  ren_board_event = ren_now_ns();
  pthread_cond_broadcast(&ren_board_cond);
}

static void ren_board_event_now(void) {
  pthread_mutex_lock(&ren_board_lock);
  board_event_locked();
  pthread_mutex_unlock(&ren_board_lock);
}

/* puts j on the board; 0 when the board is full (j then runs without helpers) */
static int board_post(ren_job* j) {
  int posted = 0;
  pthread_mutex_lock(&ren_board_lock);
  for (int k = 0; k < REN_BOARD_SLOTS && !posted; ++k)
    if (!ren_board[k]) {
      ren_board[k] = j;
      posted = 1;
    }
  if (posted) board_event_locked();
  pthread_mutex_unlock(&ren_board_lock);
  return posted;
}

/* takes j off the board (no helper joins after this) and waits for the helpers inside it to
   finish the tasks they hold (their claims fail from now on) */
static void board_close(ren_job* j) {
  pthread_mutex_lock(&ren_board_lock);
  for (int k = 0; k < REN_BOARD_SLOTS; ++k)
    if (ren_board[k] == j) ren_board[k] = NULL;
  board_event_locked();
  pthread_mutex_unlock(&ren_board_lock);
  /* spins, then yields, then sleeps 20 us at a time: a helper's last task may be a uniform's
     8 limbs (~0.8 ms at N = 2^16), and on a loaded machine the helper may be off its core */
  for (int spins = 0; __atomic_load_n(&j->helpers, __ATOMIC_ACQUIRE); ++spins) {
    if (spins < 256) continue;
    if (spins < 320) {
      sched_yield();
    } else {
      const struct timespec nap = {0, 20000};
      nanosleep(&nap, NULL);
    }
  }
}

/* the tasks of j on `threads` OpenMP threads of the calling thread, and when `share`, also on
   the board's helpers */
static void job_share(ren_job* j, int threads, int share) {
  (void)threads;  /* (without OpenMP) */
  const int posted = share && board_post(j);
  REN_OMP(parallel num_threads(threads) if(threads > 1))
  job_work(j);
  if (posted) board_close(j);
}

/* with the lock held: joins a posted job that has tasks left and works on it (the lock released
   meanwhile; joined under it, so the owner's close waits for this helper); 0 when none has */
static int board_join_one(void) {
  ren_job* j = NULL;
  for (int k = 0; k < REN_BOARD_SLOTS && !j; ++k)
    if (ren_board[k] && __atomic_load_n(&ren_board[k]->next, __ATOMIC_RELAXED) <
                            ren_board[k]->count)
      j = ren_board[k];
  if (!j) return 0;
  __atomic_add_fetch(&j->helpers, 1, __ATOMIC_RELAXED);
  ++ren_board_joins;
  pthread_mutex_unlock(&ren_board_lock);
  job_work(j);
  __atomic_sub_fetch(&j->helpers, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&ren_board_lock);
  return 1;
}

/* waits on the board's condition variable (the lock held) for at most left_ns */
static void board_wait(i64 left_ns) {
  struct timespec until;  /* the condition variable's clock is CLOCK_REALTIME */
  clock_gettime(CLOCK_REALTIME, &until);
  const i64 ns = until.tv_nsec + left_ns;
  until.tv_sec += (time_t)(ns / 1000000000LL);
  until.tv_nsec = (long)(ns % 1000000000LL);
  pthread_cond_timedwait(&ren_board_cond, &ren_board_lock, &until);
}

/* Called by a pool thread after its own leaf (ren.backend.cpu_sampling.sample): joins the posted
   jobs that have tasks left, one after another, and waits for new ones while the last board
   event is less than grace_ns old.  Returns how many jobs it joined. */
int ren_cpu_sample_help(i64 grace_ns) {
  int joined = 0;
  pthread_mutex_lock(&ren_board_lock);
  for (;;) {
    if (board_join_one()) {
      ++joined;
      continue;
    }
    const i64 left = ren_board_event + grace_ns - ren_now_ns();
    if (left <= 0) break;
    board_wait(left);
  }
  pthread_mutex_unlock(&ren_board_lock);
  return joined;
}

/* how many jobs helpers have joined since the library loaded (tests) */
i64 ren_cpu_sample_help_joins(void) {
  pthread_mutex_lock(&ren_board_lock);
  const i64 n = ren_board_joins;
  pthread_mutex_unlock(&ren_board_lock);
  return n;
}
