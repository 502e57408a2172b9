#include "launcher/numa_topology.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "common/text.h"

namespace ddp::launcher {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return io_error("cannot read " + path.string());
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

Result<int> read_int(const fs::path& path) {
  auto line = read_line(path);
  if (!line) return line.status();
  const auto value = parse_number<int>(*line);
  if (!value) return io_error(path.string() + " holds '" + *line + "', not a number");
  return *value;
}

Result<std::set<int>> read_cpu_list(const fs::path& path) {
  auto line = read_line(path);
  if (!line) return line.status();
  auto cpus = parse_cpu_list(*line);
  if (!cpus) return io_error(path.string() + ": " + cpus.status().message());
  return cpus;
}

// The smallest CPU sharing cpu<N>'s highest-level data or unified cache; the CPU itself when
// sysfs lists no cache.
Result<int> complex_of(const fs::path& cpu_dir, int cpu) {
  int best_level = -1;
  int key = cpu;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cpu_dir / "cache", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    auto type = read_line(entry.path() / "type");
    if (!type) return type.status();
    if (*type != "Unified" && *type != "Data") continue;
    auto level = read_int(entry.path() / "level");
    if (!level) return level.status();
    if (*level <= best_level) continue;
    auto shared = read_cpu_list(entry.path() / "shared_cpu_list");
    if (!shared) return shared.status();
    if (shared->empty()) continue;
    best_level = *level;
    key = *shared->begin();
  }
  return key;
}

Result<CpuPlace> place_of(const fs::path& sysfs, int cpu) {
  fs::path dir = sysfs / "devices/system/cpu" / ("cpu" + std::to_string(cpu));
  CpuPlace place;
  auto socket = read_int(dir / "topology/physical_package_id");
  if (!socket) return socket.status();
  place.socket = *socket;
  auto siblings = read_cpu_list(dir / "topology/thread_siblings_list");
  if (!siblings) return siblings.status();
  place.core = siblings->empty() ? cpu : *siblings->begin();
  auto complex = complex_of(dir, cpu);
  if (!complex) return complex.status();
  place.complex = *complex;
  return place;
}

}  // namespace

Result<std::set<int>> parse_cpu_list(const std::string& text) {
  std::set<int> out;
  for (std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const auto dash = item.find('-');
    const auto lo = parse_number<int>(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : parse_number<int>(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo > 1 << 16) {
      return invalid_argument("bad CPU list '" + text + "'");
    }
    for (int c = *lo; c <= *hi; ++c) out.insert(c);
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& sorted_cpus) {
  std::string out;
  for (std::size_t i = 0; i < sorted_cpus.size();) {
    std::size_t j = i;
    while (j + 1 < sorted_cpus.size() && sorted_cpus[j + 1] == sorted_cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted_cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(sorted_cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

Result<NumaTopology> read_numa_topology(const fs::path& sysfs) {
  NumaTopology topology;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sysfs / "devices/system/node", ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= 4 || name.rfind("node", 0) != 0 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return std::isdigit(c) != 0; })) {
      continue;
    }
    auto cpus = read_cpu_list(entry.path() / "cpulist");
    if (!cpus) return cpus.status();
    if (!cpus->empty()) topology.node_cpus[std::stoi(name.substr(4))] = *cpus;  // memory-only
  }
  if (topology.node_cpus.empty()) {
    auto online = read_cpu_list(sysfs / "devices/system/cpu/online");
    if (!online) return online.status();
    topology.node_cpus[0] = *online;
  }
  for (const auto& [node, cpus] : topology.node_cpus) {
    for (int cpu : cpus) {
      auto place = place_of(sysfs, cpu);
      if (!place) return place.status();
      topology.cpus[cpu] = *place;
    }
  }
  return topology;
}

std::vector<std::optional<int>> pci_numa_nodes(const fs::path& sysfs,
                                               const std::vector<std::string>& addresses) {
  std::vector<std::optional<int>> out;
  for (std::string address : addresses) {
    std::transform(address.begin(), address.end(), address.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto node = read_int(sysfs / "bus/pci/devices" / address / "numa_node");
    // One-node machines often say -1: that is node 0 (as torchrun reads it).
    out.push_back(node ? std::optional<int>(std::max(*node, 0)) : std::nullopt);
  }
  return out;
}

}  // namespace ddp::launcher
