/* The README's C example: create, set weights, forward, backward, errors, destroy. */
#include <deconv.h>

#include <stdio.h>

int main(void) {
    /* 1 image, 2 -> 3 channels, 4x4 -> 8x8: kernel 4, stride 2, pad 1 (a DCGAN-style upsampling). */
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 2;
    p.batch = 1;
    p.in_channels = 2;
    p.out_channels = 3;
    p.in_size[0] = p.in_size[1] = 4;
    p.kernel[0] = p.kernel[1] = 4;
    p.stride[0] = p.stride[1] = 2;
    p.pad[0] = p.pad[1] = 1;
    p.mode = DECONV_TRAINING; /* forward and backward */

    int64_t out[DECONV_MAX_RANK];
    deconv_sizes n;
    if (deconv_output_shape(&p, out) != DECONV_OK || deconv_buffer_sizes(&p, &n) != DECONV_OK) {
        fprintf(stderr, "%s\n", deconv_last_error());
        return 1;
    }
    printf("output %lld x %lld, dst holds %lld floats\n", (long long)out[0], (long long)out[1], (long long)n.dst);

    float src[2 * 4 * 4], weights[2 * 3 * 4 * 4], bias[3], dst[3 * 8 * 8];
    for (int i = 0; i < 32; ++i) src[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < 96; ++i) weights[i] = 0.01f * (float)i;
    for (int i = 0; i < 3; ++i) bias[i] = 0.5f;

    deconv *h = NULL;
    deconv_status s = deconv_create(&p, &h);
    if (s != DECONV_OK) {
        fprintf(stderr, "create: %s: %s\n", deconv_status_string(s), deconv_last_error());
        return 1;
    }
    printf("forward runs on %s\n", deconv_impl_name(h, DECONV_PASS_FORWARD));

    /* Weights given once, packed into the kernel's layout; weights == NULL then uses them. */
    if (deconv_set_weights(h, weights, bias) != DECONV_OK ||
        deconv_forward(h, src, NULL, NULL, dst, DECONV_REQ_WRITE) != DECONV_OK) {
        fprintf(stderr, "%s\n", deconv_last_error());
        return 1;
    }
    printf("dst[0] = %f\n", dst[0]);

    /* Gradients: diff_src overwritten, diff_weights accumulated, diff_bias written. */
    float diff_dst[3 * 8 * 8], diff_src[2 * 4 * 4], diff_weights[2 * 3 * 4 * 4] = {0}, diff_bias[3];
    for (int i = 0; i < 192; ++i) diff_dst[i] = 1.0f;
    s = deconv_backward(h, src, weights, diff_dst, diff_src, DECONV_REQ_WRITE, diff_weights, DECONV_REQ_ADD,
                        diff_bias, DECONV_REQ_WRITE);
    if (s != DECONV_OK) {
        fprintf(stderr, "%s\n", deconv_last_error());
        return 1;
    }
    printf("diff_bias[0] = %f (64 output pixels of gradient 1)\n", diff_bias[0]);

    /* Errors are statuses with a message naming the field; nothing is written. */
    p.adj[0] = 2;
    deconv *bad = NULL;
    s = deconv_create(&p, &bad);
    printf("adj 2 with stride 2: %s: %s\n", deconv_status_string(s), deconv_last_error());

    deconv_destroy(h);
    return s == DECONV_INVALID_ARGUMENT && bad == NULL ? 0 : 1;
}
