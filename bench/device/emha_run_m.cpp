// SPDX-License-Identifier: Apache-2.0
// emha-run for Cortex-M: the layer of an exported header (its Config, its weights as
// const arrays: in flash), checked against the reference the exporter embedded (export with
// --reference-rows N [--reference-causal]) and timed with the port's cycle counter through the
// tick-based runner (micro_bench.hpp). No file system, no heap: every buffer is static.
// Build: bench/device/cortex_m/CMakeLists.txt (-DEMHA_RUN_MODEL=<header>); under qemu-system-arm
// the check is exact and the timings are meaningless (run it on the board for those): qemu has no
// DWT cycle counter, and the timings then say they come from an emulator's SysTick.

#include <cstddef>
#include <cstring>
#include <new>

#include "cortex_m.hpp"
#include "emha/emha.hpp"
#include "micro_bench.hpp"
#include "run_checks.hpp"
#include EMHA_RUN_HEADER

namespace {

namespace model = EMHA_RUN_NAME;
using Config = model::Config;
using Layer = emha::MultiHeadAttention<Config>;
using emha::cortex_m::Line;
constexpr std::size_t D = Config::d_model, rows = model::ref_rows;
static_assert(rows > 0 && rows <= Config::max_seq_q, "export with --reference-rows N (N <= max_seq_q)");

alignas(Layer) unsigned char g_slot[sizeof(Layer)];
float g_y[rows * D];

}  // namespace

int main() {
  Layer& mha = *new (g_slot) Layer;  // placement: no heap
  if (mha.set_weights(model::weights()) != emha::Status::ok) {
    Line() << "emha-run: set_weights failed";
    return 2;
  }
  emha::ForwardOptions o;
  o.masks.causal = model::ref_causal;
  const emha::Span<const float> x{model::ref_input, rows * D};
  const auto call = [&] { return mha.forward({rows, rows, 1}, x, x, x, g_y, o); };
  if (call() != emha::Status::ok) {
    Line() << "emha-run: forward failed";
    return 2;
  }
  const double worst = emha::run::reference_errors<Config>(g_y, model::ref_output, rows).excess;
  Line() << "emha-run: d_model " << static_cast<unsigned>(D) << ", heads " << static_cast<unsigned>(Config::heads)
         << ", kernels " << emha::simd_isa() << ", arena " << static_cast<unsigned>(Layer::arena_bytes)
         << " B, object " << static_cast<unsigned>(sizeof(Layer)) << " B";
  Line() << "reference: " << static_cast<unsigned>(rows) << " rows, worst error " << worst << " of the bound: "
         << (worst <= 1.0 ? "ok" : "FAILED");
  const double flops = emha::run::forward_flops<Config>(rows, rows);
  emha::device_bench::run("forward", flops, call);
  if (std::strcmp(emha::cortex_m::cycle_counter(), "dwt") != 0)
    Line() << "timings: " << emha::cortex_m::cycle_counter()
           << " ticks, no DWT cycle counter (as under qemu-system-arm): emulated, not a board's time";
  mha.~Layer();
  return worst <= 1.0 ? 0 : 1;
}
