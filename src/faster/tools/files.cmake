# tools: dataset preparation on top of data/ (no LibTorch).
list(APPEND FASTER_BASE_SOURCES
  src/faster/tools/synth.cpp
)
