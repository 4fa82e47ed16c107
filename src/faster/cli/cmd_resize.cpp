// `faster resize`: flags, the summary, and the exit code (see the footer).
#include <cstdio>
#include <memory>
#include <string>

#include "faster/cli/command.h"
#include "faster/tools/resize.h"

namespace faster::cli {
namespace {

struct ResizeFlags {
  std::string src, dst, report;
  tools::ResizeOptions options;
};

void add_resize(CLI::App& root, int& exit_code) {
  auto flags = std::make_shared<ResizeFlags>();
  auto& o = flags->options;
  auto* cmd = root.add_subcommand(
      "resize",
      "Mirror a tree of JPEGs with every image's smaller edge at most --max-size: larger images "
      "are downscaled (area filter, aspect kept) and re-encoded, the others copied byte for "
      "byte.  Re-running resumes: an output is kept while its source keeps the size and time it "
      "had when the output was made (recorded in DST/.faster-resize-state.tsv).");
  cmd->add_option("--src", flags->src, "Source tree (read only, never modified)")->required();
  cmd->add_option("--dst", flags->dst, "Destination tree (outside --src)")->required();
  cmd->add_option("--max-size", o.max_size, "Smaller edge of the downscaled images, in pixels")
      ->required();
  cmd->add_option("--quality", o.quality, "JPEG quality of re-encoded images (1-100)")
      ->capture_default_str();
  add_workers_option(cmd, o.workers, "Threads (default 0: every core)");
  cmd->add_flag("--copy-bad", o.copy_bad,
                "Copy unreadable or corrupt images unchanged instead of skipping them");
  cmd->add_option("--report", flags->report,
                  "Where to list the bad images (default: DST/.faster-resize-report.tsv)");
  cmd->footer(
      "Exit codes: 0 every image done; 3 done, but some images were unreadable or corrupt "
      "(skipped, or copied with --copy-bad; listed in the report); 1 stopped by an error such as "
      "a full disk (no half-written file is left under its final name; re-run to resume); "
      "2 a usage error: a flag, a value out of its range, flags that conflict; nothing done "
      "(docs/exit_codes.md).");
  cmd->callback([flags, &exit_code] {
    auto& opts = flags->options;
    opts.src = flags->src;
    opts.dst = flags->dst;
    opts.report = flags->report;
    const tools::ResizeSummary s = tools::resize_tree(opts);
    std::printf("%s", tools::format_summary(s, opts.copy_bad).c_str());
    exit_code = s.bad > 0 ? kExitBadInput : 0;
  });
}

}  // namespace
FASTER_REGISTER_COMMAND(60, add_resize);
}  // namespace faster::cli
