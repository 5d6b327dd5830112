/* Four Keccak-f[1600] states at once in AVX2 registers: the uniform sampler's lanes.

   Written for this project from FIPS 202 (the step mappings theta, rho, pi, chi, iota of its
   section 3.2; rho and pi's list of lanes and iota's constants are cpu_ring_keccak.c's).  Included by
   cpu_ring.c when the library is built with AVX2 but not AVX-512 (REN_CPU_ISA=avx2);
   cpu_ring_sample.c runs one limb's SHAKE-128 stream in each of the four 64-bit lanes of a ymm
   register.

   The state is held lane-interleaved, s[i][j] = lane i (x + 5y) of stream j, so lane i of the
   four streams is one vector.  AVX2 has no 64-bit rotate: rho is two shifts and an OR (a shift
   by 64 gives 0, so offset 0 needs no case); chi's a ^ (~b & c) is vpandn and vpxor. */
#include <immintrin.h>

#define KECCAK_X4 1
typedef __m256i k4;
#define K4_XOR(a, b) _mm256_xor_si256((a), (b))
#define K4_ROL(v, r) _mm256_or_si256(_mm256_slli_epi64((v), (r)), _mm256_srli_epi64((v), 64 - (r)))

/* Keccak-f[1600] on four states s[25][4] (lane-interleaved, see above) */
static void keccak_f1600_x4(u64 s[25][4]) {
  k4 a[25], b[25], c[5], d[5];
  for (int i = 0; i < 25; ++i) a[i] = _mm256_loadu_si256((const k4*)s[i]);
  for (int round = 0; round < 24; ++round) {
    for (int x = 0; x < 5; ++x)  /* theta: the parities of the columns */
      c[x] = K4_XOR(K4_XOR(K4_XOR(a[x], a[x + 5]), K4_XOR(a[x + 10], a[x + 15])), a[x + 20]);
    for (int x = 0; x < 5; ++x) d[x] = K4_XOR(c[(x + 4) % 5], K4_ROL(c[(x + 1) % 5], 1));
    /* theta's XOR, rho and pi (cpu_ring_keccak.c's list) */
#define RP(DST, SRC, X, R) b[DST] = K4_ROL(K4_XOR(a[SRC], d[X]), R)
    KECCAK_RHO_PI(RP);
#undef RP
    for (int y = 0; y < 25; y += 5)  /* chi, row by row: a ^ (~b & c) */
      for (int x = 0; x < 5; ++x)
        a[x + y] = K4_XOR(b[x + y], _mm256_andnot_si256(b[(x + 1) % 5 + y], b[(x + 2) % 5 + y]));
    a[0] = K4_XOR(a[0], _mm256_set1_epi64x((long long)KECCAK_RC[round]));  /* iota */
  }
  for (int i = 0; i < 25; ++i) _mm256_storeu_si256((k4*)s[i], a[i]);
}
