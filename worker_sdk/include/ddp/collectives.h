// Small collective helpers over a WorkerContext's process group. Every rank must call each
// helper in the same order (they are collectives). They block until done; failures of the
// group (a peer died, timeout) surface as the c10::Error the process group throws.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "ddp/process_group.h"

namespace ddp {

enum class ReduceOp { kSum, kMean, kMin, kMax };

// Waits until every rank has arrived.
void barrier(const WorkerContext& ctx);

// Gathers one JSON value from every rank; element i is rank i's value.
std::vector<nlohmann::json> all_gather_object(const WorkerContext& ctx,
                                              const nlohmann::json& value);

// Reduces scalar metrics across ranks (computed in double precision, elementwise).
std::vector<double> all_reduce_metrics(const WorkerContext& ctx, std::vector<double> values,
                                       ReduceOp op);
double all_reduce_metric(const WorkerContext& ctx, double value, ReduceOp op);

// Prints `line` (plus a newline) to stdout on rank 0 only, flushed at once.
void log_rank0(const WorkerContext& ctx, std::string_view line);

}  // namespace ddp
