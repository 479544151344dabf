// SPDX-License-Identifier: Apache-2.0
#pragma once
// EMHA_TRY: return the status of an expression unless it is ok (the one control-flow macro).

#include "emha/status.hpp"

#define EMHA_TRY(expr)                            \
  do {                                            \
    const ::emha::Status emha_s_ = (expr);        \
    if (emha_s_ != ::emha::Status::ok) return emha_s_; \
  } while (0)
