/* A program built against an installed libdeconv only: one forward pass, checked by hand. */
#include <deconv.h>

#include <stdio.h>

int main(void) {
    deconv_params p;
    deconv_params_init(&p);
    p.rank = 1;
    p.in_size[0] = 3;
    p.kernel[0] = 2; /* out = 4: dst[o] = sum_k src[o-k] * w[k] + bias */
    float src[3] = {1, 2, 3}, w[2] = {10, 1}, bias[1] = {0.5f}, dst[4];
    deconv *h = NULL;
    if (deconv_create(&p, &h) != DECONV_OK ||
        deconv_forward(h, src, w, bias, dst, DECONV_REQ_WRITE) != DECONV_OK) {
        fprintf(stderr, "%s\n", deconv_last_error());
        return 1;
    }
    deconv_destroy(h);
    const float want[4] = {10.5f, 21.5f, 32.5f, 3.5f};
    for (int i = 0; i < 4; ++i)
        if (dst[i] != want[i]) {
            fprintf(stderr, "dst[%d] = %g, expected %g\n", i, dst[i], want[i]);
            return 1;
        }
    printf("installed libdeconv %u works\n", deconv_version());
    return 0;
}
