// On the GPU machine: does cuDNN's graph API (the backend C API, no frontend) fuse ResNet-50's
// convolutions with the batch norm's work, and what does it cost?  Counted before building the
// lever (issue 36): for each of ResNet-50's convolution shapes at batch N, fp16 NHWC, the best of
// the engine configurations cuDNN's heuristics offer for
//   conv      Y = conv(X, W)                                    (the convolution alone)
//   +stats    Y = conv(X, W), sum and sum of squares of Y per channel (the statistics in the
//             convolution's epilogue: the batch norm's first read of Y goes away)
//   +prologue Y = conv(relu(X * scale + bias), W), + stats     (the previous batch norm's apply
//             and ReLU in this convolution's prologue: its write and read go away too)
// against the bytes they save over the measured copy bandwidth; and the data gradient as a
// residual block's first convolution needs it, where the shortcut's gradient R is added on:
//   dgrad     dX = dgrad(dY, W)                                  (then a separate addition)
//   beta=1    dX = dgrad(dY, W) + dX                             (the operation's beta)
//   +add      dX = dgrad(dY, W) + R                              (an addition in the epilogue)
// against the separate addition's bytes (two reads and a write of dX) over the copy bandwidth.
// Prints one line per shape in each of two tables.
// Build: g++ -O2 -std=c++17 probe_conv_fusion.cpp -I<cuda>/include -L<cudnn lib> -lcudnn -lcudart
// Run:   probe_conv_fusion [N]   (default 256)
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace {

void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw std::string(what) + ": " + cudnnGetErrorString(s);
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::string(what) + ": " + cudaGetErrorString(e);
}

// One backend descriptor, destroyed with its owner.
struct Desc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit Desc(cudnnBackendDescriptorType_t type) {
    check(cudnnBackendCreateDescriptor(type, &d), "create descriptor");
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() {
    if (d) cudnnBackendDestroyDescriptor(d);
  }
  template <class T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values,
            int64_t count = 1) {
    check(cudnnBackendSetAttribute(d, name, type, count, values), "set attribute");
    return *this;
  }
  Desc& set(cudnnBackendAttributeName_t name, const Desc& other) {
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &other.d);
  }
  Desc& finalize(const char* what) {
    check(cudnnBackendFinalize(d), what);
    return *this;
  }
};

using Dims = std::vector<int64_t>;

// A 4-d tensor in NHWC order (dims given N, C, H, W as cuDNN wants them).
Desc* tensor(std::vector<Desc*>& keep, int64_t uid, Dims dims, cudnnDataType_t type,
             bool virt = false) {
  const Dims strides{dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  int64_t align = 16;
  auto* t = new Desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  keep.push_back(t);
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4)
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4)
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align)
      .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &virt)
      .finalize("tensor");
  return t;
}

Desc* pointwise(std::vector<Desc*>& keep, cudnnPointwiseMode_t mode, Desc* x, Desc* b, Desc* y) {
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  auto* pw = new Desc(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  keep.push_back(pw);
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
      .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec)
      .finalize("pointwise descriptor");
  auto* op = new Desc(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  keep.push_back(op);
  op->set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x)
      .set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y);
  if (b) op->set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  op->finalize("pointwise op");
  return op;
}

struct Shape {
  const char* name;
  int64_t c, h, w, k, r, stride;
};

enum Uid : int64_t { kX = 1, kW, kY, kSum, kSqSum, kScale, kBias, kR, kT1 = 100, kT2, kT3 };

// The graphs run: the convolution (and its fusions), and its data gradient (and its additions).
enum Variant { kConv, kStats, kPrologue, kDgrad, kDgradBeta, kDgradAdd };

struct Result {
  std::string note;  // why none ran, if so
  double ms = 0;     // best configuration's median time
  int tried = 0, ran = 0;
};

double median_ms(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                 cudnnBackendDescriptor_t pack) {
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  std::vector<float> ts;
  for (int i = 0; i < 3; ++i) check(cudnnBackendExecute(handle, plan, pack), "execute");
  for (int i = 0; i < 15; ++i) {
    cudaEventRecord(a);
    check(cudnnBackendExecute(handle, plan, pack), "execute");
    cudaEventRecord(b);
    check(cudaEventSynchronize(b), "synchronize");
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    ts.push_back(ms);
  }
  cudaEventDestroy(a), cudaEventDestroy(b);
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

// Builds the graph of a variant, tries each engine configuration the heuristics list, returns the
// fastest.
Result run(cudnnHandle_t handle, const Shape& s, int64_t n, int variant, void* const* ptrs) {
  std::vector<Desc*> keep;
  struct Free {
    std::vector<Desc*>& k;
    ~Free() {
      for (auto it = k.rbegin(); it != k.rend(); ++it) delete *it;
    }
  } free_all{keep};
  Result res;
  try {
    const int64_t pad = s.r / 2, p = (s.h + 2 * pad - s.r) / s.stride + 1,
                  q = (s.w + 2 * pad - s.r) / s.stride + 1;
    Desc* x = tensor(keep, kX, {n, s.c, s.h, s.w}, CUDNN_DATA_HALF);
    Desc* w = tensor(keep, kW, {s.k, s.c, s.r, s.r}, CUDNN_DATA_HALF);
    Desc* y = tensor(keep, kY, {n, s.k, p, q}, CUDNN_DATA_HALF);
    std::vector<cudnnBackendDescriptor_t> ops;
    Desc* conv_in = x;
    if (variant == kPrologue) {
      Desc* scale = tensor(keep, kScale, {1, s.c, 1, 1}, CUDNN_DATA_HALF);
      Desc* bias = tensor(keep, kBias, {1, s.c, 1, 1}, CUDNN_DATA_HALF);
      Desc* t1 = tensor(keep, kT1, {n, s.c, s.h, s.w}, CUDNN_DATA_FLOAT, true);
      Desc* t2 = tensor(keep, kT2, {n, s.c, s.h, s.w}, CUDNN_DATA_FLOAT, true);
      Desc* t3 = tensor(keep, kT3, {n, s.c, s.h, s.w}, CUDNN_DATA_FLOAT, true);
      ops.push_back(pointwise(keep, CUDNN_POINTWISE_MUL, x, scale, t1)->d);
      ops.push_back(pointwise(keep, CUDNN_POINTWISE_ADD, t1, bias, t2)->d);
      ops.push_back(pointwise(keep, CUDNN_POINTWISE_RELU_FWD, t2, nullptr, t3)->d);
      conv_in = t3;
    }
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2;
    const Dims one{1, 1}, strides{s.stride, s.stride}, pads{pad, pad};
    auto* conv = new Desc(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    keep.push_back(conv);
    conv->set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp)
        .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode)
        .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &dims)
        .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, one.data(), 2)
        .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, strides.data(), 2)
        .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pads.data(), 2)
        .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pads.data(), 2)
        .finalize("convolution descriptor");
    float alpha = 1, beta = variant == kDgradBeta ? 1 : 0;
    if (variant >= kDgrad) {
      // dY is y's shape, dX x's: the data gradient of the same convolution.
      Desc* dx =
          variant == kDgradAdd ? tensor(keep, kT1, {n, s.c, s.h, s.w}, CUDNN_DATA_FLOAT, true) : x;
      auto* dgrad = new Desc(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
      keep.push_back(dgrad);
      dgrad->set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, *dx)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, *w)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, *y)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, *conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, &alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, &beta)
          .finalize("data-gradient op");
      ops.push_back(dgrad->d);
      if (variant == kDgradAdd) {
        Desc* r = tensor(keep, kR, {n, s.c, s.h, s.w}, CUDNN_DATA_HALF);
        ops.push_back(pointwise(keep, CUDNN_POINTWISE_ADD, dx, r, x)->d);
      }
    } else {
      auto* fprop = new Desc(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
      keep.push_back(fprop);
      fprop->set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, *conv_in)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, *w)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *y)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, *conv)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, &alpha)
          .set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, &beta)
          .finalize("convolution op");
      ops.push_back(fprop->d);
      if (variant >= kStats) {
        Desc* sum = tensor(keep, kSum, {1, s.k, 1, 1}, CUDNN_DATA_FLOAT);
        Desc* sqsum = tensor(keep, kSqSum, {1, s.k, 1, 1}, CUDNN_DATA_FLOAT);
        cudnnGenStatsMode_t gmode = CUDNN_GENSTATS_SUM_SQSUM;
        cudnnDataType_t prec = CUDNN_DATA_FLOAT;
        auto* stats = new Desc(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
        keep.push_back(stats);
        stats->set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, &gmode)
            .set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec)
            .set(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, *y)
            .set(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, *sum)
            .set(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, *sqsum)
            .finalize("genstats op");
        ops.push_back(stats->d);
      }
    }
    Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle)
        .set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
             static_cast<int64_t>(ops.size()))
        .finalize("operation graph");
    std::vector<int64_t> uids{kX, kW, kY};
    if (variant == kStats || variant == kPrologue) uids.insert(uids.end(), {kSum, kSqSum});
    if (variant == kPrologue) uids.insert(uids.end(), {kScale, kBias});
    if (variant == kDgradAdd) uids.push_back(kR);
    // Configurations from the instant heuristics, then the fallback list.
    for (cudnnBackendHeurMode_t hmode : {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_FALLBACK}) {
      Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
          .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &hmode);
      if (cudnnBackendFinalize(heur.d) != CUDNN_STATUS_SUCCESS) continue;
      int64_t count = 0;
      cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               0, &count, nullptr);
      count = std::min<int64_t>(count, 8);
      std::vector<Desc*> cfgs;
      std::vector<cudnnBackendDescriptor_t> raw;
      for (int64_t i = 0; i < count; ++i) {
        cfgs.push_back(new Desc(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        keep.push_back(cfgs.back());
        raw.push_back(cfgs.back()->d);
      }
      int64_t got = 0;
      if (count > 0)
        check(cudnnBackendGetAttribute(heur.d, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()),
              "heuristics results");
      for (int64_t i = 0; i < got; ++i) {
        ++res.tried;
        Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle)
            .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *cfgs[i]);
        const cudnnStatus_t st = cudnnBackendFinalize(plan.d);
        if (st != CUDNN_STATUS_SUCCESS) {
          res.note = cudnnGetErrorString(st);
          continue;
        }
        int64_t ws = 0, cnt = 0;
        cudnnBackendGetAttribute(plan.d, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                 1, &cnt, &ws);
        void* workspace = nullptr;
        if (ws > 0 && cudaMalloc(&workspace, ws) != cudaSuccess) continue;
        std::vector<void*> data;
        for (int64_t uid : uids) data.push_back(ptrs[uid]);
        Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
        pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(),
                 static_cast<int64_t>(uids.size()))
            .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data.data(),
                 static_cast<int64_t>(data.size()))
            .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
            .finalize("variant pack");
        try {
          const double ms = median_ms(handle, plan.d, pack.d);
          if (res.ran++ == 0 || ms < res.ms) res.ms = ms;
        } catch (const std::string& e) {
          res.note = e;
        }
        cudaFree(workspace);
      }
      if (res.ran > 0) break;
    }
    if (res.ran == 0 && res.note.empty()) res.note = "no engine configuration";
  } catch (const std::string& e) {
    res.note = e;
  }
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 256;
  try {
    cudnnHandle_t handle;
    check(cudnnCreate(&handle), "cudnnCreate");
    std::printf("cuDNN %zu, batch %lld, fp16 NHWC, fp32 accumulation and statistics\n",
                cudnnGetVersion(), static_cast<long long>(n));
    // Copy bandwidth, for the bytes the fusions save.
    const size_t big = size_t(1) << 30;
    void *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, big), "malloc"), check(cudaMalloc(&b, big), "malloc");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    cudaMemcpy(b, a, big, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e0);
    for (int i = 0; i < 10; ++i) cudaMemcpy(b, a, big, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float copy_ms = 0;
    cudaEventElapsedTime(&copy_ms, e0, e1);
    const double gbps = 2.0 * big * 10 / (copy_ms / 1e3) / 1e9;
    cudaFree(a), cudaFree(b);
    std::printf("copy: %.0f GB/s read + write\n", gbps);
    // torchvision's ResNet-50 (v1.5: the stride on the 3x3), one of each kind of convolution.
    const Shape shapes[] = {
        {"l1 1x1 256>64 56", 256, 56, 56, 64, 1, 1},
        {"l1 3x3 64>64 56", 64, 56, 56, 64, 3, 1},
        {"l1 1x1 64>256 56", 64, 56, 56, 256, 1, 1},
        {"l2 3x3/2 128 56>28", 128, 56, 56, 128, 3, 2},
        {"l2 1x1 512>128 28", 512, 28, 28, 128, 1, 1},
        {"l2 3x3 128 28", 128, 28, 28, 128, 3, 1},
        {"l3 1x1 1024>256 14", 1024, 14, 14, 256, 1, 1},
        {"l3 3x3 256 14", 256, 14, 14, 256, 3, 1},
        {"l3 1x1 256>1024 14", 256, 14, 14, 1024, 1, 1},
        {"l4 1x1 2048>512 7", 2048, 7, 7, 512, 1, 1},
        {"l4 3x3 512 7", 512, 7, 7, 512, 3, 1},
        {"l4 1x1 512>2048 7", 512, 7, 7, 2048, 1, 1},
    };
    std::printf("%-20s %8s %8s %8s %8s  %s\n", "shape", "conv ms", "+stats", "+prolog", "saved*",
                "(*: bytes of one read of Y, and a write and read of X, at copy speed)");
    std::vector<std::string> dgrad_lines;
    char line[256];
    for (const Shape& s : shapes) {
      const int64_t p = (s.h - 1) / s.stride + 1;
      const size_t xs = size_t(n) * s.c * s.h * s.w * 2, ws = size_t(s.k) * s.c * s.r * s.r * 2,
                   ys = size_t(n) * s.k * p * p * 2;
      void* ptrs[kR + 1] = {};
      check(cudaMalloc(&ptrs[kX], xs), "malloc x"), check(cudaMalloc(&ptrs[kW], ws), "malloc w");
      check(cudaMalloc(&ptrs[kY], ys), "malloc y");
      check(cudaMalloc(&ptrs[kSum], s.k * 4), "malloc"),
          check(cudaMalloc(&ptrs[kSqSum], s.k * 4), "m");
      check(cudaMalloc(&ptrs[kScale], s.c * 2), "malloc"),
          check(cudaMalloc(&ptrs[kBias], s.c * 2), "m");
      check(cudaMalloc(&ptrs[kR], xs), "malloc r");
      // 0x3c3c: about 1.06 in fp16 (zeros would flatter the tensor cores' power draw).
      cudaMemset(ptrs[kX], 0x3c, xs), cudaMemset(ptrs[kW], 0x3c, ws);
      cudaMemset(ptrs[kY], 0x3c, ys), cudaMemset(ptrs[kR], 0x3c, xs);
      cudaMemset(ptrs[kScale], 0x3c, s.c * 2), cudaMemset(ptrs[kBias], 0, s.c * 2);
      Result r[3], d[3];
      for (int v = kConv; v <= kPrologue; ++v) r[v] = run(handle, s, n, v, ptrs);
      for (int v = kDgrad; v <= kDgradAdd; ++v) d[v - kDgrad] = run(handle, s, n, v, ptrs);
      const double saved_ms = (ys + 2.0 * xs) / (gbps * 1e9) * 1e3;
      std::printf("%-20s", s.name);
      for (const Result& x : r) x.ran ? std::printf(" %8.3f", x.ms) : std::printf(" %8s", "-");
      std::printf(" %8.3f ", saved_ms);
      for (int v = 0; v < 3; ++v)
        std::printf(" [%d/%d%s%s]", r[v].ran, r[v].tried, r[v].ran ? "" : " ",
                    r[v].ran ? "" : r[v].note.c_str());
      std::printf("\n");
      // The separate addition: two reads and a write of dX.
      const double add_ms = 3.0 * xs / (gbps * 1e9) * 1e3;
      int at = std::snprintf(line, sizeof line, "%-20s", s.name);
      for (const Result& x : d)
        at += x.ran ? std::snprintf(line + at, sizeof line - at, " %8.3f", x.ms)
                    : std::snprintf(line + at, sizeof line - at, " %8s", "-");
      at += std::snprintf(line + at, sizeof line - at, " %8.3f ", add_ms);
      for (const Result& x : d)
        at += std::snprintf(line + at, sizeof line - at, " [%d/%d%s%s]", x.ran, x.tried,
                            x.ran ? "" : " ", x.ran ? "" : x.note.c_str());
      dgrad_lines.push_back(line);
      for (void* q : ptrs)
        if (q) cudaFree(q);
    }
    std::printf("\n%-20s %8s %8s %8s %8s  %s\n", "shape", "dgrad ms", "beta=1", "+add", "add*",
                "(*: a separate addition, two reads and a write of dX, at copy speed)");
    for (const auto& l : dgrad_lines) std::printf("%s\n", l.c_str());
    cudnnDestroy(handle);
  } catch (const std::string& e) {
    std::fprintf(stderr, "probe_conv_fusion: %s\n", e.c_str());
    return 1;
  }
  return 0;
}
