// The registry and the main() that both programs share: builds the registered commands into one
// CLI11 app, parses, runs, and turns errors into one line on stderr and a non-zero exit code (the
// table: command.h, docs/exit_codes.md).
#include "faster/cli/command.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "faster/core/error.h"
#include "faster/core/interrupt.h"
#include "faster/core/log.h"

namespace faster::cli {
namespace fs = std::filesystem;

std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}

bool register_command(int order, AddCommand add) {
  commands().push_back({order, std::move(add)});
  return true;
}

namespace {

fs::path program_dir() {
  std::error_code ec;
  const auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) FASTER_THROW("cannot find the faster program (/proc/self/exe)");
  return p.parent_path();
}

// The registered commands, in order, as subcommands of `app`; returns each one's CLI11 app.
std::vector<std::pair<int, CLI::App*>> add_commands(CLI::App& app, int& exit_code) {
  auto& all = commands();
  std::sort(all.begin(), all.end(),
            [](const Command& a, const Command& b) { return a.order < b.order; });
  std::vector<std::pair<int, CLI::App*>> added;
  for (auto& c : all) {
    c.add(app, exit_code);
    added.emplace_back(c.order, app.get_subcommands({}).back());
  }
  return added;
}

// `s` as a C++ raw string literal (a description holding ")text" would fail the build, loudly).
std::string literal(const std::string& s) {
  return "R\"text(" + s + ")text\"";
}

// CLI11 names a negated flag with the value it sets ("--ema,--no-ema{false}"); the descriptions
// say what each form does, so --help lists the names alone.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (const char* value : {"{false}", "{true}"})
      for (size_t at; (at = name.find(value)) != std::string::npos;)
        name.erase(at, std::strlen(value));
    return name;
  }
};

}  // namespace

namespace {

// Edits (insert, delete, replace) between a and b.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Every long flag of `app` and its option groups, as typed ("--epochs").
void long_flags(const CLI::App* app, std::vector<std::string>& out) {
  for (const auto* opt : app->get_options())
    for (const auto& name : opt->get_lnames()) out.push_back("--" + name);
  for (const auto* group : app->get_subcommands({}))
    if (group->get_name().empty() || group->get_group().empty() || !group->get_parent() ||
        group->get_parent() == app)
      long_flags(group, out);
}

// " (did you mean --epochs?)" for the first flag a command did not expect that is a typo or two
// away from one of its own; empty otherwise.
std::string did_you_mean(const std::string& message, const CLI::App* command) {
  if (!command) return "";
  std::vector<std::string> flags;
  long_flags(command, flags);
  std::istringstream words(message);
  for (std::string word; words >> word;) {
    if (word.rfind("--", 0) != 0) continue;
    const std::string typed = word.substr(0, word.find('='));
    std::string best;
    size_t best_distance = 3;  // at most two edits, and at most a third of the name
    for (const auto& f : flags) {
      const size_t d = edit_distance(typed, f);
      if (d < best_distance && d * 3 <= f.size()) best = f, best_distance = d;
    }
    if (!best.empty()) return " (did you mean " + best + "?)";
  }
  return "";
}

}  // namespace

int run_command_line(int argc, char** argv) {
  // A write past the process's file size limit (ulimit -f) then fails with EFBIG, which each tool
  // reports with the file's name and cleans up after, instead of SIGXFSZ killing the process
  // silently with its temporary files left behind.
  ::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{
      "faster: fast image-classifier training on one multi-GPU machine, and beyond.\n"
      "Run 'faster <command> --help' for the flags of a command."};
  app.name("faster");
  app.formatter(std::make_shared<HelpFormatter>());  // before the commands, which take it up
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(FASTER_VERSION));
  app.footer(
      "Exit codes: 0 done; 1 stopped by an error; 2 a usage error (nothing done); 3 done, "
      "but bad input was skipped (docs/exit_codes.md).");
  int exit_code = 0;
  add_commands(app, exit_code);
  std::string names;
  bool known = false;
  for (auto* sub : app.get_subcommands({})) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
    known = known || (argc > 1 && sub->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "faster: error: unknown command '%s' (commands: %s)\n", argv[1],
                 names.c_str());
    return kExitUsage;
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
    const CLI::App* command = nullptr;
    for (auto* sub : app.get_subcommands()) where += " " + sub->get_name(), command = sub;
    const std::string hint =
        dynamic_cast<const CLI::ExtrasError*>(&e) ? did_you_mean(e.what(), command) : "";
    std::fprintf(stderr, "faster: error: %s%s (see '%s --help')\n", e.what(), hint.c_str(),
                 where.c_str());
    return kExitUsage;
  }
  return exit_code;
}

void add_nvjpeg_options(CLI::App* cmd, data::CpuShare& cpu_share, int& threads) {
  cmd->add_option_function<std::string>(
         "--cpu-share",
         [&cpu_share](const std::string& text) { cpu_share = data::parse_cpu_share(text); },
         "With nvJPEG: the share of images the loader threads decode on the CPU anyway, beside "
         "the GPU's JPEG engines, the ones cheapest for them (0-1), or auto: start at 0.25 and, "
         "after every batch, give the CPU a little more while its threads run out of work, and "
         "the GPU more back as soon as they fall behind")
      ->default_str(data::to_string(cpu_share));
  cmd->add_option(
         "--nvjpeg-threads", threads,
         "With nvJPEG: threads feeding the GPU decoder, each with its own nvJPEG state; each "
         "batch is split into as many parts, decoded side by side as soon as their images are "
         "read (more shorten a batch's wait for the decoder while the GPU is busy)")
      ->capture_default_str();
}

namespace {
// The name messages use of an option with several ("-j,--workers": --workers).
std::string long_name(const std::string& names) {
  size_t at = 0;
  while (at < names.size()) {
    const size_t end = std::min(names.find(',', at), names.size());
    if (names.compare(at, 2, "--") == 0) return names.substr(at, end - at);
    at = end + 1;
  }
  return names;
}

template <typename T>
CLI::Option* add_count(CLI::App* cmd, const std::string& names, T& value, int64_t lo, int64_t hi,
                       const std::string& help) {
  const std::string flag = long_name(names);
  return cmd->add_option_function<std::string>(
      names,
      [&value, flag, lo, hi](const std::string& text) {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(text[0])))
          FASTER_USAGE_ERROR(flag, " must be an integer (got '", text, "')");
        if (errno == ERANGE)  // past 64 bits: out of any range a flag has
          FASTER_USAGE_ERROR(flag, " must be between ", lo, " and ", hi, " (got ", text, ")");
        check_range(flag.c_str(), static_cast<int64_t>(v), lo, hi);
        value = static_cast<T>(v);
      },
      help);
}
}  // namespace

CLI::Option* add_count_option(CLI::App* cmd, const std::string& flag, int& value, int64_t lo,
                              int64_t hi, const std::string& help) {
  return add_count(cmd, flag, value, lo, hi, help);
}
CLI::Option* add_count_option(CLI::App* cmd, const std::string& flag, int64_t& value, int64_t lo,
                              int64_t hi, const std::string& help) {
  return add_count(cmd, flag, value, lo, hi, help);
}
CLI::Option* add_workers_option(CLI::App* cmd, int& value, const std::string& help,
                                const std::string& names) {
  return add_count_option(cmd, names, value, 0, kMaxWorkers, help);
}

CLI::Option* add_device_option(CLI::App* cmd, std::string& value) {
  return cmd
      ->add_option_function<std::string>(
          "--device",
          [&value](const std::string& text) {
            const bool index = text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 9 &&
                               text.find_first_not_of("0123456789", 5) == std::string::npos;
            if (text != "auto" && text != "cpu" && text != "cuda" && !index)
              FASTER_USAGE_ERROR("--device '", text,
                                 "' is not a device (use auto, cpu, cuda or cuda:N)");
            value = text;
          },
          "auto (a GPU if one is visible), cpu, cuda or cuda:N")
      ->default_str(value);
}

CLI::Option* add_seed_option(CLI::App* cmd, uint64_t& seed, const std::string& help) {
  return cmd
      ->add_option_function<std::string>(
          "--seed",
          [&seed](const std::string& text) {
            errno = 0;
            const bool digits = !text.empty() && text.size() <= 20 &&
                                text.find_first_not_of("0123456789") == std::string::npos;
            const unsigned long long v = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
            if (!digits || errno == ERANGE)
              FASTER_USAGE_ERROR("--seed must be an integer from 0 to ",
                                 std::numeric_limits<uint64_t>::max(), " (got '", text, "')");
            seed = v;
          },
          help)
      ->default_str(std::to_string(seed));
}

CLI::Option* add_val_side_option(CLI::App* cmd, const std::string& names, int& side, int max_side,
                                 const std::string& help) {
  const std::string flag = long_name(names);
  return cmd->add_option_function<int>(
      names,
      [&side, flag, max_side](int value) {
        check_range(flag.c_str(), value, 8, max_side);
        side = value;
      },
      help);
}

std::string comma_list(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string self_exe() {
  return (program_dir() / FASTER_PROGRAM).string();
}

std::string torch_exe() {
  return (program_dir() / FASTER_TORCH_PROGRAM).string();
}

std::string command_table_source() {
  CLI::App app;
  int exit_code = 0;
  std::string rows;
  for (const auto& [order, sub] : add_commands(app, exit_code))
    rows += "    {" + std::to_string(order) + ", " + literal(sub->get_name()) + ",\n     " +
            literal(sub->get_description()) + "},\n";
  return "// Generated at build time by `" FASTER_TORCH_PROGRAM
         " --command-table`: its commands, as `faster --help`\n"
         "// lists them.  Do not edit.\n"
         "#include \"faster/cli/command.h\"\n\n"
         "namespace faster::cli {\n\n"
         "const std::vector<CommandSummary>& torch_commands() {\n"
         "  static const std::vector<CommandSummary> table{\n" +
         rows +
         "  };\n"
         "  return table;\n"
         "}\n\n"
         "}  // namespace faster::cli\n";
}

int exit_code_of(const std::function<int()>& body,
                 const std::function<std::string(const std::exception&)>& message) {
  // A rank of a job of several says which it is, as its warnings do (log::set_source).
  try {
    return body();
  } catch (const Error& e) {
    const std::string rank = log::source();
    std::fprintf(stderr, "%sfaster: error: %s\n", rank.c_str(), e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "%sHINT: %s\n", rank.c_str(), e.hint().c_str());
    if (dynamic_cast<const UsageError*>(&e)) return kExitUsage;
    if (const auto* stop = dynamic_cast<const Interrupted*>(&e)) {
      // End by the signal itself, as the shell expects of a program it interrupted (a script's
      // loop stops too); 128 + the signal is what it reports either way.
      std::fflush(nullptr);
      ::signal(stop->signal(), SIG_DFL);
      ::raise(stop->signal());
      return 128 + stop->signal();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%sfaster: error: %s\n", log::source().c_str(), message(e).c_str());
  }
  return kExitError;
}

}  // namespace faster::cli
