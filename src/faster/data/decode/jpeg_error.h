// libjpeg's error manager for the decoder and the encoder: libjpeg reports fatal errors by calling
// error_exit, which must not return; we longjmp back to the caller, which turns the formatted
// message into a faster::Error (never exit(), as libjpeg's default does).
#pragma once

#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>

namespace faster::data {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg casts cinfo->err back to this struct
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] inline void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

inline void jpeg_silent_output(j_common_ptr) {}

// Sets up `err` (fatal errors longjmp to err.jump, nothing printed) and returns it for cinfo.err.
inline jpeg_error_mgr* install_jpeg_errors(JpegErrorManager& err) {
  jpeg_error_mgr* pub = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_error_exit;
  err.pub.output_message = jpeg_silent_output;
  err.message[0] = '\0';
  return pub;
}

}  // namespace faster::data
