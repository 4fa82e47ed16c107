// FASTER_HOT_LOOP: a function compiled twice, for x86-64's baseline (SSE2) and for AVX2, the
// program picking one when it loads (GCC function multiversioning), so loops the compiler
// vectorizes use 32-byte registers and byte shuffles where the CPU has them.  Not FMA: fused
// multiply-adds would round differently, and a resized dataset would then depend on the machine
// that made it.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FASTER_HOT_LOOP __attribute__((target_clones("avx2", "default")))
#else
#define FASTER_HOT_LOOP
#endif
