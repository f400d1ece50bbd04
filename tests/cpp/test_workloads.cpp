// Every standard workload (bench/shapes.tsv) gets a real oneDNN kernel, never a reference one
// ("ref:any" and friends are thousands of times slower, see SEMANTICS.md), for every pass, data
// type, layout and mode. Creation only: deconv_impl_name() is known once the handle exists.
//
// Only meaningful on CPUs with AVX2 or more (checked on AVX2 and AVX-512 machines; below AVX2
// oneDNN may have nothing but reference kernels for some problems), so skipped elsewhere.
#include <deconv.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The workload file: the build passes its path (DECONV_SHAPES_TSV); otherwise it is found
// relative to this source file (tests/cpp/ -> bench/).
std::string shapes_path() {
#ifdef DECONV_SHAPES_TSV
    return DECONV_SHAPES_TSV;
#else
    std::string here = __FILE__;
    size_t slash = here.find_last_of('/');
    return (slash == std::string::npos ? std::string(".") : here.substr(0, slash)) + "/../../bench/shapes.tsv";
#endif
}

struct Workload {
    std::string name;
    deconv_params p{};  // f32, channels-first, inference; the test varies the rest
};

// 'x'-joined spatial field; returns the number of values or -1.
int parse_dims(const std::string &f, int64_t *v) {
    std::stringstream ss(f);
    std::string part;
    int n = 0;
    while (std::getline(ss, part, 'x')) {
        if (n == DECONV_MAX_RANK || part.empty()) return -1;
        v[n++] = std::stoll(part);
    }
    return n;
}

// shapes.tsv: name mb ic oc groups in kernel stride pad dilate adj (tab-separated, '#' comments).
// A malformed line becomes a workload with an empty deconv_params.rank == 0 so the test reports it.
std::vector<Workload> load() {
    std::vector<Workload> out;
    std::ifstream f(shapes_path());
    std::string line;
    while (std::getline(f, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> c;
        std::stringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, '\t')) c.push_back(cell);
        Workload w;
        w.name = c.empty() ? "?" : c[0];
        deconv_params_init(&w.p);
        w.p.rank = 0;
        if (c.size() >= 11) {
            try {
                w.p.batch = std::stoll(c[1]);
                w.p.in_channels = std::stoll(c[2]);
                w.p.out_channels = std::stoll(c[3]);
                w.p.groups = std::stoll(c[4]);
                int64_t *fields[6] = {w.p.in_size, w.p.kernel, w.p.stride, w.p.pad, w.p.dilate, w.p.adj};
                int rank = parse_dims(c[5], fields[0]);
                bool ok = rank >= 1;
                for (int i = 1; i < 6 && ok; i++) ok = parse_dims(c[5 + size_t(i)], fields[i]) == rank;
                if (ok) w.p.rank = rank;
            } catch (const std::exception &) {
            }
        }
        out.push_back(w);
    }
    return out;
}

const std::vector<Workload> &workloads() {
    static const std::vector<Workload> w = load();
    return w;
}

bool cpu_has_avx2() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

struct Case {
    size_t index;  // into workloads()
    deconv_dtype dtype;
    deconv_layout layout;
};

std::vector<Case> cases() {
    std::vector<Case> v;
    for (size_t i = 0; i < workloads().size(); i++)
        for (deconv_dtype dt : {DECONV_F32, DECONV_BF16})
            for (deconv_layout l : {DECONV_CHANNELS_FIRST, DECONV_CHANNELS_LAST}) v.push_back({i, dt, l});
    return v;
}

std::string case_name(const ::testing::TestParamInfo<Case> &info) {
    std::string n = workloads()[info.param.index].name;
    for (char &ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n + (info.param.dtype == DECONV_F32 ? "_f32" : "_bf16") +
           (info.param.layout == DECONV_CHANNELS_FIRST ? "_ncx" : "_nxc");
}

TEST(WorkloadsFile, HasWorkloads) {
    ASSERT_FALSE(workloads().empty()) << "no workloads read from " << shapes_path();
    for (const Workload &w : workloads()) EXPECT_GE(w.p.rank, 1) << "malformed line for " << w.name;
}

class Workloads : public ::testing::TestWithParam<Case> {};

TEST_P(Workloads, NoReferenceKernel) {
    if (!cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2";
    const Case &c = GetParam();
    const Workload &w = workloads()[c.index];
    ASSERT_GE(w.p.rank, 1) << "malformed workload " << w.name;
    for (deconv_mode mode : {DECONV_INFERENCE, DECONV_TRAINING}) {
        const bool training = mode == DECONV_TRAINING;
        SCOPED_TRACE(training ? "training" : "inference");
        deconv_params p = w.p;
        p.dtype = c.dtype;
        p.layout = c.layout;
        p.mode = mode;
        deconv *raw = nullptr;
        ASSERT_EQ(deconv_create(&p, &raw), DECONV_OK) << deconv_last_error();
        std::unique_ptr<deconv, decltype(&deconv_destroy)> h(raw, &deconv_destroy);
        const deconv_pass passes[] = {DECONV_PASS_FORWARD, DECONV_PASS_BACKWARD_DATA, DECONV_PASS_BACKWARD_WEIGHTS};
        for (deconv_pass pass : passes) {
            if (!training && pass != DECONV_PASS_FORWARD) continue;
            const char *impl = deconv_impl_name(h.get(), pass);
            ASSERT_NE(impl, nullptr) << "pass " << pass << ": " << deconv_last_error();
            EXPECT_NE(std::strncmp(impl, "ref", 3), 0) << w.name << " pass " << pass << " uses " << impl;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Standard, Workloads, ::testing::ValuesIn(cases()), case_name);

}  // namespace
