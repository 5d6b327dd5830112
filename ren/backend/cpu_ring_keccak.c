/* Keccak-f[1600] and SHAKE (FIPS 202) for the "cpu" device's samplers, one state at a time.

   Written for this project from FIPS 202 (Keccak-f[1600], its rho offsets and round constants
   computed by the standard's Algorithms 2, 5 and 6).  Included by cpu_ring.c before the
   multi-way permutations (cpu_ring_keccak_x8.c, cpu_ring_keccak_x4.c), which share these
   tables, and before cpu_ring_sample.c, which uses all of them. */
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
#define SHAKE256_RATE 136 /* bytes: 17 lanes */

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

/* `nwords` little-endian u64 words of the stream whose absorbed state is a (rate bytes a block),
   squeezed in order; a is left ready for the next block */
static void shake_squeeze_u64(u64 a[25], int rate, u64* out, i64 nwords) {
  const int lanes = rate / 8;
  for (i64 i = 0; i < nwords; i += lanes) {
    const i64 m = nwords - i < lanes ? nwords - i : lanes;
    memcpy(out + i, a, (size_t)m * sizeof(u64));  /* a lane is its 8 bytes read little-endian */
    keccak_f1600(a);
  }
}

/* SHAKE-128 or SHAKE-256 (bits 128 or 256) of msg, outlen bytes (the tests' check against
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
void ren_cpu_shake128(const u8* msg, i64 len, u8* out, i64 outlen) {
  ren_cpu_shake(128, msg, len, out, outlen);
}
