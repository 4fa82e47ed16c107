// The reports' JSON (a run's, an epoch's, an evaluation's) and the metrics log of --log-dir.
#include <filesystem>

#include "faster/core/error.h"
#include "faster/core/line_chart.h"
#include "faster/tools/file_io.h"
#include "faster/train/run.h"

namespace faster::train {
namespace fs = std::filesystem;

nlohmann::json EpochStats::to_json() const {
  nlohmann::json j = {{"epoch", epoch},
                      {"train_loss", train_loss},
                      {"seconds", seconds},
                      {"train_seconds", train_seconds},
                      {"loader_wait_seconds", loader_wait_seconds},
                      {"train_images", train_images},
                      {"skipped_images", skipped_images},
                      {"lr", lr},
                      {"res", res},
                      {"process_seconds", process_seconds}};
  if (loader_images > 0)
    j["loader"] = {{"cpu_seconds", loader_cpu_seconds},
                   {"gpu_seconds", loader_gpu_seconds},
                   {"gpu_parse_seconds", loader_gpu_parse_seconds},
                   {"gpu_call_seconds", loader_gpu_call_seconds},
                   {"gpu_wait_seconds", loader_gpu_wait_seconds},
                   {"images", loader_images},
                   {"gpu_images", loader_gpu_images}};
  if (evaluated) {
    j["test_loss"] = test_loss;
    j["test_accuracy"] = test_accuracy;
    j["test_top5"] = test_top5;
    if (averaged) {
      j["own_test_loss"] = own_test_loss;
      j["own_test_accuracy"] = own_test_accuracy;
      j["own_test_top5"] = own_test_top5;
    }
  }
  return j;
}

EpochStats EpochStats::from_json(const nlohmann::json& j) {
  EpochStats e;
  e.epoch = j.value("epoch", 0);
  e.train_loss = j.value("train_loss", 0.0);
  e.seconds = j.value("seconds", 0.0);
  e.train_seconds = j.value("train_seconds", 0.0);
  e.loader_wait_seconds = j.value("loader_wait_seconds", 0.0);
  e.train_images = j.value("train_images", int64_t{0});
  e.skipped_images = j.value("skipped_images", int64_t{0});
  e.lr = j.value("lr", 0.0);
  e.res = j.value("res", 0);
  e.process_seconds = j.value("process_seconds", 0.0);
  if (const auto l = j.find("loader"); l != j.end() && l->is_object()) {
    e.loader_cpu_seconds = l->value("cpu_seconds", 0.0);
    e.loader_gpu_seconds = l->value("gpu_seconds", 0.0);
    e.loader_gpu_parse_seconds = l->value("gpu_parse_seconds", 0.0);
    e.loader_gpu_call_seconds = l->value("gpu_call_seconds", 0.0);
    e.loader_gpu_wait_seconds = l->value("gpu_wait_seconds", 0.0);
    e.loader_images = l->value("images", int64_t{0});
    e.loader_gpu_images = l->value("gpu_images", int64_t{0});
  }
  e.evaluated = j.contains("test_accuracy");
  if (e.evaluated) {
    e.test_loss = j.value("test_loss", 0.0);
    e.test_accuracy = j.value("test_accuracy", 0.0);
    e.test_top5 = j.value("test_top5", 0.0);
    e.averaged = j.contains("own_test_accuracy");
    e.own_test_loss = j.value("own_test_loss", 0.0);
    e.own_test_accuracy = j.value("own_test_accuracy", 0.0);
    e.own_test_top5 = j.value("own_test_top5", 0.0);
  }
  return e;
}

nlohmann::json TrainReport::to_json() const {
  nlohmann::json j;
  j["options"] = options;
  j["device"] = device;
  j["model"] = model;
  j["data"] = data;
  j["classes"] = classes;
  j["start_epoch"] = start_epoch;
  j["total_seconds"] = total_seconds;
  j["process_seconds"] = process_seconds;
  j["setup"] = setup;
  j["cuda_env"] = cuda_env;
  j["train_images_per_second"] = train_images_per_second;
  j["epochs"] = nlohmann::json::array();
  for (const auto& e : run_epochs()) j["epochs"].push_back(e.to_json());
  if (const auto acc = final_test_accuracy()) j["final_test_accuracy"] = *acc;
  return j;
}

std::vector<EpochStats> TrainReport::run_epochs() const {
  auto run = earlier_epochs;
  run.insert(run.end(), epochs.begin(), epochs.end());
  return run;
}

int64_t TrainReport::skipped_images() const {
  int64_t n = 0;
  for (const auto& e : epochs) n += e.skipped_images;
  return n;
}

std::optional<double> TrainReport::final_test_accuracy() const {
  std::optional<double> last;
  for (const auto& e : epochs)
    if (e.evaluated) last = e.test_accuracy;
  return last;
}

nlohmann::json EvalReport::to_json() const {
  return {{"model", model},
          {"data", data},
          {"device", device},
          {"classes", classes},
          {"res", res},
          {"images", images},
          {"skipped", skipped},
          {"loss", loss},
          {"top1", top1},
          {"top5", top5},
          {"seconds", seconds},
          {"tta", tta},
          {"tta_shifts", tta_shifts},
          {"ema", ema}};
}

MetricsLog::MetricsLog(const std::string& dir) : dir_(dir) {
  if (dir.empty()) return;
  std::error_code ec;
  fs::create_directories(dir, ec);
  out_.open(fs::path(dir) / "metrics.jsonl", std::ios::app);
  if (!out_) FASTER_THROW("--log-dir ", dir, ": cannot write metrics.jsonl");
}

void MetricsLog::write(const nlohmann::json& j) {
  if (out_.is_open()) out_ << j.dump() << std::endl;
}

void MetricsLog::chart(const std::string& title, const std::vector<EpochStats>& epochs) {
  if (dir_.empty()) return;
  ChartSeries train_loss{"train loss", {}}, val_loss{"val loss", {}}, top1{"val top-1 %", {}},
      top5{"val top-5 %", {}};
  for (const auto& e : epochs) {
    train_loss.points.emplace_back(e.epoch, e.train_loss);
    if (!e.evaluated) continue;
    val_loss.points.emplace_back(e.epoch, e.test_loss);
    top1.points.emplace_back(e.epoch, e.test_accuracy);
    top5.points.emplace_back(e.epoch, e.test_top5);
  }
  const auto svg = line_chart_svg(title, "epoch",
                                  {{"loss", {train_loss, val_loss}}, {"accuracy %", {top1, top5}}});
  tools::write_file_atomic(fs::path(dir_) / "metrics.svg", svg);
}

}  // namespace faster::train
