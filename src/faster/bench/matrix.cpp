// The benchmark plan and the process runner.
#include "faster/bench/matrix.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "faster/core/error.h"
#include "faster/core/exit_codes.h"
#include "faster/core/fd.h"
#include "faster/core/process.h"

namespace faster::bench {

const std::vector<std::string> kColumns = {"plain", "+cudnn_benchmark", "+AMP",
                                           "+cudnn_benchmark +AMP"};

bool CellResult::ok() const {
  return !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const Run& r) { return r.ok; });
}

namespace {
// Index of the median run by time (the lower middle for an even count).
size_t median_index(const std::vector<Run>& runs) {
  std::vector<size_t> idx(runs.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(),
            [&](size_t a, size_t b) { return runs[a].seconds < runs[b].seconds; });
  return idx[(idx.size() - 1) / 2];
}
}  // namespace

double CellResult::median_seconds() const {
  return ok() ? runs[median_index(runs)].seconds : 0;
}
double CellResult::median_accuracy() const {
  return ok() ? runs[median_index(runs)].accuracy : 0;
}

const std::vector<std::string> kRows = {
    "single, host loader", "single, device loader", "DataParallel", "DDP", "fast", "tta"};

std::vector<Cell> plan(const BenchOptions& o) {
  std::vector<Cell> cells;
  const auto wanted = [&](const std::string& row) {
    return o.rows.empty() || std::find(o.rows.begin(), o.rows.end(), row) != o.rows.end();
  };
  // Each column's flags; on a CPU there is no cuDNN, and AMP means bf16 autocast.
  const std::vector<std::vector<std::string>> gpu_cols = {
      {}, {"--cudnn-benchmark"}, {"--amp"}, {"--cudnn-benchmark", "--amp"}};
  const std::vector<std::vector<std::string>> cpu_cols = {
      {}, {}, {"--amp", "--amp-dtype", "bf16"}, {}};
  const auto& cols = o.gpu ? gpu_cols : cpu_cols;
  // The parallel rows use every visible GPU (batch 512 per GPU, the seed's setting) with the
  // device loader; DataParallel needs GPUs, so a CPU run has single-device rows only.
  const std::string n = std::to_string(o.gpus);
  struct Row {
    std::string name;
    std::vector<std::string> args;
    int gpus;
  };
  std::vector<Row> rows = {{"single, host loader", {"--loader", "host"}, 1},
                           {"single, device loader", {"--loader", "device"}, 1}};
  if (o.gpu) {
    rows.push_back(
        {"DataParallel", {"--loader", "device", "--parallel", "dp", "--gpus", n}, o.gpus});
    rows.push_back({"DDP", {"--loader", "device", "--parallel", "ddp", "--nproc", n}, o.gpus});
  }
  for (const auto& [row, row_args, gpus] : rows) {
    if (!wanted(row)) continue;
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (!o.gpu && c % 2 == 1) continue;  // cudnn benchmark columns: no cuDNN on a CPU
      Cell cell{row, kColumns[c], row_args, gpus};
      cell.args.insert(cell.args.end(), cols[c].begin(), cols[c].end());
      cells.push_back(cell);
    }
  }
  if (o.gpu && wanted("fast")) cells.push_back({"fast", "fast", {"--fast"}, 1});
  return cells;
}

std::vector<std::string> data_args(const BenchOptions& o) {
  std::vector<std::string> a;
  if (!o.data.empty()) a.insert(a.end(), {"--data", o.data});
  if (!o.gpu) a.insert(a.end(), {"--device", "cpu"});
  if (o.train_limit > 0) a.insert(a.end(), {"--train-limit", std::to_string(o.train_limit)});
  if (o.test_limit > 0) a.insert(a.end(), {"--test-limit", std::to_string(o.test_limit)});
  return a;
}

std::vector<std::string> train_args(const Cell& c, const BenchOptions& o, const std::string& json) {
  std::vector<std::string> a = {"train",
                                "--epochs",
                                std::to_string(o.epochs),
                                "--batch",
                                std::to_string(o.batch),
                                "--blocks",
                                o.blocks,
                                "--filters",
                                o.filters,
                                "--json",
                                json};
  a.insert(a.begin() + 1, {"--recipe", o.recipe});
  const auto data = data_args(o);
  a.insert(a.end(), data.begin(), data.end());
  a.insert(a.end(), c.args.begin(), c.args.end());
  a.insert(a.end(), o.extra_args.begin(), o.extra_args.end());
  return a;
}

namespace {
// Calls f(exit_code, ok, what, error) for every run, the matrix's then the time-to-accuracy row's.
template <typename F>
void for_each_run(const Report& r, F f) {
  for (const auto& c : r.cells)
    for (const auto& run : c.runs)
      f(run.exit_code, run.ok, c.cell.row + " / " + c.cell.column, run.error);
  if (r.tta)
    for (const auto& run : r.tta->runs)
      f(run.exit_code, run.ok, "time to accuracy, seed " + std::to_string(run.seed), run.error);
}
}  // namespace

std::vector<std::string> failures(const Report& r) {
  std::vector<std::string> out;
  for_each_run(r, [&](int, bool ok, const std::string& what, const std::string& error) {
    if (!ok) out.push_back(what + " failed: " + error);
  });
  return out;
}

int exit_code(const Report& r) {
  int code = 0;
  bool skipped = false;
  for_each_run(r, [&](int run_code, bool ok, const std::string&, const std::string&) {
    skipped = skipped || (ok && run_code == kExitBadInput);
    // A run that wrote no report failed, whatever it exited with (0 and 3 mean done).
    if (!ok && code == 0) code = run_code != 0 && run_code != kExitBadInput ? run_code : 1;
  });
  return code != 0 ? code : skipped ? kExitBadInput : 0;
}

int run_process(const std::string& exe, const std::vector<std::string>& args,
                const std::string& log) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Fd fd(open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (fd.get() < 0) FASTER_THROW(log, ": cannot write (", std::strerror(errno), ")");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) FASTER_THROW("fork failed: ", std::strerror(errno));
  if (pid == 0) {
    // The run ends with bench (a SIGTERM or kill of bench left it training, a GPU held).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(fd.get(), STDOUT_FILENO);
    dup2(fd.get(), STDERR_FILENO);
    setenv("FASTER_PROGRESS", "plain", 1);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  fd.close();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return wait_exit_code(status);
}

}  // namespace faster::bench
