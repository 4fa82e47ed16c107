// Entry point of the `faster` program: builds the subcommands, parses, and turns errors into one line
// on stderr and a non-zero exit code.
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "faster/cli/command.h"
#include "faster/core/error.h"

namespace faster::cli {

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

bool register_command(int order, AddCommand add) {
  commands().push_back({order, std::move(add)});
  return true;
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) FASTER_THROW("cannot find the faster program (/proc/self/exe)");
  return p.string();
}

namespace {

// The first line of a LibTorch error, without its C++ backtrace.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

int run(int argc, char** argv) {
  CLI::App app{
      "faster: fast image-classifier training on one multi-GPU machine, and beyond.\n"
      "Run 'faster <command> --help' for the flags of a command."};
  app.name("faster");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(FASTER_VERSION));
  int exit_code = 0;
  auto& all = commands();
  std::sort(all.begin(), all.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  for (auto& c : all) c.add(app, exit_code);
  std::string names;
  bool known = false;
  for (auto* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "faster: error: unknown command '%s' (commands: %s)\n", argv[1], names.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "faster";
    for (auto* sub : app.get_subcommands()) where += " " + sub->get_name();
    std::fprintf(stderr, "faster: error: %s (see '%s --help')\n", e.what(), where.c_str());
    return e.get_exit_code() == 0 ? 2 : e.get_exit_code();
  }
  return exit_code;
}

}  // namespace
}  // namespace faster::cli

int main(int argc, char** argv) {
  try {
    return faster::cli::run(argc, argv);
  } catch (const faster::Error& e) {
    std::fprintf(stderr, "faster: error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "HINT: %s\n", e.hint().c_str());
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "faster: error: %s\n",
                 faster::cli::first_line(e.what_without_backtrace()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "faster: error: %s\n", e.what());
  }
  return 1;
}
