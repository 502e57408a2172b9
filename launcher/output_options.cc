// steps::resolve_output: how worker output is prefixed and duplicated (torchrun 2.10-2.14's
// --log-line-prefix-template and --duplicate-std{out,err}-filters), --logs-specs, and
// --numa-binding's mode (the CPUs it means are found on the machine, launcher/numa_binding.h).
#include "common/text.h"
#include "launcher/option_steps.h"

namespace ddp::launcher::steps {
namespace {

constexpr const char* kPrefixTemplateEnv = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE";

// torchrun's comma_separated_list: the items between commas; empty items are dropped.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (std::string_view item : split(text, ',')) {
    if (!item.empty()) items.emplace_back(item);
  }
  return items;
}

Status resolve_numa(const RawOptions& raw, agent::AgentConfig& config) {
  const RawValue& v = raw.at("numa_binding");
  if (!v.given || v.text.empty()) return Status::ok();
  using agent::NumaBinding;
  if (v.text == "node") {
    config.numa_binding = NumaBinding::kNode;
  } else if (v.text == "socket") {
    config.numa_binding = NumaBinding::kSocket;
  } else if (v.text == "exclusive") {
    config.numa_binding = NumaBinding::kExclusive;
  } else if (v.text == "core-complex") {
    config.numa_binding = NumaBinding::kCoreComplex;
  } else {
    return from(v, invalid_argument("--numa-binding: unknown mode '" + v.text +
                                    "'; use node, socket, exclusive or core-complex"));
  }
  return Status::ok();
}

}  // namespace

Status resolve_output(const RawOptions& raw, const LaunchEnvironment& environment,
                      Invocation& out) {
  auto& config = out.config;
  // torchrun: the option (or PET_LOG_LINE_PREFIX_TEMPLATE), else the TORCHELASTIC_ variable.
  // Unknown macros stay as written (string.Template.safe_substitute).
  const RawValue& prefix = raw.at("log_line_prefix_template");
  if (prefix.given) {
    config.log_line_prefix_template = prefix.text;
  } else if (auto it = environment.env.find(kPrefixTemplateEnv); it != environment.env.end()) {
    config.log_line_prefix_template = it->second;
  }
  config.duplicate_stdout_filters = comma_list(raw.at("duplicate_stdout_filters").text);
  config.duplicate_stderr_filters = comma_list(raw.at("duplicate_stderr_filters").text);

  const RawValue& specs = raw.at("logs_specs");
  if (!specs.text.empty() && specs.text != "default") {
    return from(specs, invalid_argument(
                           "--logs-specs " + specs.text +
                           ": ddprun has only torchrun's default logs spec (default); its log "
                           "layout is set with --log-dir, --redirects and --tee; drop the option"));
  }
  return resolve_numa(raw, config);
}

}  // namespace ddp::launcher::steps
