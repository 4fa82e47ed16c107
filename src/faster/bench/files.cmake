# bench: the benchmark matrix (runs `faster train` processes) and its reports; no LibTorch.
list(APPEND FASTER_BASE_SOURCES src/faster/bench/matrix.cpp src/faster/bench/report.cpp
     src/faster/bench/time_to_accuracy.cpp)
