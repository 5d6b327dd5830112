/* Eight Keccak-f[1600] states at once in AVX-512 registers: the uniform sampler's lanes.

   Written for this project from FIPS 202 (the step mappings theta, rho, pi, chi, iota of its
   section 3.2; rho and pi's list of lanes and iota's constants are cpu_ring_keccak.c's).  Included by
   cpu_ring.c when the library is built with AVX-512 (REN_CPU_ISA=avx512); cpu_ring_sample.c
   runs one limb's SHAKE-128 stream in each of the eight 64-bit lanes of a zmm register.

   The state is held lane-interleaved, s[i][j] = lane i (x + 5y) of stream j, so lane i of all
   eight streams is one vector.  Per round: theta's column parities are two three-way XORs
   (vpternlogq 0x96), rho is vprolq, pi is which register a result lands in, chi's
   a ^ (~b & c) is one vpternlogq (0xD2), iota one XOR with a broadcast constant. */
#include <immintrin.h>

#define KECCAK_X8 1
typedef __m512i k8;
#define K8_XOR3(a, b, c) _mm512_ternarylogic_epi64((a), (b), (c), 0x96)
#define K8_CHI(a, b, c) _mm512_ternarylogic_epi64((a), (b), (c), 0xD2) /* a ^ (~b & c) */

/* Keccak-f[1600] on eight states s[25][8] (lane-interleaved, see above) */
static void keccak_f1600_x8(u64 s[25][8]) {
  k8 a[25], b[25], c[5], d[5];
  for (int i = 0; i < 25; ++i) a[i] = _mm512_loadu_si512((const void*)s[i]);
  for (int round = 0; round < 24; ++round) {
    for (int x = 0; x < 5; ++x)  /* theta: the parities of the columns */
      c[x] = K8_XOR3(K8_XOR3(a[x], a[x + 5], a[x + 10]), a[x + 15], a[x + 20]);
    for (int x = 0; x < 5; ++x)
      d[x] = _mm512_xor_si512(c[(x + 4) % 5], _mm512_rol_epi64(c[(x + 1) % 5], 1));
    /* theta's XOR, rho and pi (cpu_ring_keccak.c's list) */
#define RP(DST, SRC, X, R) b[DST] = _mm512_rol_epi64(_mm512_xor_si512(a[SRC], d[X]), R)
    KECCAK_RHO_PI(RP);
#undef RP
    for (int y = 0; y < 25; y += 5)  /* chi, row by row */
      for (int x = 0; x < 5; ++x)
        a[x + y] = K8_CHI(b[x + y], b[(x + 1) % 5 + y], b[(x + 2) % 5 + y]);
    a[0] = _mm512_xor_si512(a[0], _mm512_set1_epi64((long long)KECCAK_RC[round]));  /* iota */
  }
  for (int i = 0; i < 25; ++i) _mm512_storeu_si512((void*)s[i], a[i]);
}
