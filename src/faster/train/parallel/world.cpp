// World settings from the environment.
#include "faster/train/parallel/world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "faster/core/error.h"
#include "faster/core/launch_env.h"

namespace faster::train {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int fallback, bool required = false) {
  const char* v = env(name);
  if (!v) {
    if (required) FASTER_THROW("environment variable ", name, " is not set");
    return fallback;
  }
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1 << 24)
    FASTER_THROW("environment variable ", name, "='", v, "' is not a non-negative integer");
  return static_cast<int>(x);
}

void check(const WorldInfo& w) {
  const std::string from = " (from " + w.source + ")";
  if (w.world < 1) FASTER_THROW("world size ", w.world, " must be at least 1", from);
  if (w.rank >= w.world)
    FASTER_THROW("rank ", w.rank, " is not below the world size ", w.world, from);
  if (w.local_world < 1 || w.local_world > w.world)
    FASTER_THROW("local world size ", w.local_world, " is not in [1, world size ", w.world, "]",
                 from);
  if (w.local_rank >= w.local_world)
    FASTER_THROW("local rank ", w.local_rank, " is not below the local world size ", w.local_world,
                 from);
}

}  // namespace

bool in_slurm_step() {
  return launch_env::in_slurm_step([](const char* name) { return std::getenv(name); });
}

int tasks_on_node(const std::string& per_node, int node) {
  // "2(x3),1": counts, each repeated (xN) times; -1 where malformed or too short.
  size_t at = 0;
  for (int seen = 0; at < per_node.size();) {
    char* end = nullptr;
    const long count = std::strtol(per_node.c_str() + at, &end, 10);
    if (end == per_node.c_str() + at || count < 1) return -1;
    at = static_cast<size_t>(end - per_node.c_str());
    long times = 1;
    if (per_node.compare(at, 2, "(x") == 0) {
      times = std::strtol(per_node.c_str() + at + 2, &end, 10);
      if (*end != ')' || times < 1) return -1;
      at = static_cast<size_t>(end - per_node.c_str()) + 1;
    }
    if (at < per_node.size() && per_node[at] != ',') return -1;
    if (node < seen + times) return static_cast<int>(count);
    seen += static_cast<int>(times);
    ++at;
  }
  return -1;
}

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry at bracket depth 0: "gpu[03-05,7],cpu1" -> "gpu[03-05,7]".
  size_t end = 0;
  for (int depth = 0; end < nodelist.size(); ++end) {
    if (nodelist[end] == '[') ++depth;
    if (nodelist[end] == ']') --depth;
    if (nodelist[end] == ',' && depth == 0) break;
  }
  std::string host = nodelist.substr(0, end);
  // Each bracket's first number, digits as written (zero padding is the name's): "r[2]-n[01-4]"
  // -> "r2-n01".
  for (size_t open; (open = host.find('[')) != std::string::npos;) {
    const auto close = host.find(']', open);
    if (close == std::string::npos) return "";
    const std::string ranges = host.substr(open + 1, close - open - 1);
    host = host.substr(0, open) + ranges.substr(0, ranges.find_first_of("-,")) +
           host.substr(close + 1);
  }
  return host;
}

WorldInfo world_from_env() {
  WorldInfo w;
  if (env("RANK") || env("WORLD_SIZE")) {
    w.source = env("FASTER_LAUNCHER") ? "launcher" : "torchrun";
    w.rank = env_int("RANK", 0, true);
    w.world = env_int("WORLD_SIZE", 1, true);
    w.local_rank = env_int("LOCAL_RANK", w.rank);
    w.local_world = env_int("LOCAL_WORLD_SIZE", w.world);
    if (!env("MASTER_ADDR") || !env("MASTER_PORT"))
      FASTER_THROW(
          "RANK/WORLD_SIZE are set but MASTER_ADDR or MASTER_PORT is not (launch with "
          "torchrun, 'faster train --nproc N', or set all four)");
  } else if (in_slurm_step()) {  // a task of an srun step of several
    w.source = "slurm";
    w.rank = env_int("SLURM_PROCID", 0, true);
    w.world = env_int("SLURM_STEP_NUM_TASKS", 1, true);
    w.local_rank = env_int("SLURM_LOCALID", 0);
    // Tasks on this node: this node's entry of "2(x3),1" (SLURM_NODEID counts the step's nodes).
    const char* per_node = env("SLURM_STEP_TASKS_PER_NODE");
    const int here = per_node ? tasks_on_node(per_node, env_int("SLURM_NODEID", 0)) : -1;
    w.local_world = here > 0 ? here : w.world;
    // Rank 0 runs on the step's first node (srun's own host may be a login node running none).
    const char* nodes = env("SLURM_STEP_NODELIST");
    if (!nodes) nodes = env("SLURM_JOB_NODELIST");
    const std::string first = nodes ? first_slurm_host(nodes) : "";
    if (!first.empty())
      w.master_addr = first;
    else if (const char* host = env("SLURM_LAUNCH_NODE_IPADDR"))
      w.master_addr = host;
  } else {
    w.master_port = free_local_port();
    return w;
  }
  if (const char* addr = env("MASTER_ADDR")) w.master_addr = addr;
  // Jobs sharing a node must not share a port: under Slurm the default follows the job's id (its
  // last four digits; ids run past 16 million on large clusters).
  int fallback = 29500;
  const char* job = w.source == "slurm" ? env("SLURM_JOB_ID") : nullptr;
  if (job && !env("MASTER_PORT")) {
    char* end = nullptr;
    const long long id = std::strtoll(job, &end, 10);
    if (*end == '\0' && id >= 0) fallback = 15000 + static_cast<int>(id % 10000);
  }
  w.master_port = master_port_from_env(fallback);
  check(w);
  return w;
}

int master_port_from_env(int fallback) {
  const char* v = env("MASTER_PORT");
  if (!v) return fallback;
  char* end = nullptr;
  const long port = std::strtol(v, &end, 10);
  if (*end != '\0' || port < 1 || port > 65535)
    FASTER_THROW("MASTER_PORT ", v, " is not a TCP port (1-65535)");
  return static_cast<int>(port);
}

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) FASTER_THROW("cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    FASTER_THROW("cannot find a free local port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace faster::train
