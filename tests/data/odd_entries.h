// Entries of a dataset tree that are not files but carry image names: a FIFO (opening it for
// reading waits for a writer forever), a socket and, where the tests may create one (root), a
// character device.  Plus a FIFO without an image name, which is only ignored.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace faster::test {

struct OddEntries {
  int named_like_images = 0;  // fifo.JPEG, socket.jpg and device.jpeg if made
  bool device = false;
};

inline OddEntries make_odd_entries(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  OddEntries made;
  for (const char* name : {"fifo.JPEG", "plain.fifo"})
    if (::mkfifo((dir / name).c_str(), 0644) != 0)
      throw std::runtime_error("mkfifo " + (dir / name).string() + ": " + std::strerror(errno));
  const std::string socket_path = (dir / "socket.jpg").string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long");
  std::strcpy(addr.sun_path, socket_path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  const bool bound = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);  // the socket file stays
  if (!bound) throw std::runtime_error("cannot bind " + socket_path);
  // /dev/null's numbers: harmless even if something opened it.  Needs CAP_MKNOD.
  made.device = ::mknod((dir / "device.jpeg").c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0;
  made.named_like_images = made.device ? 3 : 2;
  return made;
}

}  // namespace faster::test
