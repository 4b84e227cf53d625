/*
 * Prints libvmaf 3.2.0's integer ADM contrast sensitivity factors (integer_adm.c's
 * factor1/factor2 per CSF mode and scale, and their fixed-point forms) for the unit test
 * in engine/src/metric/vmaf/adm.rs. Build against the libvmaf source tree:
 *
 *   cc -O0 -I$VMAF_SRC/libvmaf/src/feature -I$VMAF_SRC/libvmaf/src \
 *      tests/tools/adm_csf_factors.c -lm -o /tmp/adm_csf_factors && /tmp/adm_csf_factors
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* adm_tools.h's dwt_quant_step and Watson tables are integer_adm.c's (same code). */
#include "adm_tools.h"

/* integer_adm.h's CSF modes and luminance (that header clashes with adm_tools.h). */
enum { WATSON97 = 0, BARTEN = 1, BLEND = 2, BLEND_MAE = 3 };
#define CSF_LUM (100.0)

static void factors(int mode, int scale, double dist, int height, double scf, double scfd,
                    float out[2])
{
    if (mode == BARTEN) {
        out[0] = barten_csf(scale, dist, height, CSF_LUM, scf);
        out[1] = barten_csf(scale, dist, height, CSF_LUM, scfd);
    } else if (mode == BLEND) {
        out[0] = barten_watson_blend_csf(scale, 0, dist, height);
        out[1] = barten_watson_blend_csf(scale, 1, dist, height);
    } else if (mode == BLEND_MAE) {
        out[0] = barten_watson_blend_csf_mae(scale, 0, dist, height);
        out[1] = barten_watson_blend_csf_mae(scale, 1, dist, height);
    } else {
        out[0] = 1.0f / dwt_quant_step(&dwt_7_9_YCbCr_threshold[0], scale, 1, dist, height);
        out[1] = 1.0f / dwt_quant_step(&dwt_7_9_YCbCr_threshold[0], scale, 2, dist, height);
    }
}

int main(void)
{
    const struct { double dist; int height; } views[] = { {3.0, 1080}, {5.0, 1080},
                                                          {1.5, 2160}, {3.0, 2160} };
    const struct { double scf, scfd; } scales[] = { {1.0, 1.0}, {0.5, 2.0} };
    for (int mode = 0; mode < 4; ++mode)
        for (unsigned v = 0; v < sizeof views / sizeof views[0]; ++v)
            for (int c = 0; c < (mode == 1 ? 2 : 1); ++c) {
                printf("(%d, %.1f, %d, %.1f, %.1f, [", mode, views[v].dist, views[v].height,
                       scales[c].scf, scales[c].scfd);
                for (int scale = 0; scale < 4; ++scale) {
                    float f[2];
                    factors(mode, scale, views[v].dist, views[v].height, scales[c].scf,
                            scales[c].scfd, f);
                    printf("[%.9g, %.9g]%s", f[0], f[1], scale < 3 ? ", " : "");
                }
                printf("]),\n");
            }
    return 0;
}
