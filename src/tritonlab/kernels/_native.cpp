// tritonlab's native autograd node: RMSNorm's training step with its backward in C++.
//
// Why (docs/ops.md#host-cost): autograd runs a CUDA graph's backward nodes on its worker
// thread, where a Python node pays the GIL handoff and tens of microseconds per torch call;
// an RMSNorm step (bf16, 8192x4096) is host-bound for that reason. Here the forward makes
// its outputs and a C++ node, and the node's backward allocates dx, dg and the partial-dg rows
// and launches the Triton kernels the Python plan compiled (their CUfunction handles), with no
// Python and no GIL. kernels/_native.py builds this file with the machine's C++ compiler and
// describes each launch (`Launch`): its kernel parameters in the order Triton 3.6's launcher
// passes them (constexpr parameters left out, then the global and profile scratch pointers).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace py = pybind11;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

namespace {

// The driver API, from the libcuda that torch and Triton have loaded (no CUDA headers needed)
using CUresult = int;
using CUfunction = void*;
using CUstream = void*;
using CUcontext = void*;
using CUdevice = int;

struct Driver {
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*ctx_get)(CUcontext*) = nullptr;
  CUresult (*ctx_set)(CUcontext) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  std::string missing;
};

template <class F>
void bind(void* lib, const char* name, F& slot, std::string& missing) {
  slot = reinterpret_cast<F>(lib ? dlsym(lib, name) : nullptr);
  if (!slot) missing += std::string(missing.empty() ? "" : ", ") + name;
}

const Driver& driver() {
  static const Driver d = [] {
    Driver d;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    bind(lib, "cuLaunchKernel", d.launch, d.missing);
    bind(lib, "cuCtxGetCurrent", d.ctx_get, d.missing);
    bind(lib, "cuCtxSetCurrent", d.ctx_set, d.missing);
    bind(lib, "cuDeviceGet", d.device_get, d.missing);
    bind(lib, "cuDevicePrimaryCtxRetain", d.retain, d.missing);
    bind(lib, "cuGetErrorName", d.error_name, d.missing);
    return d;
  }();
  if (!d.missing.empty())
    throw std::runtime_error("tritonlab native: libcuda.so.1 lacks " + d.missing);
  return d;
}

void check(CUresult status, const char* what, const std::string& kernel) {
  if (status == 0) return;
  const char* name = "unknown";
  driver().error_name(status, &name);
  throw std::runtime_error("tritonlab native: " + std::string(what) + " failed for kernel " +
                           kernel + ": " + name + " (" + std::to_string(status) +
                           "); set TRITONLAB_NATIVE=0 to launch from Python instead");
}

// What a kernel parameter is, in `Launch::kinds`
enum Kind : int { kSlot = 0, kI32 = 1, kI64 = 2, kF32 = 3, kScalar = 4 };

// One Triton kernel launch with everything but its tensors fixed: `values[i]` is, for a
// kSlot parameter, the index of its tensor in the call's table; for kI32/kI64 the integer;
// for kF32 the float's bits; kScalar takes the call's float (RMSNorm's eps).
struct Launch {
  std::string kernel;
  uintptr_t function = 0;
  std::vector<unsigned> grid;  // x, y, z
  unsigned threads = 0, shared = 0;
  std::vector<int> kinds;
  std::vector<int64_t> values;

  Launch(std::string kernel, uintptr_t function, std::vector<unsigned> grid, unsigned threads,
         unsigned shared, std::vector<int> kinds, std::vector<int64_t> values)
      : kernel(std::move(kernel)), function(function), grid(std::move(grid)), threads(threads),
        shared(shared), kinds(std::move(kinds)), values(std::move(values)) {
    if (this->grid.size() != 3) throw std::invalid_argument("Launch: grid must have 3 sizes");
    if (this->kinds.size() != this->values.size())
      throw std::invalid_argument("Launch: kinds and values differ in length");
    for (int k : this->kinds)
      if (k < kSlot || k > kScalar) throw std::invalid_argument("Launch: unknown kind");
  }

  // The parameter buffer, one 8-byte cell per parameter, then the two scratch pointers (null:
  // _native.py takes only kernels without scratch)
  std::vector<uint64_t> pack(const std::vector<uintptr_t>& slots, float scalar) const {
    std::vector<uint64_t> cells(kinds.size() + 2, 0);
    for (size_t i = 0; i < kinds.size(); ++i) {
      switch (kinds[i]) {
        case kSlot: {
          size_t s = static_cast<size_t>(values[i]);
          if (s >= slots.size()) throw std::out_of_range("Launch " + kernel + ": bad slot");
          cells[i] = slots[s];
          break;
        }
        case kI32: {
          int32_t v = static_cast<int32_t>(values[i]);
          std::memcpy(&cells[i], &v, sizeof v);
          break;
        }
        case kI64:
          std::memcpy(&cells[i], &values[i], sizeof(int64_t));
          break;
        case kF32: {
          uint32_t bits = static_cast<uint32_t>(values[i]);
          std::memcpy(&cells[i], &bits, sizeof bits);
          break;
        }
        case kScalar:
          std::memcpy(&cells[i], &scalar, sizeof scalar);
          break;
      }
    }
    return cells;
  }

  void operator()(const std::vector<uintptr_t>& slots, float scalar, uintptr_t stream,
                  int device) const {
    const Driver& d = driver();
    std::vector<uint64_t> cells = pack(slots, scalar);
    std::vector<void*> params(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) params[i] = &cells[i];
    CUcontext ctx = nullptr;
    check(d.ctx_get(&ctx), "cuCtxGetCurrent", kernel);
    if (!ctx) {  // a thread the runtime has not used yet: the device's primary context
      CUdevice dev = 0;
      check(d.device_get(&dev, device), "cuDeviceGet", kernel);
      check(d.retain(&ctx, dev), "cuDevicePrimaryCtxRetain", kernel);
      check(d.ctx_set(ctx), "cuCtxSetCurrent", kernel);
    }
    if (grid[0] * grid[1] * grid[2] == 0) return;
    check(d.launch(reinterpret_cast<CUfunction>(function), grid[0], grid[1], grid[2], threads,
                   1, 1, shared, reinterpret_cast<CUstream>(stream), params.data(), nullptr),
          "cuLaunchKernel", kernel);
  }
};

// RMSNorm's launches for one input signature (kernels/rmsnorm.py's _Plan). Tensor slots:
enum Slot { X = 0, G, Y, RSTD, DY, DX, PARTIAL, COEF, DG, NSLOTS };

struct RMSNormPlan {
  Launch forward;
  std::vector<Launch> backward;  // (coefficients,) then dx with the partial-dg rows
  Launch dg_sum;
  int64_t rows;
  std::vector<int64_t> partial_shape;
  bool coef, fp64_stats;
};

uintptr_t address(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

bool aligned(const at::Tensor& t) { return address(t) % 16 == 0; }

// The Python function the backward calls under create_graph (a gradient that itself needs a
// graph): the registered backward op, whose own gradient raises. Set once, kept forever.
py::object* create_graph_backward = nullptr;

struct RMSNormBackward : public Node {
  std::shared_ptr<const RMSNormPlan> plan;
  SavedVariable x, g, rstd;
  uintptr_t stream = 0;
  int device = 0;

  std::string name() const override { return "TritonlabRMSNormBackward"; }

  void release_variables() override {
    x.reset_data();
    g.reset_data();
    rstd.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& dy = grads[0];
    if (!dy.defined()) return {at::Tensor(), at::Tensor()};  // y's gradient is zero
    at::Tensor x2 = x.unpack(), g2 = g.unpack(), r = rstd.unpack();
    if (at::GradMode::is_enabled()) {  // create_graph: the op, whose gradient says it has none
      py::gil_scoped_acquire gil;
      if (create_graph_backward == nullptr)
        throw std::runtime_error("tritonlab native: no create_graph backward registered");
      auto out = (*create_graph_backward)(dy, x2, g2, r).cast<std::pair<at::Tensor, at::Tensor>>();
      return {out.first, out.second};
    }
    at::Tensor dy2 = dy.contiguous();
    if (!aligned(dy2)) dy2 = dy2.clone();  // the kernels were compiled for 16-byte alignment
    at::Tensor dx = at::empty(x2.sizes(), x2.options());
    at::Tensor partial = at::empty(plan->partial_shape, r.options());
    at::Tensor coef = plan->coef ? at::empty({plan->rows}, r.options()) : at::Tensor();
    bool want_dg = should_compute_output(1);
    at::Tensor dg = want_dg ? at::empty(g2.sizes(), g2.options()) : at::Tensor();
    std::vector<uintptr_t> slots(NSLOTS, 0);
    slots[X] = address(x2), slots[G] = address(g2), slots[RSTD] = address(r);
    slots[DY] = address(dy2), slots[DX] = address(dx), slots[PARTIAL] = address(partial);
    if (coef.defined()) slots[COEF] = address(coef);
    if (dg.defined()) slots[DG] = address(dg);
    for (const Launch& launch : plan->backward) launch(slots, 0.f, stream, device);
    if (want_dg) plan->dg_sum(slots, 0.f, stream, device);
    return {dx, dg};
  }
};

// shared_ptr<Node> up to torch 2.12, c10::intrusive_ptr<Node> after
using NodePtr = std::decay_t<decltype(std::declval<at::Tensor>().grad_fn())>;

template <class T>
NodePtr make_node() {
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<Node>>)
    return std::make_shared<T>();
  else
    return c10::make_intrusive<T>();
}

// y = rmsnorm(x, g) with its C++ node, or None where this plan cannot take these tensors
// (not 16-byte aligned as its kernels were compiled): the caller then takes the Python path.
std::optional<at::Tensor> rmsnorm_forward(const std::shared_ptr<const RMSNormPlan>& plan,
                                          const at::Tensor& x, const at::Tensor& g, double eps,
                                          uintptr_t stream) {
  at::Tensor x2, g2, y, rstd;
  {
    at::NoGradGuard no_grad;
    // forward-mode AD (dual tensors) is the Python path's to refuse
    if (torch::autograd::isFwGradDefined(x) || torch::autograd::isFwGradDefined(g))
      return std::nullopt;
    x2 = x.contiguous();
    g2 = g.contiguous();
    if (!aligned(x2) || !aligned(g2)) return std::nullopt;
    y = at::empty(x.sizes(), x2.options());
    rstd = at::empty({plan->rows}, x2.options().dtype(plan->fp64_stats ? at::kDouble
                                                                       : at::kFloat));
  }
  int device = x.device().index();
  std::vector<uintptr_t> slots(NSLOTS, 0);
  slots[X] = address(x2), slots[G] = address(g2), slots[Y] = address(y);
  slots[RSTD] = address(rstd);
  plan->forward(slots, static_cast<float>(eps), stream, device);
  if (torch::autograd::compute_requires_grad(x, g)) {
    NodePtr node = make_node<RMSNormBackward>();
    auto* self = static_cast<RMSNormBackward*>(node.get());
    self->plan = plan, self->stream = stream, self->device = device;
    self->x = SavedVariable(x2, false);
    self->g = SavedVariable(g2, false);
    self->rstd = SavedVariable(rstd, false);
    node->set_next_edges(torch::autograd::collect_next_edges(x, g));
    torch::autograd::set_history(y, node);
  }
  return y;
}

}  // namespace

PYBIND11_MODULE(_tritonlab_native, m) {
  m.doc() = "tritonlab's native autograd nodes (kernels/_native.cpp)";
  py::class_<Launch>(m, "Launch")
      .def(py::init<std::string, uintptr_t, std::vector<unsigned>, unsigned, unsigned,
                    std::vector<int>, std::vector<int64_t>>(),
           py::arg("kernel"), py::arg("function"), py::arg("grid"), py::arg("threads"),
           py::arg("shared"), py::arg("kinds"), py::arg("values"))
      .def("pack", &Launch::pack, py::arg("slots"), py::arg("scalar") = 0.f,
           "The parameter cells (8 bytes each, scratch pointers last) a launch would pass")
      .def_readonly("kernel", &Launch::kernel);
  py::class_<RMSNormPlan, std::shared_ptr<RMSNormPlan>>(m, "RMSNormPlan")
      .def(py::init([](Launch forward, std::vector<Launch> backward, Launch dg_sum,
                       int64_t rows, std::vector<int64_t> partial_shape, bool coef,
                       bool fp64_stats) {
             return std::make_shared<RMSNormPlan>(RMSNormPlan{
                 std::move(forward), std::move(backward), std::move(dg_sum), rows,
                 std::move(partial_shape), coef, fp64_stats});
           }),
           py::arg("forward"), py::arg("backward"), py::arg("dg_sum"), py::arg("rows"),
           py::arg("partial_shape"), py::arg("coef"), py::arg("fp64_stats"));
  m.def("rmsnorm_forward",
        [](const std::shared_ptr<RMSNormPlan>& plan, const at::Tensor& x, const at::Tensor& g,
           double eps, uintptr_t stream) { return rmsnorm_forward(plan, x, g, eps, stream); },
        py::arg("plan"), py::arg("x"), py::arg("g"), py::arg("eps"), py::arg("stream"));
  m.def("set_create_graph_backward", [](py::object fn) {
    if (create_graph_backward == nullptr) create_graph_backward = new py::object();
    *create_graph_backward = std::move(fn);
  });
  m.def("slots", [] {
    return std::vector<std::pair<std::string, int>>{
        {"x", X}, {"g", G}, {"y", Y}, {"rstd", RSTD}, {"dy", DY}, {"dx", DX},
        {"partial", PARTIAL}, {"coef", COEF}, {"dg", DG}};
  });
  m.attr("KINDS") = py::dict(py::arg("slot") = int(kSlot), py::arg("i32") = int(kI32),
                             py::arg("i64") = int(kI64), py::arg("f32") = int(kF32),
                             py::arg("scalar") = int(kScalar));
}
