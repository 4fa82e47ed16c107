// Synthetic ImageNet-like data.  Images are a class palette blended by a smooth noise field, a
// class-oriented grating, class-coloured shapes, and fine multi-octave noise: the smooth parts
// carry the label, the fine noise makes JPEG files as large as photos'.
#include "faster/tools/synth.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "faster/core/error.h"
#include "faster/core/parallel.h"
#include "faster/core/progress.h"
#include "faster/core/timer.h"
#include "faster/data/decode/jpeg_encoder.h"
#include "faster/data/sources/image_tree.h"
#include "faster/tools/file_io.h"
#include "faster/tools/image_loop.h"

namespace faster::tools {
namespace fs = std::filesystem;
namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser: a good hash for lattice coordinates and seeds
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t mix(uint64_t a, uint64_t b) {
  return mix(a ^ mix(b));
}
double unit(uint64_t h) {
  return (h >> 11) * (1.0 / 9007199254740992.0);
}  // [0, 1)

// Small deterministic generator for per-image parameters.
struct Rng {
  uint64_t state;
  double next() { return unit(state = mix(state)); }
  double range(double lo, double hi) { return lo + (hi - lo) * next(); }
};

// Value noise: random values on a lattice of `cell` pixels, smoothly interpolated, in [-1, 1].
// The lattice is filled once per image, so a pixel costs four lookups per layer.
class NoiseLayer {
 public:
  NoiseLayer(uint64_t key, float cell, int width, int height)
      : inv_cell_(1.0f / cell),
        nx_(static_cast<int>(width / cell) + 2),
        ny_(static_cast<int>(height / cell) + 2),
        values_(static_cast<size_t>(nx_) * ny_) {
    uint64_t state = key;
    for (float& v : values_) v = static_cast<float>(unit(state = mix(state)) * 2 - 1);
  }
  float at(float x, float y) const {
    x *= inv_cell_, y *= inv_cell_;
    const int ix = static_cast<int>(x), iy = static_cast<int>(y);
    const float tx = x - ix, ty = y - iy;
    const float sx = tx * tx * (3 - 2 * tx), sy = ty * ty * (3 - 2 * ty);
    const float* v = values_.data() + static_cast<size_t>(iy) * nx_ + ix;
    const float top = v[0] + (v[1] - v[0]) * sx;
    const float bottom = v[nx_] + (v[nx_ + 1] - v[nx_]) * sx;
    return top + (bottom - top) * sy;
  }

 private:
  float inv_cell_;
  int nx_, ny_;
  std::vector<float> values_;
};

struct Shape {
  float cx, cy, rx, ry, cos_a, sin_a;
  float color[3];
  bool box;
};

struct Scene {
  float palette[3][3];  // class colours
  float grating_cos, grating_sin, grating_freq, field_cell;
  std::vector<Shape> shapes;
  uint64_t noise_key;
  std::vector<NoiseLayer> layers;  // [0] palette field, [1] tint, [2..] texture octaves
};

// Texture octaves: cell sizes in pixels and amplitudes (grey levels).  Tuned so that quality-90
// files weigh about 100 KiB at ImageNet's mean size, like ImageNet's own JPEGs.
constexpr float kOctaveCell[] = {12.0f, 6.0f, 3.0f, 1.5f};
constexpr float kOctaveAmp[] = {24.0f, 20.0f, 20.0f, 24.0f};
constexpr float kGrain = 40.0f;

void class_palette(uint64_t seed, int label, Scene& s) {
  Rng rng{mix(seed ^ 0xC1A55, static_cast<uint64_t>(label))};
  for (auto& c : s.palette)
    for (float& v : c) v = static_cast<float>(rng.range(20, 235));
  const double angle = rng.range(0, M_PI);
  s.grating_cos = static_cast<float>(std::cos(angle));
  s.grating_sin = static_cast<float>(std::sin(angle));
  s.grating_freq = static_cast<float>(rng.range(0.02, 0.12));
  s.field_cell = static_cast<float>(rng.range(60, 200));
}

Scene make_scene(uint64_t seed, int label, int64_t index, int width, int height) {
  Scene s;
  class_palette(seed, label, s);
  Rng rng{mix(seed, static_cast<uint64_t>(index) * 2 + 1)};
  s.noise_key = mix(seed, static_cast<uint64_t>(index));
  s.layers.emplace_back(s.noise_key ^ 1, s.field_cell, width, height);
  s.layers.emplace_back(s.noise_key ^ 2, 40.0f, width, height);
  for (int o = 0; o < 4; ++o)
    s.layers.emplace_back(s.noise_key + 11 + o, kOctaveCell[o], width, height);
  const int n = 2 + static_cast<int>(rng.next() * 4);
  const bool class_boxes = (label % 2) == 0;  // the shape kind is a class feature too
  for (int i = 0; i < n; ++i) {
    Shape sh;
    sh.cx = static_cast<float>(rng.range(0, width));
    sh.cy = static_cast<float>(rng.range(0, height));
    sh.rx = static_cast<float>(rng.range(0.05, 0.3) * width);
    sh.ry = static_cast<float>(rng.range(0.05, 0.3) * height);
    const double a = rng.range(0, M_PI);
    sh.cos_a = static_cast<float>(std::cos(a)), sh.sin_a = static_cast<float>(std::sin(a));
    const auto& base = s.palette[i % 3];
    for (int c = 0; c < 3; ++c) sh.color[c] = 255.0f - base[c] * 0.8f;
    sh.box = class_boxes;
    s.shapes.push_back(sh);
  }
  return s;
}

float shape_cover(const Shape& sh, float x, float y) {
  const float dx = x - sh.cx, dy = y - sh.cy;
  const float u = (dx * sh.cos_a + dy * sh.sin_a) / sh.rx;
  const float v = (-dx * sh.sin_a + dy * sh.cos_a) / sh.ry;
  const float d = sh.box ? std::max(std::fabs(u), std::fabs(v)) : std::sqrt(u * u + v * v);
  return std::clamp((1.0f - d) * 8.0f, 0.0f, 1.0f);  // soft edge of a few pixels
}

void render_pixel(const Scene& s, int x, int y, float grain, uint8_t* out) {
  const float fx = static_cast<float>(x), fy = static_cast<float>(y);
  // Smooth class-palette field, a tint, the class-oriented grating, then the fine texture.
  const float f = 0.5f + 0.5f * s.layers[0].at(fx, fy);
  const float g = 0.5f + 0.5f * s.layers[1].at(fx, fy);
  const float grating = 28 * std::sin((fx * s.grating_cos + fy * s.grating_sin) * s.grating_freq *
                                      static_cast<float>(2 * M_PI));
  float texture = grain;
  for (int o = 0; o < 4; ++o) texture += kOctaveAmp[o] * s.layers[2 + o].at(fx, fy);
  float rgb[3];
  for (int c = 0; c < 3; ++c) {
    const float base = s.palette[0][c] * (1 - f) + s.palette[1][c] * f;
    rgb[c] = base * (1 - 0.3f * g) + s.palette[2][c] * 0.3f * g + grating;
  }
  for (const auto& sh : s.shapes) {
    const float a = shape_cover(sh, fx, fy);
    if (a > 0)
      for (int c = 0; c < 3; ++c) rgb[c] = rgb[c] * (1 - a) + sh.color[c] * a;
  }
  for (int c = 0; c < 3; ++c)
    out[c] = static_cast<uint8_t>(std::clamp(rgb[c] + texture, 0.0f, 255.0f));
}

}  // namespace

std::string synth_class_name(int label) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "class_%04d", label);
  return buf;
}

std::string synth_file_name(int label, int64_t index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "c%04d_%08lld.JPEG", label, static_cast<long long>(index));
  return buf;
}

void synth_size(uint64_t seed, int64_t index, int& width, int& height) {
  Rng rng{mix(seed ^ 0x51CE, static_cast<uint64_t>(index))};
  const double p = rng.next();
  const int long_side = p < 0.6 ? 500 : static_cast<int>(rng.range(240, 760));
  const double q = rng.next();
  const double aspect = q < 0.5 ? 4.0 / 3 : q < 0.7 ? 1.5 : q < 0.8 ? 1.0 : rng.range(1.1, 2.0);
  const int short_side = std::max(32, static_cast<int>(std::lround(long_side / aspect)));
  const bool portrait = rng.next() < 0.2;
  width = portrait ? short_side : long_side;
  height = portrait ? long_side : short_side;
}

void render_synth_image(uint64_t seed, int label, int64_t index, int width, int height,
                        data::ImageBuffer& out) {
  out.reshape(width, height, 3);
  const Scene scene = make_scene(seed, label, index, width, height);
  for (int y = 0; y < height; ++y) {
    uint8_t* row = out.row(y);
    uint64_t state = mix(scene.noise_key, static_cast<uint64_t>(y));
    for (int x = 0; x < width; ++x) {
      const float grain = kGrain * (static_cast<float>(unit(state = mix(state))) - 0.5f);
      render_pixel(scene, x, y, grain, row + 3 * x);
    }
  }
}

}  // namespace faster::tools

namespace faster::tools {
namespace {

struct Job {
  fs::path path;
  int label;
  int64_t index;
};

std::vector<Job> plan(const SynthOptions& o) {
  std::vector<Job> jobs;
  int64_t index = 0;
  for (const char* split : {"train", "val"}) {
    const int per_class = std::string(split) == "train" ? o.images : o.val;
    for (int c = 0; c < o.classes && per_class > 0; ++c) {
      const fs::path dir = o.out / split / synth_class_name(c);
      for (int i = 0; i < per_class; ++i, ++index)
        jobs.push_back({dir / synth_file_name(c, index), c, index});
    }
  }
  return jobs;
}

constexpr const char* kSynthManifest = data::kTreeManifests[2];  // readers check it

// The class folders of a plan, once each (its jobs come folder by folder).
std::vector<fs::path> folders_of(const std::vector<Job>& jobs) {
  std::vector<fs::path> dirs;
  for (const Job& j : jobs)
    if (dirs.empty() || dirs.back() != j.path.parent_path()) dirs.push_back(j.path.parent_path());
  return dirs;
}

nlohmann::json manifest_options(const SynthOptions& o) {
  return {{"classes", o.classes},
          {"images", o.images},
          {"val", o.val},
          {"seed", o.seed},
          {"quality", o.quality}};
}

nlohmann::json synth_manifest(const SynthOptions& o) {
  return {{"tool", "faster synth"}, {"options", manifest_options(o)}};
}

// OUT is new, empty, or an earlier synth tree, which this run replaces: the files it does not make
// again are deleted (from the earlier run's manifest, nothing else), then the folders that leaves
// empty.  Anything else is refused: synth never mixes its files with others.
void prepare_out(const SynthOptions& o, const std::vector<Job>& jobs) {
  std::error_code ec;
  const fs::path manifest = o.out / kSynthManifest;
  if (fs::exists(manifest, ec)) {
    const nlohmann::json before = read_json_file(manifest);
    const nlohmann::json options =
        before.is_object() ? before.value("options", nlohmann::json()) : nlohmann::json();
    SynthOptions old = o;
    try {
      old.classes = options.at("classes").get<int>();
      old.images = options.at("images").get<int>();
      old.val = options.at("val").get<int>();
    } catch (const std::exception&) {
      FASTER_THROW("--out ", o.out.string(), ": ", kSynthManifest,
                   " is not a faster synth manifest");
    }
    if (old.classes < 1 || old.classes > 100000 || old.images < 1 || old.images > 1000000 ||
        old.val < 0 || old.val > 1000000)
      FASTER_THROW("--out ", o.out.string(), ": ", kSynthManifest,
                   " is not a faster synth manifest");
    const std::vector<Job> earlier = plan(old);
    std::unordered_set<std::string> now;
    for (const Job& j : jobs) now.insert(j.path.string());
    // Nothing but synth's own files (of either tree) may be there: a user's file or folder added
    // to a synth tree is refused before anything is deleted (loaders would read it as data).
    std::unordered_set<std::string> own = {kSynthManifest};
    const auto mine = [&](const fs::path& p) { own.insert(p.lexically_relative(o.out).string()); };
    for (const auto* tree : {&jobs, &earlier}) {
      for (const Job& j : *tree) mine(j.path);
      for (const fs::path& dir : folders_of(*tree))
        for (auto d = dir; d != o.out && d.has_relative_path(); d = d.parent_path()) mine(d);
    }
    refuse_foreign_entries(o.out, own, "synth did not write", "synth");
    for (const Job& j : earlier)
      if (!now.count(j.path.string())) fs::remove(j.path, ec);
    for (const fs::path& dir : folders_of(earlier)) ::rmdir(dir.c_str());  // only if left empty
    for (const char* split : {"train", "val"}) ::rmdir((o.out / split).c_str());
  } else if (!fs::is_empty(o.out, ec)) {
    throw Error("--out " + o.out.string() + " is not empty and holds no faster synth tree (no " +
                    kSynthManifest + ")",
                "choose a new or empty folder: synth never mixes its files with others");
  }
  write_manifest(manifest, synth_manifest(o), /*complete=*/false);
  for (const fs::path& dir : folders_of(jobs)) fs::create_directories(dir, ec);
}

}  // namespace

SynthSummary synth_dataset(const SynthOptions& o) {
  if (o.out.empty()) FASTER_USAGE_ERROR("synth: --out is required");
  // Every image is planned up front: bounded so the plan stays small.
  check_range("--classes", o.classes, 1, 100000);
  check_range("--images", o.images, 1, 1000000);
  check_range("--val", o.val, 0, 1000000);
  check_range("--quality", o.quality, 1, 100);
  check_workers(o.workers);
  const std::vector<Job> jobs = plan(o);
  std::error_code ec;
  if (fs::exists(o.out, ec) && !fs::is_directory(o.out, ec))
    throw Error("--out " + o.out.string() + " is a file, not a folder", "choose a new folder");
  check_output_dir(o.out, "--out");
  fs::create_directories(o.out, ec);
  if (ec) FASTER_THROW("cannot create --out ", o.out.string(), ": ", ec.message());
  DirectoryLock lock(o.out, "'faster synth'");  // a second synth would delete this one's files
  prepare_out(o, jobs);
  const int64_t n = static_cast<int64_t>(jobs.size());
  Timer timer;
  std::atomic<int64_t> bytes{0}, pixels{0}, width_sum{0}, height_sum{0};
  struct Worker {  // each thread's encoder and buffers, reused from image to image
    data::JpegEncoder encoder;
    data::ImageBuffer image;
    std::vector<uint8_t> encoded;
  };
  std::vector<Worker> workers(static_cast<size_t>(worker_count(o.workers, n)));
  data::JpegEncodeOptions opts;
  opts.quality = o.quality;
  for_each_image(
      "synth", static_cast<int>(workers.size()), n, o.progress, [&](int worker, int64_t i) {
        Worker& w = workers[static_cast<size_t>(worker)];
        const Job& job = jobs[static_cast<size_t>(i)];
        int width, height;
        synth_size(o.seed, job.index, width, height);
        render_synth_image(o.seed, job.label, job.index, width, height, w.image);
        w.encoder.encode(w.image.view(), opts, w.encoded);
        write_file_atomic(job.path, w.encoded.data(), w.encoded.size());  // never half-written
        bytes += static_cast<int64_t>(w.encoded.size());
        pixels += int64_t{width} * height;
        width_sum += width;
        height_sum += height;
      });
  write_manifest(o.out / kSynthManifest, synth_manifest(o), /*complete=*/true);
  return {n, bytes.load(), timer.seconds(), pixels.load(), width_sum.load(), height_sum.load()};
}

}  // namespace faster::tools
