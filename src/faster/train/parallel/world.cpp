// World settings from the environment.
#include "faster/train/parallel/world.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "faster/core/error.h"

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
  if (w.master_port < 1 || w.master_port > 65535)
    FASTER_THROW("MASTER_PORT ", w.master_port, " is not a TCP port", from);
}

}  // namespace

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
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    w.source = "slurm";
    w.rank = env_int("SLURM_PROCID", 0, true);
    w.world = env_int("SLURM_NTASKS", 1, true);
    w.local_rank = env_int("SLURM_LOCALID", 0);
    // SLURM_NTASKS_PER_NODE may read "4(x2)"; strtol takes the leading count.
    const char* per_node = env("SLURM_NTASKS_PER_NODE");
    w.local_world = per_node ? std::atoi(per_node) : w.world;
    if (w.local_world < 1) w.local_world = w.world;
    if (const char* host = env("SLURM_LAUNCH_NODE_IPADDR")) w.master_addr = host;
  } else {
    w.master_port = free_local_port();
    return w;
  }
  if (const char* addr = env("MASTER_ADDR")) w.master_addr = addr;
  w.master_port = env_int("MASTER_PORT", 29500);
  check(w);
  return w;
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
