// `faster pack`: flags, the summary or verify report, and the exit code (see the footer).
#include <cstdio>
#include <memory>
#include <string>

#include "faster/cli/command.h"
#include "faster/core/error.h"
#include "faster/tools/downscale.h"
#include "faster/tools/pack.h"

namespace faster::cli {
namespace {

struct PackFlags {
  std::string src, out, verify;
  tools::PackOptions options;
  CLI::App* cmd = nullptr;
};

int run_pack(PackFlags& f) {
  const auto given = [&](const char* flag) { return f.cmd->get_option(flag)->count() > 0; };
  if (!f.verify.empty()) {
    if (!f.src.empty() || !f.out.empty() || given("--max-size") || given("--quality"))
      FASTER_USAGE_ERROR(
          "--verify DB checks an existing database: drop --src, --out, --max-size and --quality");
    const auto report = tools::verify_database(f.verify, f.options.workers, true);
    std::printf("%s", tools::format_report(report, f.verify).c_str());
    return report.ok() ? 0 : kExitBadInput;
  }
  if (f.src.empty() || f.out.empty())
    FASTER_USAGE_ERROR("faster pack needs --src DIR and --out DB (or --verify DB)");
  // 0 is the default's "as they are"; given, it is a side, as resize takes it.
  if (given("--max-size")) check_range("--max-size", f.options.max_size, 1, tools::kMaxJpegSide);
  if (given("--quality") && f.options.max_size == 0)
    FASTER_USAGE_ERROR("--quality is that of downscaled images: it needs --max-size");
  f.options.src = f.src;
  f.options.out = f.out;
  const auto s = tools::pack_folder(f.options);
  std::printf("%s", tools::format_summary(s, f.out).c_str());
  return s.bad > 0 ? kExitBadInput : 0;
}

void add_pack(CLI::App& root, int& exit_code) {
  auto flags = std::make_shared<PackFlags>();
  auto& o = flags->options;
  auto* cmd = root.add_subcommand(
      "pack",
      "Pack an ImageNet-style folder (SRC/<class>/<image>.JPEG) into one LMDB database that "
      "faster train, eval and load read (layout: docs/lmdb_layout.md), optionally downscaling on "
      "the way in; "
      "or check a packed database with --verify.");
  cmd->add_option("--src", flags->src, "Folder of class folders to pack (read only)");
  cmd->add_option("--out", flags->out, "Database to create (a new directory; never overwritten)");
  cmd->add_option("--max-size", o.max_size,
                  "Downscale images whose smaller edge is larger, as 'faster resize' does "
                  "(default: store them as they are)");
  cmd->add_option("--quality", o.quality,
                  "JPEG quality of downscaled images (1-100; needs --max-size)")
      ->capture_default_str();
  add_workers_option(cmd, o.workers, "Threads (default 0: every core)");
  cmd->add_option("--verify", flags->verify,
                  "Check DB instead: metadata, keys, every record's checksum, label and decoding");
  cmd->footer(
      "Exit codes: 0 done (or verified intact); 3 packed, but some source images were unreadable "
      "or corrupt and left out (listed, and in the metadata), or --verify found damage; 1 stopped "
      "by an error (nothing is left under --out); 2 a usage error: a flag, a value out of its "
      "range, flags that conflict; nothing done (docs/exit_codes.md).");
  flags->cmd = cmd;
  cmd->callback([flags, &exit_code] { exit_code = run_pack(*flags); });
}

}  // namespace
FASTER_REGISTER_COMMAND(70, add_pack);
}  // namespace faster::cli
