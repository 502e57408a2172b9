#include "ddp/collectives.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ddp {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      break;
  }
  return c10d::ReduceOp::SUM;
}

}  // namespace

void barrier(const WorkerContext& ctx) { ctx.process_group()->barrier()->wait(); }

std::vector<nlohmann::json> all_gather_object(const WorkerContext& ctx,
                                              const nlohmann::json& value) {
  const std::string text = value.dump();
  const int world = ctx.world_size();
  auto long_opts = at::TensorOptions().dtype(at::kLong).device(ctx.device());
  auto byte_opts = at::TensorOptions().dtype(at::kByte).device(ctx.device());

  // Round 1: every rank's length, so round 2 can pad to the longest.
  std::vector<at::Tensor> mine{at::full({1}, static_cast<std::int64_t>(text.size()), long_opts)};
  std::vector<std::vector<at::Tensor>> lengths(1);
  for (int i = 0; i < world; ++i) lengths[0].push_back(at::empty({1}, long_opts));
  ctx.process_group()->allgather(lengths, mine)->wait();
  std::vector<std::int64_t> sizes;
  for (const auto& t : lengths[0]) sizes.push_back(t.cpu().item<std::int64_t>());
  std::int64_t longest = 1;
  for (std::int64_t size : sizes) longest = std::max(longest, size);

  at::Tensor padded = at::zeros({longest}, at::TensorOptions().dtype(at::kByte));
  std::memcpy(padded.data_ptr<std::uint8_t>(), text.data(), text.size());
  std::vector<at::Tensor> payload{padded.to(ctx.device())};
  std::vector<std::vector<at::Tensor>> gathered(1);
  for (int i = 0; i < world; ++i) gathered[0].push_back(at::empty({longest}, byte_opts));
  ctx.process_group()->allgather(gathered, payload)->wait();

  std::vector<nlohmann::json> out;
  for (int i = 0; i < world; ++i) {
    at::Tensor bytes = gathered[0][static_cast<std::size_t>(i)].cpu();
    const char* data = reinterpret_cast<const char*>(bytes.data_ptr<std::uint8_t>());
    out.push_back(nlohmann::json::parse(data, data + sizes[static_cast<std::size_t>(i)]));
  }
  return out;
}

std::vector<double> all_reduce_metrics(const WorkerContext& ctx, std::vector<double> values,
                                       ReduceOp op) {
  if (values.empty()) return values;
  at::Tensor t = at::from_blob(values.data(), {static_cast<std::int64_t>(values.size())},
                               at::TensorOptions().dtype(at::kDouble))
                     .to(ctx.device(), /*non_blocking=*/false, /*copy=*/true);
  std::vector<at::Tensor> tensors{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = to_c10d(op);
  ctx.process_group()->allreduce(tensors, opts)->wait();
  at::Tensor result = tensors[0].cpu();
  if (op == ReduceOp::kMean) result = result / ctx.world_size();
  const double* data = result.data_ptr<double>();
  return std::vector<double>(data, data + values.size());
}

double all_reduce_metric(const WorkerContext& ctx, double value, ReduceOp op) {
  return all_reduce_metrics(ctx, {value}, op)[0];
}

void log_rank0(const WorkerContext& ctx, std::string_view line) {
  if (!ctx.is_rank0()) return;
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace ddp
