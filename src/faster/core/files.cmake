# core: errors, logging, progress, timers (no LibTorch); environment report (LibTorch).
list(APPEND FASTER_BASE_SOURCES src/faster/core/log.cpp src/faster/core/progress.cpp
     src/faster/core/line_chart.cpp src/faster/core/process_clock.cpp
     src/faster/core/interrupt.cpp src/faster/core/memory.cpp)
list(APPEND FASTER_TORCH_SOURCES src/faster/core/env.cpp)
if(FASTER_CUDA)
  list(APPEND FASTER_TORCH_SOURCES src/faster/core/gpu_info_cuda.cpp)
else()
  list(APPEND FASTER_TORCH_SOURCES src/faster/core/gpu_info_cpu.cpp)
endif()
# libfaster_early (a shared library linked after LibTorch, for its constructor's place in the
# loader's order: faster/core/early_context.h).
set(FASTER_EARLY_SOURCES src/faster/core/early_context.cpp)
