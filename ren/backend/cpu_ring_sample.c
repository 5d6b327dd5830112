/* SHAKE-128 and ren.sampling's uniform residues, in C: the "cpu" device's sampler.

   Written for this project from FIPS 202 (Keccak-f[1600], its rho offsets and round constants
   computed by the standard's Algorithms 2, 5 and 6).  Included by cpu_ring.c, whose types and
   REN_PARALLEL_FOR it uses.

   `ren.sampling` defines a uniform RANDOM node's value: limb i is the rejection sample of the
   32-bit little-endian words of SHAKE-128(prefix || i as 4 little-endian bytes || seed), a word
   w kept when w < floor(2^32 / q) * q and giving w mod q.  Python's hashlib holds the GIL while
   it squeezes a stream, so key generation sampled one limb at a time on one core; here every
   limb is its own stream and the limbs run on REN_CPU_THREADS threads, with the same words at
   every thread count.  Tests check the stream against hashlib and the rows against
   `ren.sampling.sample`. */
#include <stdint.h>

typedef uint8_t u8;

/* rho's rotation of lane x + 5y (FIPS 202 Algorithm 2) */
static const int KECCAK_RHO[25] = {0,  1,  62, 28, 27, 36, 44, 6,  55, 20, 3,  10, 43,
                                   25, 39, 41, 45, 15, 21, 8,  18, 2,  61, 56, 14};
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

static inline u64 rotl64(u64 x, int r) { return r ? (x << r) | (x >> (64 - r)) : x; }

/* Keccak-f[1600] on the 25 lanes a[x + 5y] */
static void keccak_f1600(u64 a[25]) {
  for (int round = 0; round < 24; ++round) {
    u64 c[5], b[25];
    for (int x = 0; x < 5; ++x) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
    for (int x = 0; x < 5; ++x) {  /* theta */
      const u64 d = c[(x + 4) % 5] ^ rotl64(c[(x + 1) % 5], 1);
      for (int y = 0; y < 25; y += 5) a[x + y] ^= d;
    }
    for (int x = 0; x < 5; ++x)  /* rho and pi: lane (x, y) moves to (y, 2x + 3y) */
      for (int y = 0; y < 5; ++y)
        b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl64(a[x + 5 * y], KECCAK_RHO[x + 5 * y]);
    for (int y = 0; y < 25; y += 5)  /* chi */
      for (int x = 0; x < 5; ++x)
        a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
    a[0] ^= KECCAK_RC[round];  /* iota */
  }
}

/* the state after absorbing msg (SHAKE's domain bits 1111 and pad10*1), ready to squeeze */
static void shake128_absorb(u64 a[25], const u8* msg, i64 len) {
  memset(a, 0, 25 * sizeof(u64));
  for (;; msg += SHAKE128_RATE, len -= SHAKE128_RATE) {
    u8 block[SHAKE128_RATE] = {0};
    const int last = len < SHAKE128_RATE;
    memcpy(block, msg, last ? (size_t)len : SHAKE128_RATE);
    if (last) {
      block[len] ^= 0x1F;
      block[SHAKE128_RATE - 1] ^= 0x80;
    }
    for (int i = 0; i < SHAKE128_RATE; ++i) a[i / 8] ^= (u64)block[i] << (8 * (i % 8));
    keccak_f1600(a);
    if (last) return;
  }
}

/* SHAKE-128(msg), outlen bytes (the tests' check against hashlib) */
void ren_cpu_shake128(const u8* msg, i64 len, u8* out, i64 outlen) {
  u64 a[25];
  shake128_absorb(a, msg, len);
  for (i64 i = 0; i < outlen; ++i) {
    if (i > 0 && i % SHAKE128_RATE == 0) keccak_f1600(a);
    const int k = (int)(i % SHAKE128_RATE);
    out[i] = (u8)(a[k / 8] >> (8 * (k % 8)));
  }
}

/* limb l of a uniform sample (module comment): n residues mod q from the stream of msg */
static void uniform_row(const u8* msg, i64 len, u32 q, i64 n, u32* out) {
  u64 a[25];
  shake128_absorb(a, msg, len);
  const u64 bound = ((1ULL << 32) / q) * q;
  for (i64 kept = 0;;) {
    for (int k = 0; k < SHAKE128_RATE / 8; ++k) {
      const u32 w[2] = {(u32)a[k], (u32)(a[k] >> 32)};  /* the stream's little-endian words */
      for (int h = 0; h < 2; ++h) {
        if (w[h] < bound) {
          out[kept++] = w[h] % q;
          if (kept == n) return;
        }
      }
    }
    keccak_f1600(a);
  }
}

/* the longest prefix || limb || seed the sampler takes (Ren's are ~55 bytes) */
#define REN_SAMPLE_MAX_INPUT 1024
int ren_cpu_sample_max_input(void) { return REN_SAMPLE_MAX_INPUT; }

/* out (L x n, row-major): ren.sampling.sample's uniform residues for moduli[0..L) from
   prefix || limb || seed, one limb per thread.  Returns 0, or 1 (nothing written) when that
   input is longer than REN_SAMPLE_MAX_INPUT bytes: the caller then samples another way. */
int ren_cpu_sample_uniform(const u8* prefix, i64 prefix_len, const u8* seed, i64 seed_len,
                           const u32* moduli, i64 L, i64 n, u32* out) {
  if (prefix_len < 0 || seed_len < 0 || prefix_len + 4 + seed_len > REN_SAMPLE_MAX_INPUT)
    return 1;
  REN_PARALLEL_FOR(L * n * 8)
  for (i64 l = 0; l < L; ++l) {
    u8 msg[REN_SAMPLE_MAX_INPUT];
    memcpy(msg, prefix, (size_t)prefix_len);
    for (int i = 0; i < 4; ++i) msg[prefix_len + i] = (u8)((u64)l >> (8 * i));
    memcpy(msg + prefix_len + 4, seed, (size_t)seed_len);
    uniform_row(msg, prefix_len + 4 + seed_len, moduli[l], n, out + l * n);
  }
  return 0;
}
