/*
 * vship_bench.c: Vship's C API (libvship.so, VshipAPI.h) timed on one fixed 1920x1080 I420
 * 8-bit pair, so that its rows stand next to gpumetrics' engine benches in one GPU call
 * (issue 25). scripts/gpu-all.sh's step `vship` builds libvship.so and this program on the
 * GPU machine and runs them; see the step for the commands.
 *
 *   vship_bench [--seconds S] [--handlers N] [--intensity NITS]
 *
 * For Butteraugli (Qnorm 2, intensity target NITS, default 203: Vship's own default; the
 * engine's is libjxl's 80), SSIMULACRA2 and CVVDP (display model `standard_fhd`, 30 fps, no
 * resize to the display: the engine's `cvvdp` defaults), one row per input kind, each timed for S seconds
 * (default 2) after 3 warm-up pairs per handler:
 *   device         frames in GPU memory (cudaMalloc). Vship's API has no device-frame entry:
 *                  it copies every plane with cudaMemcpyAsync(..., cudaMemcpyHostToDevice),
 *                  which reads a device pointer through unified addressing. The score is
 *                  checked against the pinned row's, so a copy that read the wrong memory shows.
 *   pinned         frames in page-locked host memory (cudaMallocHost): Vship's own use
 *   pageable       frames in malloc'd memory: what the engine's `host` rows give it
 *   device, N ...  N handlers (default 8) on N threads, all on the same device frames
 *   pinned, N ...  the same with the pinned frames
 * A handler scores one pair at a time and returns the score (the call waits for the GPU),
 * so one handler is one pair in flight; N handlers are Vship's way to fill the GPU. CVVDP is
 * temporal: a handler's pairs are successive frames of one sequence (the same pair again),
 * its score the running JOD of the sequence, as the engine's `cvvdp` field.
 * pairs/s is the pairs scored by all handlers over the longest handler's time.
 *
 * Output: markdown rows `| vship VERSION | metric | frames | pairs/s | score |`, then the
 * scores of the engine benches' own frames (white noise, engine/benches/common: pattern with
 * seeds 1 and 2) for comparing scores with the engine. Any CUDA or Vship error is printed; a
 * failed row does not stop the others, and the exit status is then 1.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "VshipAPI.h"

#define W 1920
#define H 1080
#define CW (W / 2)
#define CH (H / 2)
#define FRAME_BYTES ((size_t)W * H + 2 * (size_t)CW * CH)

enum metric { BUTTERAUGLI, SSIMULACRA2, CVVDP };
static const char *metric_name[] = {"butteraugli", "ssimulacra2", "cvvdp"};

static double seconds = 2.0;
static int handlers = 8;
static float intensity = 203.0f;
static char version[32];
static int failed = 0;

/* Setup errors (allocation, copies): nothing can be measured after them. */
#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "vship_bench: %s failed: %s (%s:%d)\n", #call,                \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static void vship_fail(const char *what, Vship_Exception e) {
    char msg[1024];
    Vship_GetDetailedLastError(msg, sizeof msg);
    fprintf(stderr, "vship_bench: %s failed (Vship error %d): %s\n", what, (int)e, msg);
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --- Frames --------------------------------------------------------------------------- */

static uint64_t xorshift(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint8_t clamp(int v, int lo, int hi) { return (uint8_t)(v < lo ? lo : v > hi ? hi : v); }

/* Smooth noise in [lo, hi]: random values on a grid of `cell` pixels, bilinearly
 * interpolated, plus a little fine grain, so that the structure metrics see edges and flat
 * parts rather than white noise. */
static void smooth_plane(uint8_t *p, int w, int h, int cell, int lo, int hi, uint64_t seed) {
    int gw = w / cell + 2, gh = h / cell + 2;
    float *grid = malloc(sizeof(float) * gw * gh);
    uint64_t s = seed | 1;
    if (!grid) {
        fprintf(stderr, "vship_bench: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < gw * gh; i++) grid[i] = (float)(lo + (int)(xorshift(&s) >> 40) % (hi - lo + 1));
    for (int y = 0; y < h; y++) {
        int gy = y / cell;
        float fy = (float)(y % cell) / cell;
        for (int x = 0; x < w; x++) {
            int gx = x / cell;
            float fx = (float)(x % cell) / cell;
            float top = grid[gy * gw + gx] * (1 - fx) + grid[gy * gw + gx + 1] * fx;
            float bottom = grid[(gy + 1) * gw + gx] * (1 - fx) + grid[(gy + 1) * gw + gx + 1] * fx;
            int grain = (int)(xorshift(&s) >> 61) - 4; /* -4..3 */
            p[y * w + x] = clamp((int)lrintf(top * (1 - fy) + bottom * fy) + grain, lo, hi);
        }
    }
    free(grid);
}

/* The reference: smooth limited-range noise. The distorted frame: the reference with a
 * small deterministic error (luma +-2, chroma +-1), a mild, visible-to-the-metrics change. */
static void make_pair(uint8_t *ref, uint8_t *dist) {
    uint64_t s = 12345;
    smooth_plane(ref, W, H, 16, 16, 235, 1);
    smooth_plane(ref + W * H, CW, CH, 8, 16, 240, 2);
    smooth_plane(ref + W * H + CW * CH, CW, CH, 8, 16, 240, 3);
    for (size_t i = 0; i < FRAME_BYTES; i++) {
        int luma = i < (size_t)W * H;
        int delta = luma ? (int)(xorshift(&s) % 5) - 2 : (int)(xorshift(&s) % 3) - 1;
        dist[i] = clamp(ref[i] + delta, 16, luma ? 235 : 240);
    }
}

/* engine/benches/common's `pattern`: the engine benches' frames (I420::new(w, h, seed)). */
static void engine_pattern(uint8_t *p, size_t len, uint64_t seed) {
    uint64_t s = seed | 1;
    for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(xorshift(&s) >> 56);
}

/* One frame's planes (I420, tightly packed) from a base pointer. */
typedef struct {
    const uint8_t *planes[3];
} frame_t;

static frame_t frame_at(const uint8_t *base) {
    frame_t f = {{base, base + W * H, base + W * H + CW * CH}};
    return f;
}

static const int64_t strides[3] = {W, CW, CW};

/* --- Handlers ------------------------------------------------------------------------- */

typedef struct {
    enum metric metric;
    Vship_SSIMU2Handler ssimu2;
    Vship_ButteraugliHandler butter;
    Vship_CVVDPHandler cvvdp;
} handler_t;

static Vship_Colorspace_t colorspace(void) {
    Vship_Colorspace_t c;
    memset(&c, 0, sizeof c);
    c.width = W;
    c.height = H;
    c.target_width = -1; /* no resize */
    c.target_height = -1;
    c.sample = Vship_SampleUINT8;
    c.range = Vship_RangeLimited;
    c.subsampling.subw = 1;
    c.subsampling.subh = 1;
    c.chromaLocation = Vship_ChromaLoc_Left;
    c.colorFamily = Vship_ColorYUV;
    c.YUVMatrix = Vship_MATRIX_BT709;
    c.transferFunction = Vship_TRC_BT709;
    c.primaries = Vship_PRIMARIES_BT709;
    return c; /* crop stays {0, 0, 0, 0} */
}

static void handler_init(handler_t *h, enum metric m) {
    Vship_Colorspace_t c = colorspace();
    Vship_Exception e;
    h->metric = m;
    if (m == SSIMULACRA2)
        e = Vship_SSIMU2Init(&h->ssimu2, c, c);
    else if (m == CVVDP)
        e = Vship_CVVDPInit(&h->cvvdp, c, c, 30.0f, false, "standard_fhd");
    else
        e = Vship_ButteraugliInit(&h->butter, c, c, 2, intensity);
    if (e != Vship_NoError)
        vship_fail(m == SSIMULACRA2 ? "Vship_SSIMU2Init" : m == CVVDP ? "Vship_CVVDPInit" : "Vship_ButteraugliInit", e);
}

static void handler_free(handler_t *h) {
    Vship_Exception e = h->metric == SSIMULACRA2 ? Vship_SSIMU2Free(h->ssimu2)
                        : h->metric == CVVDP   ? Vship_CVVDPFree(h->cvvdp)
                                               : Vship_ButteraugliFree(h->butter);
    if (e != Vship_NoError) vship_fail("freeing a handler", e);
}

/* One pair: 0 and the score (SSIMULACRA2's score, CVVDP's running JOD; Butteraugli's 3-norm
 * in score[0] and max norm in score[1]), or the error in err. */
static int handler_score(handler_t *h, frame_t *r, frame_t *d, double score[2], char *err, int len) {
    Vship_Exception e;
    if (h->metric == SSIMULACRA2) {
        e = Vship_ComputeSSIMU2(h->ssimu2, &score[0], r->planes, d->planes, strides, strides);
        score[1] = 0;
    } else if (h->metric == CVVDP) {
        e = Vship_ComputeCVVDP(h->cvvdp, &score[0], NULL, 0, r->planes, d->planes, strides, strides);
        score[1] = 0;
    } else {
        Vship_ButteraugliScore s;
        e = Vship_ComputeButteraugli(h->butter, &s, NULL, 0, r->planes, d->planes, strides, strides);
        score[0] = s.norm3;
        score[1] = s.norminf;
    }
    if (e == Vship_NoError) return 0;
    int n = h->metric == SSIMULACRA2 ? Vship_SSIMU2GetDetailedLastError(h->ssimu2, err, len)
            : h->metric == CVVDP     ? Vship_CVVDPGetDetailedLastError(h->cvvdp, err, len)
                                     : Vship_ButteraugliGetDetailedLastError(h->butter, err, len);
    if (n == 0) Vship_GetDetailedLastError(err, len);
    return (int)e;
}

static void format_score(enum metric m, const double s[2], char *out, size_t len) {
    if (m == SSIMULACRA2 || m == CVVDP)
        snprintf(out, len, "%.4f", s[0]);
    else
        snprintf(out, len, "3-norm %.4f, max %.4f", s[0], s[1]);
}

/* --- Timing ----------------------------------------------------------------------------- */

typedef struct {
    handler_t h;
    frame_t r, d;
    pthread_barrier_t *start;
    long pairs;
    double elapsed;
    double score[2];
    int error;
    char err[1024];
} worker_t;

static void *work(void *arg) {
    worker_t *w = arg;
    for (int i = 0; i < 3 && !w->error; i++) /* warm-up */
        w->error = handler_score(&w->h, &w->r, &w->d, w->score, w->err, sizeof w->err);
    pthread_barrier_wait(w->start); /* every worker gets here, failed or not */
    double t0 = now();
    while (!w->error && now() - t0 < seconds) {
        w->error = handler_score(&w->h, &w->r, &w->d, w->score, w->err, sizeof w->err);
        if (!w->error) w->pairs++;
    }
    w->elapsed = now() - t0;
    return NULL;
}

/* Times n handlers of metric m on n threads over the pair (r, d); prints the row and returns
 * the first handler's score in score (NAN when the row failed). */
static void row(enum metric m, const char *frames, int n, const uint8_t *r, const uint8_t *d, double score[2]) {
    worker_t *w = calloc(n, sizeof *w);
    pthread_t *t = calloc(n, sizeof *t);
    pthread_barrier_t start;
    char label[96], text[96];
    if (!w || !t) {
        fprintf(stderr, "vship_bench: out of memory\n");
        exit(1);
    }
    pthread_barrier_init(&start, NULL, n);
    for (int i = 0; i < n; i++) {
        handler_init(&w[i].h, m);
        w[i].r = frame_at(r);
        w[i].d = frame_at(d);
        w[i].start = &start;
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "vship_bench: pthread_create failed\n");
            exit(1);
        }
    long pairs = 0;
    double longest = 0;
    int bad = -1;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        pairs += w[i].pairs;
        if (w[i].elapsed > longest) longest = w[i].elapsed;
        if (w[i].error && bad < 0) bad = i;
    }
    for (int i = 0; i < n; i++) handler_free(&w[i].h);
    pthread_barrier_destroy(&start);
    if (n == 1)
        snprintf(label, sizeof label, "%s", frames);
    else
        snprintf(label, sizeof label, "%s, %d handlers on %d threads", frames, n, n);
    if (bad >= 0) {
        printf("| vship %s | %s | %s | n/a: Vship error %d: %s | - |\n", version, metric_name[m], label,
               w[bad].error, w[bad].err);
        failed = 1;
        score[0] = score[1] = NAN;
    } else {
        format_score(m, w[0].score, text, sizeof text);
        printf("| vship %s | %s | %s | %.0f | %s |\n", version, metric_name[m], label, pairs / longest, text);
        score[0] = w[0].score[0];
        score[1] = w[0].score[1];
    }
    fflush(stdout);
    free(w);
    free(t);
}

/* Whether two rows scored the pair alike (a device row that read the wrong memory would not). */
static void same_score(enum metric m, const char *a, const double sa[2], const char *b, const double sb[2]) {
    for (int i = 0; i < 2; i++) {
        if (isnan(sa[i]) || isnan(sb[i])) return; /* the row failed and said so */
        if (fabs(sa[i] - sb[i]) > 1e-3 * fmax(1.0, fabs(sb[i]))) {
            printf("FAILED: %s: the %s row scored %.6f, the %s row %.6f\n", metric_name[m], a, sa[i], b, sb[i]);
            failed = 1;
        }
    }
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--handlers") && i + 1 < argc)
            handlers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--intensity") && i + 1 < argc)
            intensity = (float)atof(argv[++i]);
        else {
            fprintf(stderr, "usage: vship_bench [--seconds S] [--handlers N] [--intensity NITS]\n");
            return 2;
        }
    }
    if (seconds <= 0 || handlers < 1) {
        fprintf(stderr, "vship_bench: --seconds must be > 0 and --handlers >= 1\n");
        return 2;
    }

    Vship_Version v = Vship_GetVersion();
    snprintf(version, sizeof version, "%d.%d.%d", v.major, v.minor, v.minorMinor);
    Vship_Exception e = Vship_GPUFullCheck(0);
    if (e != Vship_NoError) vship_fail("Vship_GPUFullCheck(0)", e);
    Vship_DeviceInfo info;
    e = Vship_GetDeviceInfo(&info, 0);
    if (e != Vship_NoError) vship_fail("Vship_GetDeviceInfo", e);
    int runtime = 0, driver = 0;
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    printf("Vship %s (%s backend) on %s, %d SMs; CUDA runtime %d, driver %d\n", version,
           v.backend == Vship_Cuda ? "CUDA" : "HIP", info.name, info.MultiProcessorCount, runtime, driver);
    printf("1920x1080 I420 8-bit, limited range, BT.709; Butteraugli Qnorm 2, intensity %.0f nits; "
           "CVVDP standard_fhd, 30 fps; %.1f s per row; N = %d\n\n",
           intensity, seconds, handlers);

    /* The pair in pageable, pinned and device memory (two frames in one buffer each). */
    uint8_t *pageable = malloc(2 * FRAME_BYTES), *pinned, *device;
    if (!pageable) {
        fprintf(stderr, "vship_bench: out of memory\n");
        return 1;
    }
    make_pair(pageable, pageable + FRAME_BYTES);
    CUDA_CHECK(cudaMallocHost((void **)&pinned, 2 * FRAME_BYTES));
    memcpy(pinned, pageable, 2 * FRAME_BYTES);
    CUDA_CHECK(cudaMalloc((void **)&device, 2 * FRAME_BYTES));
    CUDA_CHECK(cudaMemcpy(device, pageable, 2 * FRAME_BYTES, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaDeviceSynchronize());

    printf("| implementation | metric | frames | pairs/s | score |\n");
    printf("| --- | --- | --- | --- | --- |\n");
    for (int m = BUTTERAUGLI; m <= CVVDP; m++) {
        double dev[2], pin[2], pag[2], devn[2], pinn[2];
        row(m, "device", 1, device, device + FRAME_BYTES, dev);
        row(m, "pinned", 1, pinned, pinned + FRAME_BYTES, pin);
        row(m, "pageable", 1, pageable, pageable + FRAME_BYTES, pag);
        row(m, "device", handlers, device, device + FRAME_BYTES, devn);
        row(m, "pinned", handlers, pinned, pinned + FRAME_BYTES, pinn);
        same_score(m, "device", dev, "pinned", pin);
        same_score(m, "pageable", pag, "pinned", pin);
        same_score(m, "device N", devn, "pinned", pin);
        same_score(m, "pinned N", pinn, "pinned", pin);
    }

    /* The engine benches' frames, for comparing scores with the engine (not timed). */
    engine_pattern(pageable, FRAME_BYTES, 1);
    engine_pattern(pageable + FRAME_BYTES, FRAME_BYTES, 2);
    memcpy(pinned, pageable, 2 * FRAME_BYTES);
    printf("\nScores of the engine benches' frames (engine/benches/common, pattern seeds 1 and 2):\n");
    for (int m = BUTTERAUGLI; m <= CVVDP; m++) {
        handler_t h;
        frame_t r = frame_at(pinned), d = frame_at(pinned + FRAME_BYTES);
        double s[2];
        char err[1024], text[96];
        handler_init(&h, m);
        int code = handler_score(&h, &r, &d, s, err, sizeof err);
        if (code) {
            printf("  %s: FAILED: Vship error %d: %s\n", metric_name[m], code, err);
            failed = 1;
        } else {
            format_score(m, s, text, sizeof text);
            printf("  %s: %s\n", metric_name[m], text);
        }
        handler_free(&h);
    }

    CUDA_CHECK(cudaFree(device));
    CUDA_CHECK(cudaFreeHost(pinned));
    free(pageable);
    if (failed) fprintf(stderr, "vship_bench: some rows failed (see above)\n");
    return failed;
}
