// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one header a user includes.

#include "emha/arena.hpp"
#include "emha/attention/config.hpp"
#include "emha/attention/mha.hpp"
#include "emha/attention/mha_s8.hpp"
#include "emha/attention/options.hpp"
#include "emha/io/weight_blob.hpp"
#include "emha/kernels/gemm.hpp"
#include "emha/kernels/gemm_s8.hpp"
#include "emha/kernels/gemm_w8a32.hpp"
#include "emha/kernels/mask.hpp"
#include "emha/kernels/norm.hpp"
#include "emha/kernels/quant.hpp"
#include "emha/kernels/rope.hpp"
#include "emha/kernels/sinusoidal.hpp"
#include "emha/kernels/softmax.hpp"
#include "emha/port.hpp"
#include "emha/simd.hpp"
#include "emha/span.hpp"
#include "emha/status.hpp"
#include "emha/version.hpp"
