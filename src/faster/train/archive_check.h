// The CRC-32 of every entry of a zip archive (torch.save's format, faster's checkpoints and
// weights), checked against its central directory before anything of it is used: LibTorch's
// reader does not check them, so a bit flipped on disk or in a copy changed weights silently.
// No LibTorch: the zip's own structures, read with plain file I/O and zlib.
#pragma once

#include <filesystem>

namespace faster::train {

// Throws faster::Error naming `path` and the first entry whose data does not match its CRC-32
// (or that cannot be read), with a hint; nothing for an intact archive.  Stored and deflated
// entries, ZIP64 archives too.  A file that is no zip is left to the reader to refuse.
void check_archive_crcs(const std::filesystem::path& path);

}  // namespace faster::train
