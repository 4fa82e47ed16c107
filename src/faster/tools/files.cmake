# tools: dataset preparation on top of data/ (no LibTorch).
list(APPEND FASTER_BASE_SOURCES
  src/faster/tools/synth.cpp
)
# resize and pack: downscaled copies and LMDB packing of JPEG trees.
list(APPEND FASTER_BASE_SOURCES
  src/faster/tools/file_io.cpp
  src/faster/tools/tree.cpp
  src/faster/tools/downscale.cpp
  src/faster/tools/resize_state.cpp
  src/faster/tools/resize.cpp
  src/faster/tools/pack.cpp
  src/faster/tools/pack_verify.cpp
)
# export: a small in-memory dataset written out as an ImageFolder tree of JPEGs.
list(APPEND FASTER_BASE_SOURCES
  src/faster/tools/export.cpp
)
