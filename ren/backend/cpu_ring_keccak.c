/* Keccak-f[1600] and SHAKE (FIPS 202) for the "cpu" device's samplers, one state at a time.

   Written for this project from FIPS 202 (Keccak-f[1600], its rho offsets and round constants
   computed by the standard's Algorithms 2, 3, 5 and 6).  Included by cpu_ring.c before the
   multi-way permutations (cpu_ring_keccak_x8.c, cpu_ring_keccak_x4.c), which share these
   tables, and before cpu_ring_sample.c, which uses all of them. */
typedef uint8_t u8;

/* theta's XOR, rho and pi, lane by lane: RP(DST, SRC, X, R) rotates lane SRC = x + 5y, after
   theta adds column X's d, by rho's offset R (FIPS 202 Algorithm 2) into lane DST = pi's
   image of SRC ((x, y) goes to (y, 2x + 3y)).  A list of literals, because the vector
   rotates and shifts take immediates; every permutation below (and the x8 / x4 ones) expands
   it with its own RP. */
#define KECCAK_RHO_PI(RP)                                                                      \
  RP(0, 0, 0, 0); RP(16, 5, 0, 36); RP(7, 10, 0, 3); RP(23, 15, 0, 41); RP(14, 20, 0, 18);     \
  RP(10, 1, 1, 1); RP(1, 6, 1, 44); RP(17, 11, 1, 10); RP(8, 16, 1, 45); RP(24, 21, 1, 2);     \
  RP(20, 2, 2, 62); RP(11, 7, 2, 6); RP(2, 12, 2, 43); RP(18, 17, 2, 15); RP(9, 22, 2, 61);    \
  RP(5, 3, 3, 28); RP(21, 8, 3, 55); RP(12, 13, 3, 25); RP(3, 18, 3, 21); RP(19, 23, 3, 56);   \
  RP(15, 4, 4, 27); RP(6, 9, 4, 20); RP(22, 14, 4, 39); RP(13, 19, 4, 8); RP(4, 24, 4, 14)
/* iota's round constants (Algorithms 5 and 6) */
static const u64 KECCAK_RC[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
    0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
    0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
    0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
    0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
    0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL};
#define SHAKE128_RATE 168 /* bytes: 21 lanes */
#define SHAKE256_RATE 136 /* bytes: 17 lanes */

/* GCC's Zen 4 tuning (-march=native) with AVX-512 on keeps some of the 25 lanes in xmm16..31
   and moves them to and from general registers every round: the permutation took ~600 ns in
   the AVX-512 build against ~300 ns in the AVX2 one.  Generic tuning for this one function
   restores the plain register allocation (and its rotations are a macro: a function with
   other target options cannot inline rotl64). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define KECCAK_TUNE __attribute__((target("tune=generic")))
#else
#define KECCAK_TUNE
#endif
#define ROTL64(x, r) ((r) ? ((x) << ((r) & 63)) | ((x) >> ((64 - (r)) & 63)) : (x))

/* Keccak-f[1600] on the 25 lanes s[x + 5y] (FIPS 202 section 3.2: theta, rho, pi, chi,
   iota, 24 rounds), the state in locals the compiler keeps in registers */
static KECCAK_TUNE void keccak_f1600(u64 s[25]) {
  u64 a[25], b[25], c[5], d[5];
  memcpy(a, s, sizeof(a));
  for (int round = 0; round < 24; ++round) {
    for (int x = 0; x < 5; ++x) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
    for (int x = 0; x < 5; ++x) d[x] = c[(x + 4) % 5] ^ ROTL64(c[(x + 1) % 5], 1);
#define RP(DST, SRC, X, R) b[DST] = ROTL64(a[SRC] ^ d[X], R)
    KECCAK_RHO_PI(RP);
#undef RP
    for (int y = 0; y < 25; y += 5)  /* chi */
      for (int x = 0; x < 5; ++x)
        a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
    a[0] ^= KECCAK_RC[round];  /* iota */
  }
  memcpy(s, a, sizeof(a));
}

/* the state after absorbing msg at `rate` bytes a block (SHAKE's domain bits 1111 and
   pad10*1), ready to squeeze: its first `rate` bytes are the stream's first block */
static void shake_absorb(u64 a[25], int rate, const u8* msg, i64 len) {
  memset(a, 0, 25 * sizeof(u64));
  for (;; msg += rate, len -= rate) {
    u8 block[SHAKE128_RATE] = {0};
    const int last = len < rate;
    memcpy(block, msg, last ? (size_t)len : (size_t)rate);
    if (last) {
      block[len] ^= 0x1F;
      block[rate - 1] ^= 0x80;
    }
    for (int i = 0; i < rate; ++i) a[i / 8] ^= (u64)block[i] << (8 * (i % 8));
    keccak_f1600(a);
    if (last) return;
  }
}

/* a stream squeezed a word at a time: the state and the next lane of its block */
typedef struct {
  u64 a[25];
  int rate_words, next;
} shake_reader;

static void shake_open(shake_reader* r, int rate, const u8* msg, i64 len) {
  shake_absorb(r->a, rate, msg, len);
  r->rate_words = rate / 8;
  r->next = 0;
}

/* the stream's next nwords little-endian u64 words (a lane's value is its 8 bytes read
   little-endian, so the lanes are the words) */
static void shake_read_u64(shake_reader* r, u64* out, i64 nwords) {
  while (nwords > 0) {
    if (r->next == r->rate_words) {
      keccak_f1600(r->a);
      r->next = 0;
    }
    const i64 m = nwords < r->rate_words - r->next ? nwords : r->rate_words - r->next;
    memcpy(out, r->a + r->next, (size_t)m * sizeof(u64));
    out += m;
    nwords -= m;
    r->next += (int)m;
  }
}

/* SHAKE-128 (bits 128) or SHAKE-256 (256) of msg, outlen bytes (the tests' check against
   hashlib) */
void ren_cpu_shake(int bits, const u8* msg, i64 len, u8* out, i64 outlen) {
  const int rate = bits == 256 ? SHAKE256_RATE : SHAKE128_RATE;
  u64 a[25];
  shake_absorb(a, rate, msg, len);
  for (i64 i = 0; i < outlen; ++i) {
    if (i > 0 && i % rate == 0) keccak_f1600(a);
    const int k = (int)(i % rate);
    out[i] = (u8)(a[k / 8] >> (8 * (k % 8)));
  }
}
