// torch.save / torch.load compatible files (see ddp/state_dict.h).
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/jit/serialization/unpickler.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ddp/state_dict.h"
#include "pickle_rewrite.h"

namespace ddp {

namespace {

// A copy of `v` whose lists are generic: LibTorch pickles an int, float, bool or Tensor list as
// a call of torch.jit._pickle.build_*list, a global weights_only=True refuses; a generic list
// is a plain pickle list. Tensors are shared, not copied.
c10::IValue with_generic_lists(const c10::IValue& v) {
  if (v.isList()) {
    c10::impl::GenericList out(c10::AnyType::get());
    for (const c10::IValue& item : v.toListRef()) out.push_back(with_generic_lists(item));
    return out;
  }
  if (v.isGenericDict()) {
    const auto in = v.toGenericDict();
    c10::impl::GenericDict out(in.keyType(), c10::AnyType::get());
    for (const auto& item : in) out.insert(item.key(), with_generic_lists(item.value()));
    return out;
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    for (const c10::IValue& item : v.toTupleRef().elements()) {
      items.push_back(with_generic_lists(item));
    }
    return c10::ivalue::Tuple::create(std::move(items));
  }
  return v;
}

// torch::jit::pickle_save without its type tags: pickle_save wraps every typed dict and list in
// torch.jit._pickle.restore_type_tag, a global that torch.load's weights_only=True (the default
// since PyTorch 2.6) refuses. Untagged and with generic lists, the file needs only the globals
// torch.save's own files use.
std::vector<char> pickle_untagged(const c10::IValue& value) {
  std::vector<char> pickle;
  torch::jit::Pickler pickler(
      [&](const char* data, std::size_t n) { pickle.insert(pickle.end(), data, data + n); },
      nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(with_generic_lists(value));
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
    archive.insert(archive.end(), static_cast<const char*>(data),
                   static_cast<const char*>(data) + n);
    return n;
  });
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(),
                                     writer);
  writer.writeEndOfFile();
  return archive;
}

}  // namespace

Status save_python_file(const c10::IValue& value, const std::string& path) {
  std::vector<char> bytes;
  try {
    bytes = pickle_untagged(value);
  } catch (const c10::Error& e) {
    return invalid_argument("cannot pickle the value for " + path + ": " +
                            e.what_without_backtrace());
  }
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return io_error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return io_error("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
  return Status::ok();
}

Result<c10::IValue> load_python_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return not_found("no file " + path);
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    if (!reader.hasRecord("data.pkl")) {
      return invalid_argument(path + " is a zip archive without data.pkl: not a torch.save file");
    }
    auto [data, size] = reader.getRecord("data.pkl");
    auto pickle =
        detail::rewrite_python_pickle(std::string(static_cast<const char*>(data.get()), size));
    if (!pickle) return invalid_argument(path + ": " + pickle.status().message());
    std::size_t pos = 0;
    auto read = [&](char* buffer, std::size_t n) {
      const std::size_t take = std::min(n, pickle->size() - pos);
      std::memcpy(buffer, pickle->data() + pos, take);
      pos += take;
      return take;
    };
    auto read_record = [&](const std::string& name) {
      return std::get<0>(reader.getRecord("data/" + name));
    };
    torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::Device(c10::kCPU));
    unpickler.set_version(reader.version());
    return unpickler.parse_ivalue();
  } catch (const c10::Error& e) {
    return invalid_argument(path +
                            " is not a readable torch.save file (zip format, PyTorch >= 1.6): " +
                            e.what_without_backtrace());
  }
}

}  // namespace ddp
