/* A client that links nothing of libdeconv: it dlopens the library by path and resolves only
 * deconv_get_api, as a plugin host or a language runtime would. deconv.h is used for its types.
 *
 *   dlopen_client LIBRARY forward        a 2D forward pass with groups, stride, pad and bias,
 *                                        checked against a direct evaluation of the definition
 *   dlopen_client LIBRARY wrong-version  versions other than DECONV_API_VERSION are refused with
 *                                        NULL and a message, and the right one still works after */
#include <deconv.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                          \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fputc('\n', stderr);                                                                \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

static const deconv_api *load(const char *path, void **library) {
    *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(*library != NULL, "dlopen: %s", dlerror());
    deconv_get_api_fn get_api;
    /* POSIX: a data pointer converted to a function pointer through memcpy. */
    void *symbol = dlsym(*library, "deconv_get_api");
    CHECK(symbol != NULL, "dlsym(deconv_get_api): %s", dlerror());
    memcpy(&get_api, &symbol, sizeof get_api);
    const deconv_api *api = get_api(DECONV_API_VERSION);
    CHECK(api != NULL, "deconv_get_api(%d) returned NULL", DECONV_API_VERSION);
    CHECK(api->api_version == DECONV_API_VERSION, "api_version %u", api->api_version);
    CHECK(api->library_version == api->version(), "library_version %u, version() %u",
          api->library_version, api->version());
    return api;
}

/* 2D, channels-first, groups 2: in 4 -> out 6 channels, 3x2 input, kernel 3x2, stride 2x1,
 * pad 1x0. dst[n][oc][y][x] = bias[oc] + sum over ic of the group, ky, kx with
 * y = iy*stride - pad + ky of src[n][ic][iy][ix] * w[ic][oc % 3][ky][kx]. */
enum { N = 1, IC = 4, OC = 6, G = 2, IH = 3, IW = 2, KH = 3, KW = 2, SH = 2, SW = 1, PH = 1, PW = 0 };
enum { OH = SH * (IH - 1) + KH - 2 * PH, OW = SW * (IW - 1) + KW - 2 * PW };

static void reference(const float *src, const float *w, const float *bias, double *dst) {
    const int icg = IC / G, ocg = OC / G;
    for (int n = 0; n < N; ++n)
        for (int oc = 0; oc < OC; ++oc)
            for (int y = 0; y < OH; ++y)
                for (int x = 0; x < OW; ++x) dst[((n * OC + oc) * OH + y) * OW + x] = bias[oc];
    for (int n = 0; n < N; ++n)
        for (int ic = 0; ic < IC; ++ic)
            for (int j = 0; j < ocg; ++j)
                for (int iy = 0; iy < IH; ++iy)
                    for (int ix = 0; ix < IW; ++ix)
                        for (int ky = 0; ky < KH; ++ky)
                            for (int kx = 0; kx < KW; ++kx) {
                                const int y = iy * SH - PH + ky, x = ix * SW - PW + kx;
                                if (y < 0 || y >= OH || x < 0 || x >= OW) continue;
                                const int oc = (ic / icg) * ocg + j;
                                dst[((n * OC + oc) * OH + y) * OW + x] +=
                                    (double)src[((n * IC + ic) * IH + iy) * IW + ix] *
                                    w[((ic * ocg + j) * KH + ky) * KW + kx];
                            }
}

static int forward(const char *path) {
    void *library;
    const deconv_api *api = load(path, &library);
    deconv_params p;
    CHECK(api->params_init(&p) == DECONV_OK, "params_init: %s", api->last_error());
    p.rank = 2;
    p.batch = N;
    p.in_channels = IC;
    p.out_channels = OC;
    p.groups = G;
    p.in_size[0] = IH, p.in_size[1] = IW;
    p.kernel[0] = KH, p.kernel[1] = KW;
    p.stride[0] = SH, p.stride[1] = SW;
    p.pad[0] = PH, p.pad[1] = PW;

    int64_t out[DECONV_MAX_RANK] = {0};
    CHECK(api->output_shape(&p, out) == DECONV_OK, "output_shape: %s", api->last_error());
    CHECK(out[0] == OH && out[1] == OW, "output shape %lld x %lld, expected %d x %d",
          (long long)out[0], (long long)out[1], OH, OW);
    deconv_sizes sizes;
    CHECK(api->buffer_sizes(&p, &sizes) == DECONV_OK, "buffer_sizes: %s", api->last_error());
    CHECK(sizes.src == N * IC * IH * IW && sizes.weights == IC * (OC / G) * KH * KW &&
              sizes.bias == OC && sizes.dst == N * OC * OH * OW,
          "buffer sizes %lld %lld %lld %lld", (long long)sizes.src, (long long)sizes.weights,
          (long long)sizes.bias, (long long)sizes.dst);

    float src[N * IC * IH * IW], w[IC * (OC / G) * KH * KW], bias[OC], dst[N * OC * OH * OW];
    double want[N * OC * OH * OW];
    /* Small integers and halves: every product and sum is exact in f32. */
    for (size_t i = 0; i < sizeof src / sizeof *src; ++i) src[i] = (float)((int)(i * 7 % 11) - 5);
    for (size_t i = 0; i < sizeof w / sizeof *w; ++i) w[i] = (float)((int)(i * 5 % 9) - 4) * 0.5f;
    for (int i = 0; i < OC; ++i) bias[i] = (float)i - 2.5f;
    reference(src, w, bias, want);

    deconv *h = NULL;
    CHECK(api->create(&p, &h) == DECONV_OK, "create: %s", api->last_error());
    CHECK(api->impl_name(h, DECONV_PASS_FORWARD) != NULL, "impl_name: %s", api->last_error());
    CHECK(api->forward(h, src, w, bias, dst, DECONV_REQ_WRITE) == DECONV_OK, "forward: %s",
          api->last_error());
    for (int i = 0; i < N * OC * OH * OW; ++i)
        CHECK(fabs(dst[i] - want[i]) == 0.0, "dst[%d] = %g, expected %g", i, dst[i], want[i]);
    api->destroy(h);
    CHECK(dlclose(library) == 0, "dlclose: %s", dlerror());
    printf("dlopen forward: %d outputs exact, impl via the function table\n", N * OC * OH * OW);
    return 0;
}

static int wrong_version(const char *path) {
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(library != NULL, "dlopen: %s", dlerror());
    void *symbol = dlsym(library, "deconv_get_api");
    CHECK(symbol != NULL, "dlsym(deconv_get_api): %s", dlerror());
    deconv_get_api_fn get_api;
    memcpy(&get_api, &symbol, sizeof get_api);
    const uint32_t wrong[] = {0, DECONV_API_VERSION + 1, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; ++i)
        CHECK(get_api(wrong[i]) == NULL, "version %u accepted", wrong[i]);
    const deconv_api *api = get_api(DECONV_API_VERSION);
    CHECK(api != NULL, "the right version refused after wrong ones");
    /* The refusal left a message naming the version asked for. */
    get_api(DECONV_API_VERSION + 1);
    char expected[32];
    snprintf(expected, sizeof expected, "%u", DECONV_API_VERSION + 1);
    CHECK(strstr(api->last_error(), "api_version") && strstr(api->last_error(), expected),
          "message '%s' names neither api_version nor %s", api->last_error(), expected);
    printf("dlopen wrong version: refused with \"%s\"\n", api->last_error());
    CHECK(dlclose(library) == 0, "dlclose: %s", dlerror());
    return 0;
}

int main(int argc, char **argv) {
    CHECK(argc == 3, "usage: dlopen_client LIBRARY forward|wrong-version");
    if (strcmp(argv[2], "forward") == 0) return forward(argv[1]);
    if (strcmp(argv[2], "wrong-version") == 0) return wrong_version(argv[1]);
    CHECK(0, "unknown case '%s'", argv[2]);
    return 1;
}
