// An image tree on disk, the one way every part of faster reads one (the folder source behind
// `load` and `pack`, and `resize`): which entries are images, and reading one without hanging.
// Only regular files are images; a FIFO, socket or device named like a JPEG is reported, never
// opened, and a directory reached twice (a symlink back up the tree) is entered once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>

namespace faster::data {

// Refuses a tree holding images of a format faster does not read (`unread`, relative to `root`):
// left out, the tree would be another dataset than the one torchvision's ImageFolder reads there.
// Throws faster::Error naming the first and the format.  Nothing for an empty list.
void refuse_unread_images(const std::filesystem::path& root,
                          const std::vector<std::string>& unread);

// The manifests the tools that write trees leave in them (resize, export, synth).  Each says
// "complete": false while its run works and true once it has finished.
inline constexpr const char* kTreeManifests[] = {".faster-resize.json", ".faster-export.json",
                                                 ".faster-synth.json"};

// Throws faster::Error when `dir` or its parent holds a tree manifest whose run has not finished
// (interrupted, or stopped by an error): such a tree lacks images and would read as whole.
void check_tree_finished(const std::filesystem::path& dir);

// .jpg / .jpeg in any case (ImageNet's files end in .JPEG).
bool has_jpeg_extension(const std::string& filename);
// The names faster reads as images: JPEG's and .png, in any case.
bool has_image_extension(const std::string& filename);
// The format of a file named as an image torchvision's ImageFolder reads and faster does not
// (.bmp, .webp, .tif, .tiff, .ppm, .pgm): "BMP", "WebP", "TIFF", "PPM/PGM"; empty otherwise.
std::string unread_image_format(const std::string& filename);

struct ImageTree {
  // An entry named like an image that is not a file: a FIFO, socket or device node.
  struct NotAFile {
    std::string path;  // relative to the root
    std::string kind;  // "a FIFO", "a socket", "a character device", "a block device"
  };
  std::vector<std::string> dirs;    // directories entered, relative, sorted (parents first)
  std::vector<std::string> images;  // JPEG- and PNG-named files, relative, sorted
  // Files named as images faster does not read (unread_image_format), relative, sorted.
  std::vector<std::string> unread;
  std::vector<NotAFile> not_files;  // sorted by path
  int64_t ignored = 0;              // other entries: other names, directories entered already
};

// Lists `root`, following symlinks, each directory entered once: the tree's own directories at
// their own paths (breadth first, names sorted), then links to directories in the order found, a
// link whose target was entered already adding nothing.  So a link back up the tree (`a/up -> ..`)
// or from one class folder into another leaves every image once, under its own path, and the
// result does not depend on the order the file system lists entries in.  A JPEG-named entry that
// cannot be stat'ed (a dangling link) is listed as an image: reading it fails and names it.
// Hidden entries are listed like the others, as torchvision's ImageFolder takes them (a hidden
// class folder shifts the labels there too), so every tool reads a tree alike.  Throws
// faster::Error if root is not a directory, a directory cannot be listed, or a tool's run writing
// the tree has not finished (check_tree_finished).
ImageTree list_image_tree(const std::filesystem::path& root);

// Reads the whole regular file `path` into `out` (capacity reused: resize_bytes) and fills `st` from the open
// file.  Opened non-blocking and checked with fstat before any read, so a FIFO or device swapped
// in under the name after the listing fails with "is not a regular file" instead of hanging.
// Throws faster::Error naming the path.
void read_regular_file(const std::filesystem::path& path, std::vector<uint8_t>& out,
                       struct stat* st = nullptr);

// open(2) flags for a file of an image tree: open() never blocks on a FIFO, never makes a terminal
// the controlling one.
constexpr int kImageOpenFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

}  // namespace faster::data
