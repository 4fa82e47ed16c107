// `faster export`: flags, the summary, and the exit code (see the footer).
#include <cstdio>
#include <memory>

#include "faster/cli/command.h"
#include "faster/tools/export.h"

namespace faster::cli {
namespace {

void add_export(CLI::App& root, int& exit_code) {
  auto options = std::make_shared<tools::ExportOptions>();
  auto& o = *options;
  auto* cmd = root.add_subcommand(
      "export",
      "Write a small dataset faster reads whole (Fashion-MNIST or MNIST idx files, gzip or raw; "
      "CIFAR-10 binary batches) as an ImageFolder tree of JPEGs, to train on without a download: "
      "OUT/train/<class>/<index>.jpg and OUT/val/<class>/<index>.jpg.  Re-running resumes.");
  cmd->add_option("--data", o.data,
                  "Dataset folder: train-images-idx3-ubyte[.gz] ... t10k-labels-idx1-ubyte[.gz], "
                  "or CIFAR-10's data_batch_1.bin ... test_batch.bin (read only)")
      ->capture_default_str();
  cmd->add_option("--out", o.out,
                  "Destination folder (new, empty, or an earlier export of the same dataset with "
                  "the same options, to resume it; outside --data)")
      ->required();
  cmd->add_option("--quality", o.quality,
                  "JPEG quality (1-100); the default loses next to nothing: 44.7 dB mean PSNR, "
                  "under one grey level mean error, on Fashion-MNIST")
      ->capture_default_str();
  cmd->add_option("--limit", o.limit,
                  "Keep only the first N images of each split, for tiny test trees (0: all)")
      ->capture_default_str();
  add_workers_option(cmd, o.workers, "Threads (default 0: every core)");
  cmd->footer(
      "The tree:\n"
      "  OUT/train/<class>/<index>.jpg   the training split\n"
      "  OUT/val/<class>/<index>.jpg     the test split\n"
      "  OUT/.faster-export.json         the dataset and options it holds\n"
      "<class> is '<label>_<name>': 0_T-shirt_top ... 9_Ankle_boot for Fashion-MNIST (idx files in "
      "a folder whose name, or its parent's, says 'fashion' or 'fmnist'), 0_airplane ... 9_truck "
      "for "
      "CIFAR-10, just the label for other idx files (MNIST: 0 ... 9).  The label is zero-padded so "
      "that sorted folder order is label order, which is how faster's folder loader and "
      "torchvision's ImageFolder number classes; every class has its folder in both splits, even "
      "one --limit leaves empty.  <index> is the image's position in its split (00000.jpg ...).  "
      "Grey images become 1-component JPEGs, colour ones YCbCr 4:4:4.  A re-run keeps finished "
      "files and makes the missing ones; it refuses an OUT holding anything else.\n\n"
      "Exit codes: 0 done; 1 stopped by an error: a missing or unreadable dataset, an --out that "
      "is a file, nested with --data or holding something else, a full disk (no half-written "
      "file is left under its final name; re-run to resume); 2 a usage error: a flag, a value out "
      "of its range, flags that conflict; nothing done (docs/exit_codes.md).");
  cmd->callback([options, &exit_code] {
    const tools::ExportSummary s = tools::export_dataset(*options);
    std::printf("%s", tools::format_summary(s, options->out).c_str());
    exit_code = 0;
  });
}

}  // namespace
FASTER_REGISTER_COMMAND(75, add_export);
}  // namespace faster::cli
