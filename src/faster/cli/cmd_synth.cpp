// `faster synth`: writes an ImageNet-like tree of synthetic JPEGs for tests and benchmarks.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "faster/cli/command.h"
#include "faster/core/progress.h"
#include "faster/tools/synth.h"

namespace faster::cli {
namespace {

void add_synth(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand(
      "synth",
      "Generate an ImageNet-like dataset: OUT/train/<class>/*.JPEG (and OUT/val/), sizes like\n"
      "ImageNet (mean about 470x390), photo-like texture (about 80-120 KiB per file at quality "
      "90),\n"
      "class-dependent content, deterministic from --seed.");
  auto o = std::make_shared<tools::SynthOptions>();
  cmd->add_option("--out", o->out,
                  "Destination folder: new, empty, or an earlier synth tree, which this run "
                  "replaces (its files that this run does not make again are deleted); a folder "
                  "holding anything else is refused")
      ->required();
  cmd->add_option("--classes", o->classes, "Number of classes")->capture_default_str();
  cmd->add_option("--images", o->images, "Training images per class")->capture_default_str();
  cmd->add_option("--val", o->val, "Validation images per class (0: no val/)")
      ->capture_default_str();
  add_seed_option(cmd, o->seed, "Seed: the same seed gives the same files");
  cmd->add_option("--quality", o->quality, "JPEG quality, 1-100")->capture_default_str();
  add_workers_option(cmd, o->workers, "Threads (default 0: every core)");
  cmd->footer(
      "Exit codes: 0 done; 1 stopped by an error (an --out that cannot be written or holds other "
      "files, a full disk; an interrupted tree is refused by every reader until a re-run "
      "finishes it); 2 a usage error, nothing done (docs/exit_codes.md).");
  cmd->callback([o, &exit_code] {
    const tools::SynthSummary s = tools::synth_dataset(*o);
    const double n = static_cast<double>(std::max<int64_t>(1, s.files));
    std::printf(
        "synth: %lld files, %.1f MiB (mean %.1f KiB, mean size %.0fx%.0f) in %s (%.0f img/s) -> "
        "%s\n",
        static_cast<long long>(s.files), s.bytes / 1048576.0, s.bytes / 1024.0 / n, s.width_sum / n,
        s.height_sum / n, format_duration(s.seconds).c_str(), s.files / std::max(1e-9, s.seconds),
        o->out.c_str());
    exit_code = 0;
  });
}

}  // namespace
FASTER_REGISTER_COMMAND(50, add_synth);
}  // namespace faster::cli
