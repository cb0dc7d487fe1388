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
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
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

// cuLaunchKernelEx's configuration, as cuda.h lays it out (CUDA 12 and 13): what a launch
// with programmatic dependent launch passes (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_
// SERIALIZATION, attribute 6, its value an int)
struct alignas(8) LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmatic_stream_serialization;
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72 && alignof(LaunchAttribute) == 8,
              "CUlaunchAttribute is 72 bytes, 8-byte aligned");
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared;
  CUstream stream;
  LaunchAttribute* attrs;
  unsigned attr_count;
};
constexpr int kProgrammaticStreamSerialization = 6;

struct Driver {
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*launch_ex)(const LaunchConfig*, CUfunction, void**, void**) = nullptr;
  CUresult (*ctx_get)(CUcontext*) = nullptr;
  CUresult (*ctx_set)(CUcontext) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*error_name)(CUresult, const char**) = nullptr;
  CUresult (*is_capturing)(CUstream, int*) = nullptr;
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
    bind(lib, "cuStreamIsCapturing", d.is_capturing, d.missing);
    bind(lib, "cuLaunchKernelEx", d.launch_ex, d.missing);  // CUDA 12.0 and newer
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
// for kF32 the float's bits; kScalar takes the call's float (RMSNorm's eps). `pdl`: launched
// as Triton launches a kernel compiled with launch_pdl (programmatic dependent launch: it may
// start before the kernel ahead of it on the stream ends, and waits for it in its code).
struct Launch {
  std::string kernel;
  uintptr_t function = 0;
  std::vector<unsigned> grid;  // x, y, z
  unsigned threads = 0, shared = 0;
  std::vector<int> kinds;
  std::vector<int64_t> values;
  bool pdl = false;

  Launch(std::string kernel, uintptr_t function, std::vector<unsigned> grid, unsigned threads,
         unsigned shared, std::vector<int> kinds, std::vector<int64_t> values, bool pdl)
      : kernel(std::move(kernel)), function(function), grid(std::move(grid)), threads(threads),
        shared(shared), kinds(std::move(kinds)), values(std::move(values)), pdl(pdl) {
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
    if (pdl) {
      LaunchAttribute attr{};
      attr.id = kProgrammaticStreamSerialization;
      attr.value.programmatic_stream_serialization = 1;
      LaunchConfig config{grid[0], grid[1], grid[2], threads, 1, 1, shared,
                          reinterpret_cast<CUstream>(stream), &attr, 1};
      check(d.launch_ex(&config, reinterpret_cast<CUfunction>(function), params.data(),
                        nullptr),
            "cuLaunchKernelEx", kernel);
      return;
    }
    check(d.launch(reinterpret_cast<CUfunction>(function), grid[0], grid[1], grid[2], threads,
                   1, 1, shared, reinterpret_cast<CUstream>(stream), params.data(), nullptr),
          "cuLaunchKernel", kernel);
  }
};

// RMSNorm's launches for one input signature (kernels/rmsnorm.py's _Plan). Tensor slots:
// STATS and COUNTERS: an exchange kernel's buffers (kernels/_exchange.py)
enum Slot { X = 0, G, Y, RSTD, DY, DX, PARTIAL, COEF, DG, STATS, COUNTERS, NSLOTS };

uintptr_t address(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); }

// Meeting counters (kernels/_exchange.py's two int32 per row, the split attention forward's
// one per query block), zero before a launch and left zero by it, so made once (zeroed) and
// handed out again, per stream and thread as `_launch.scratch` keeps them: calls on one
// stream run in order, and another stream or thread, whose kernels could interleave, gets
// its own. While the stream is being captured into a CUDA graph, a fresh buffer each call,
// as `_launch.scratch` gives there: its zeroing is captured with the launch, and nothing ran
// it yet.
class Counters {
 public:
  at::Tensor get(int which, int64_t count, int device, uintptr_t stream) {
    auto make = [&] {
      return at::zeros({count}, at::TensorOptions().dtype(at::kInt).device(at::kCUDA, device));
    };
    int capturing = 0;
    check(driver().is_capturing(reinterpret_cast<CUstream>(stream), &capturing),
          "cuStreamIsCapturing", "an exchange kernel");
    if (capturing) return make();
    std::lock_guard<std::mutex> lock(mutex_);
    at::Tensor& t = held_[{which, stream, std::this_thread::get_id()}];
    if (!t.defined()) t = make();
    return t;
  }

  // After a failed launch, whose programs may have left counts behind: made anew next time
  void drop(int which, uintptr_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.erase({which, stream, std::this_thread::get_id()});
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<int, uintptr_t, std::thread::id>, at::Tensor> held_;
};

struct RMSNormPlan {
  Launch forward;
  std::vector<Launch> backward;  // (coefficients,) then dx with the partial-dg rows
  std::optional<Launch> dg_sum;  // none where `fused` runs
  int64_t rows;
  std::vector<int64_t> partial_shape;
  bool coef, fp64_stats;
  // the exchange forward's and backward's statistics, (rows, pieces); empty: no exchange
  std::vector<int64_t> fwd_stats, bwd_stats;
  // the backward with dg's sum in the same launch (rmsnorm_bwd_fused_kernel), run in place of
  // `backward` and `dg_sum` (which it leaves empty), its two counters in COUNTERS, and a dg
  // of its own where a frozen weight wants none; empty: none
  std::vector<Launch> fused;
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();

  // Calls `run`, the launches of one pass (which: 0 the forward, 1 the backward), with, where
  // that pass has an exchange kernel, its statistics (fresh from torch's caching allocator,
  // stream-ordered) and counters in their slots
  template <class Run>
  void with_exchange(int which, std::vector<uintptr_t>& slots, const at::TensorOptions& stats,
                     int device, uintptr_t stream, Run run) const {
    const std::vector<int64_t>& shape = which ? bwd_stats : fwd_stats;
    if (shape.empty()) return run();
    // both held until the launches are issued: a buffer made while a CUDA graph captures is
    // this call's alone, and freeing it before its kernel is issued would put the free first
    // in the graph (stream-ordered allocators)
    at::Tensor buffer = at::empty(shape, stats);
    at::Tensor meeting = counters->get(which, 2 * shape[0], device, stream);
    slots[STATS] = address(buffer);
    slots[COUNTERS] = address(meeting);
    try {
      run();
    } catch (...) {
      counters->drop(which, stream);
      throw;
    }
  }
};

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
    if (!plan->fused.empty()) {  // dg summed by the backward's last programs
      at::Tensor dropped = want_dg ? at::Tensor() : at::empty(g2.sizes(), g2.options());
      if (dropped.defined()) slots[DG] = address(dropped);
      const int which = 2;  // the counters' own buffer (0, 1: the exchange passes')
      at::Tensor meeting = plan->counters->get(which, 2, device, stream);
      slots[COUNTERS] = address(meeting);
      try {
        for (const Launch& launch : plan->fused) launch(slots, 0.f, stream, device);
      } catch (...) {
        plan->counters->drop(which, stream);
        throw;
      }
      return {dx, dg};
    }
    plan->with_exchange(1, slots, r.options(), device, stream, [&] {
      for (const Launch& launch : plan->backward) launch(slots, 0.f, stream, device);
    });
    if (want_dg) (*plan->dg_sum)(slots, 0.f, stream, device);
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
  plan->with_exchange(0, slots, rstd.options(), device, stream,
                      [&] { plan->forward(slots, static_cast<float>(eps), stream, device); });
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


// ---- Any op's native path: one table per op and options, one plan per input signature ----
//
// kernels/_native.py's NativeOp describes, once per signature, what an op's call does: the
// tensors it allocates, the Triton launches of its forward, the tensors its backward keeps,
// allocates and launches, and where each input's gradient comes from. `OpTable::call` then
// runs a call with no Python: it finds the plan by the inputs' signature, allocates, launches
// and, where a gradient is wanted, records an `OpBackward` node. Slots number the tensors of
// a call: the inputs, then the forward's allocations, then dy and the backward's allocations.

// Where an input's gradient comes from, in `OpPlan::grads`
enum GradKind : int { kGradNone = 0, kGradSlot = 1, kGradDy = 2, kGradExpandDy = 3 };

struct Alloc {
  std::vector<int64_t> sizes;
  at::ScalarType dtype;
};

struct OpPlan {
  int inputs = 0;                          // slots 0 .. inputs-1
  std::vector<Alloc> allocs;               // slots inputs .. dy-1
  int counters_alloc = -1;                 // the allocation that is zeroed counters (int32,
                                           // Counters: left zero by the forward), or -1
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();
  std::vector<Launch> forward;
  int result = 0;                          // the slot the call returns
  bool differentiable = false;             // a backward is described (its kernels compiled)
  std::vector<int> saved;                  // forward slots the backward reads
  std::vector<Alloc> bwd_allocs;           // slots dy+1 ..
  std::vector<Launch> backward;
  std::vector<int> backward_for;           // per backward launch: -1, or the input whose
                                           // gradient it serves (skipped where not wanted)
  std::vector<std::pair<int, int>> grads;  // per input: (GradKind, slot)
  std::vector<std::vector<int64_t>> input_sizes;
  int dy() const { return inputs + static_cast<int>(allocs.size()); }
  int slots() const { return dy() + 1 + static_cast<int>(bwd_allocs.size()); }
};

using PlanPtr = std::shared_ptr<const OpPlan>;

void allocate(const std::vector<Alloc>& allocs, int first, const at::TensorOptions& options,
              std::vector<at::Tensor>& held, std::vector<uintptr_t>& slots, int skip = -1) {
  for (size_t j = 0; j < allocs.size(); ++j) {
    if (static_cast<int>(j) == skip) continue;
    at::Tensor t = at::empty(allocs[j].sizes, options.dtype(allocs[j].dtype));
    slots[first + j] = address(t);
    held[first + j] = std::move(t);
  }
}

// This node as the pointer type `SavedVariable::unpack` takes (an output saved for its own
// backward is unpacked against it)
template <class P, class N>
P self_of(N* node) {  // P is NodePtr: a template argument, so only one branch is compiled
  if constexpr (std::is_same_v<P, std::shared_ptr<Node>>)
    return node->shared_from_this();
  else
    return P::reclaim_copy(node);
}

struct OpBackward : public Node {
  PlanPtr plan;
  std::string op;
  std::vector<SavedVariable> saved;
  py::object* create_graph = nullptr;  // the table's, never freed (no GIL in a destructor)
  uintptr_t stream = 0;
  int device = 0;

  std::string name() const override { return op; }

  void release_variables() override {
    for (SavedVariable& s : saved) s.reset_data();
  }

  variable_list apply(variable_list&& grads) override {
    const at::Tensor& dy = grads[0];
    size_t n = plan->differentiable ? plan->grads.size() : static_cast<size_t>(plan->inputs);
    if (!dy.defined()) return variable_list(n);  // y's gradient is zero
    std::vector<at::Tensor> kept;
    for (SavedVariable& s : saved) kept.push_back(s.unpack(self_of<NodePtr>(this)));
    if ((at::GradMode::is_enabled() && !plan->backward.empty()) || !plan->differentiable) {
      // create_graph, or a plan whose backward kernels have not compiled yet: through the
      // registered ops (the Python path, which compiles them), whose own gradients say they
      // have none
      py::gil_scoped_acquire gil;
      if (create_graph == nullptr || create_graph->is_none())
        throw std::runtime_error("tritonlab native: " + op + " has no create_graph backward");
      py::tuple args(kept.size() + 1);
      // the native backward's dy (contiguous), so that the kernels the Python one compiles
      // are those a plan describes
      args[0] = py::cast(plan->differentiable ? dy : dy.contiguous());
      for (size_t i = 0; i < kept.size(); ++i) args[i + 1] = py::cast(kept[i]);
      py::tuple out = (*create_graph)(*args);
      variable_list result(n);
      for (size_t i = 0; i < n && i < out.size(); ++i)
        if (!out[i].is_none() && should_compute_output(i)) result[i] = out[i].cast<at::Tensor>();
      return result;
    }
    std::vector<at::Tensor> held(plan->slots());
    std::vector<uintptr_t> slots(plan->slots(), 0);
    for (size_t k = 0; k < kept.size(); ++k) {
      slots[plan->saved[k]] = address(kept[k]);
      held[plan->saved[k]] = kept[k];
    }
    at::Tensor dy2 = dy.contiguous();
    if (!aligned(dy2)) dy2 = dy2.clone();  // the kernels were compiled for 16-byte alignment
    int d = plan->dy();
    slots[d] = address(dy2);
    held[d] = dy2;
    allocate(plan->bwd_allocs, d + 1, dy2.options(), held, slots);
    for (size_t k = 0; k < plan->backward.size(); ++k) {
      int wanted = k < plan->backward_for.size() ? plan->backward_for[k] : -1;
      if (wanted < 0 || should_compute_output(static_cast<size_t>(wanted)))
        plan->backward[k](slots, 0.f, stream, device);
    }
    variable_list result(n);
    for (size_t i = 0; i < n; ++i) {
      if (!should_compute_output(i)) continue;
      auto [kind, slot] = plan->grads[i];
      if (kind == kGradSlot) result[i] = held[slot];
      else if (kind == kGradDy) result[i] = dy;
      else if (kind == kGradExpandDy) result[i] = dy.unsqueeze(-1).expand(plan->input_sizes[i]);
    }
    return result;
  }
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& key) const {
    size_t h = key.size();
    for (int64_t v : key) h ^= std::hash<int64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

constexpr size_t kMaxInputs = 4;
constexpr size_t kMaxPlans = 4096;

// What a call's tensors are, for the plan lookup: per tensor its dtype, device and sizes
bool signature(PyObject* const* args, size_t n, std::vector<int64_t>& key,
               const at::Tensor** tensors) {
  if (n == 0 || n > kMaxInputs) return false;
  key.push_back(static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    PyObject* obj = args[i];
    if (!THPVariable_CheckExact(obj)) return false;  // a subclass: the dispatcher's
    const at::Tensor& t = THPVariable_Unpack(obj);
    // sparse, nested, quantized, or a lazily negated or conjugated view: the Python path's
    if (t.layout() != c10::kStrided || t.is_nested() || t.is_quantized() || t.is_neg() ||
        t.is_conj())
      return false;
    tensors[i] = &t;
    key.push_back(static_cast<int64_t>(t.scalar_type()));
    key.push_back(t.is_cuda() ? t.get_device() : -1 - static_cast<int64_t>(t.device().type()));
    key.push_back(t.dim());
    for (int64_t s : t.sizes()) key.push_back(s);
  }
  return true;
}

// torch's current CUDA device and its current stream, through the functions torch's Python
// module offers (set_cuda): the native module has no CUDA headers
py::object* cuda_device = nullptr;  // torch._C._cuda_getDevice
py::object* cuda_stream = nullptr;  // torch._C._cuda_getCurrentRawStream

void current_stream(int64_t& device, uintptr_t& stream) {
  if (cuda_device == nullptr || cuda_stream == nullptr)
    throw std::runtime_error("tritonlab native: set_cuda was not called");
  PyObject* d = PyObject_CallNoArgs(cuda_device->ptr());
  if (d == nullptr) throw py::error_already_set();
  device = PyLong_AsLongLong(d);
  PyObject* s = PyObject_CallOneArg(cuda_stream->ptr(), d);
  Py_DECREF(d);
  if (s == nullptr) throw py::error_already_set();
  stream = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(s));
  Py_DECREF(s);
  if (PyErr_Occurred()) throw py::error_already_set();
}

struct OpTable {
  std::string op;  // the node's name
  std::unordered_map<std::vector<int64_t>, PlanPtr, KeyHash> plans;  // nullptr: refused
  py::object* create_graph = nullptr;
  py::object* grad_ok = nullptr;  // () -> bool, asked before a node is recorded
  py::object* knobs = nullptr;    // Triton's runtime knobs: a launch hook listening declines
  py::object miss;

  bool listening() const {
    if (knobs == nullptr || knobs->is_none()) return false;
    static PyObject* names[2] = {PyUnicode_InternFromString("launch_enter_hook"),
                                 PyUnicode_InternFromString("launch_exit_hook")};
    static PyObject* calls = PyUnicode_InternFromString("calls");
    for (PyObject* name : names) {
      py::object hook = py::reinterpret_steal<py::object>(PyObject_GetAttr(knobs->ptr(), name));
      if (!hook) throw py::error_already_set();
      if (hook.is_none()) continue;
      // Triton 3.6: a chain of hooks, listening where it holds one; else a hook itself
      py::object chain = py::reinterpret_steal<py::object>(PyObject_GetAttr(hook.ptr(), calls));
      if (!chain) {
        PyErr_Clear();
        return true;
      }
      int listens = PyObject_IsTrue(chain.ptr());
      if (listens < 0) throw py::error_already_set();
      if (listens) return true;
    }
    return false;
  }

  // The call's result; None where this call takes the Python path (a subclass, another
  // device, a refused signature, a non-contiguous or misaligned input, forward-mode AD, a
  // profiler listening, a gradient that cannot be recorded); `miss` for a signature without
  // a plan, or whose plan has no backward yet when a gradient is wanted.
  py::object call(PyObject* const* args, size_t n) {
    std::vector<int64_t> key;
    key.reserve(24);
    const at::Tensor* tensors[kMaxInputs];
    if (!signature(args, n, key, tensors)) return py::none();
    auto found = plans.find(key);
    if (found == plans.end()) return miss;
    PlanPtr plan = found->second;
    if (!plan) return py::none();
    int64_t device = -1;
    uintptr_t stream = 0;
    if (tensors[0]->is_cuda()) current_stream(device, stream);
    bool grad = false;
    for (size_t i = 0; i < n; ++i) {
      const at::Tensor& t = *tensors[i];
      if (!t.is_cuda() && !plan->forward.empty()) return py::none();
      if (t.is_cuda() && t.get_device() != device) return py::none();
      if (!t.is_contiguous() || !aligned(t) || torch::autograd::isFwGradDefined(t))
        return py::none();
      grad = grad || t.requires_grad();
    }
    grad = grad && at::GradMode::is_enabled();
    // a plan without a backward records a node that runs the Python backward (the table's
    // create_graph function) where the op has one; else the call misses
    if (grad && !plan->differentiable && (create_graph == nullptr || create_graph->is_none()))
      return miss;
    if (grad && grad_ok && !grad_ok->is_none() && !py::bool_((*grad_ok)())) return py::none();
    if (listening()) return py::none();
    std::vector<at::Tensor> held(plan->dy());
    std::vector<uintptr_t> slots(plan->slots(), 0);
    for (size_t i = 0; i < n; ++i) {
      held[i] = *tensors[i];
      slots[i] = address(held[i]);
    }
    {
      at::NoGradGuard no_grad;
      allocate(plan->allocs, plan->inputs, tensors[0]->options(), held, slots,
               plan->counters_alloc);
    }
    if (plan->counters_alloc < 0) {
      for (const Launch& launch : plan->forward)
        launch(slots, 0.f, stream, static_cast<int>(device));
    } else {  // held in `held` until the launches are issued (a fresh one while capturing)
      int j = plan->counters_alloc;
      held[plan->inputs + j] =
          plan->counters->get(0, plan->allocs[j].sizes[0], static_cast<int>(device), stream);
      slots[plan->inputs + j] = address(held[plan->inputs + j]);
      try {
        for (const Launch& launch : plan->forward)
          launch(slots, 0.f, stream, static_cast<int>(device));
      } catch (...) {  // programs that ran may have left counts behind
        plan->counters->drop(0, stream);
        throw;
      }
    }
    at::Tensor result = held[plan->result];
    if (grad) {
      NodePtr node = make_node<OpBackward>();
      auto* self = static_cast<OpBackward*>(node.get());
      self->plan = plan, self->op = op, self->create_graph = create_graph;
      self->stream = stream, self->device = static_cast<int>(device);
      std::vector<at::Tensor> inputs(held.begin(), held.begin() + n);
      node->set_next_edges(torch::autograd::collect_next_edges(inputs));
      torch::autograd::set_history(result, node);
      for (int s : plan->saved)  // an output is saved after its history is set
        self->saved.emplace_back(held[s], s == plan->result);
    }
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(result)));
  }

  void add(const py::args& args, PlanPtr plan) {
    std::vector<int64_t> key;
    const at::Tensor* tensors[kMaxInputs];
    std::vector<PyObject*> objects;
    for (const py::handle& h : args) objects.push_back(h.ptr());
    if (!signature(objects.data(), objects.size(), key, tensors))
      throw std::invalid_argument("OpTable.add: 1-4 plain tensors");
    if (plan && plan->inputs != static_cast<int>(objects.size()))
      throw std::invalid_argument("OpTable.add: the plan takes another number of inputs");
    if (plan && !tensors[0]->is_cuda() && (!plan->forward.empty() || !plan->backward.empty()))
      throw std::invalid_argument("OpTable.add: launches need CUDA tensors");
    if (plans.size() >= kMaxPlans) plans.clear();
    plans[key] = std::move(plan);
  }
};

std::vector<Alloc> allocs_of(const std::vector<std::pair<std::vector<int64_t>, at::ScalarType>>& a) {
  std::vector<Alloc> out;
  for (const auto& [sizes, dtype] : a) out.push_back(Alloc{sizes, dtype});
  return out;
}


// `call(table, *tensors)`: OpTable::call without pybind's argument handling (a few hundred
// nanoseconds of a call that costs a few microseconds in all)
PyObject* fast_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  try {
    if (nargs < 1) {
      PyErr_SetString(PyExc_TypeError, "call(table, *tensors)");
      return nullptr;
    }
    OpTable* table = py::cast<OpTable*>(py::handle(args[0]));
    return table->call(args + 1, static_cast<size_t>(nargs - 1)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const py::cast_error& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyMethodDef fast_call_def = {"call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fast_call)),
                             METH_FASTCALL, "call(table, *tensors): the op's result, None or MISS"};

}  // namespace

PYBIND11_MODULE(_tritonlab_native, m) {
  m.doc() = "tritonlab's native autograd nodes (kernels/_native.cpp)";
  py::class_<Launch>(m, "Launch")
      .def(py::init<std::string, uintptr_t, std::vector<unsigned>, unsigned, unsigned,
                    std::vector<int>, std::vector<int64_t>, bool>(),
           py::arg("kernel"), py::arg("function"), py::arg("grid"), py::arg("threads"),
           py::arg("shared"), py::arg("kinds"), py::arg("values"), py::arg("pdl") = false)
      .def("pack", &Launch::pack, py::arg("slots"), py::arg("scalar") = 0.f,
           "The parameter cells (8 bytes each, scratch pointers last) a launch would pass")
      .def_readonly("kernel", &Launch::kernel)
      .def_readonly("pdl", &Launch::pdl);
  py::class_<RMSNormPlan, std::shared_ptr<RMSNormPlan>>(m, "RMSNormPlan")
      .def(py::init([](Launch forward, std::vector<Launch> backward,
                       std::optional<Launch> dg_sum,
                       int64_t rows, std::vector<int64_t> partial_shape, bool coef,
                       bool fp64_stats, std::vector<int64_t> fwd_stats,
                       std::vector<int64_t> bwd_stats, std::vector<Launch> fused) {
             for (const auto* shape : {&fwd_stats, &bwd_stats})
               if (!shape->empty() &&
                   (shape->size() != 2 || (*shape)[0] != rows || (*shape)[1] < 1))
                 throw std::invalid_argument("RMSNormPlan: exchange statistics must be (rows, "
                                             "pieces)");
             if (fused.empty() ? backward.empty() || !dg_sum
                               : fused.size() != 1 || coef || !bwd_stats.empty() ||
                                     !backward.empty() || dg_sum)
               throw std::invalid_argument(
                   "RMSNormPlan: a backward and a dg sum, or a fused backward alone (in place "
                   "of the whole-row backward: no coefficients, no exchange)");
             return std::make_shared<RMSNormPlan>(RMSNormPlan{
                 std::move(forward), std::move(backward), std::move(dg_sum), rows,
                 std::move(partial_shape), coef, fp64_stats, std::move(fwd_stats),
                 std::move(bwd_stats), std::move(fused)});
           }),
           py::arg("forward"), py::arg("backward"), py::arg("dg_sum"), py::arg("rows"),
           py::arg("partial_shape"), py::arg("coef"), py::arg("fp64_stats"),
           py::arg("fwd_stats") = std::vector<int64_t>(),
           py::arg("bwd_stats") = std::vector<int64_t>(),
           py::arg("fused") = std::vector<Launch>());
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
        {"partial", PARTIAL}, {"coef", COEF}, {"dg", DG}, {"stats", STATS},
        {"counters", COUNTERS}};
  });
  m.attr("GRADS") = py::dict(py::arg("none") = int(kGradNone), py::arg("slot") = int(kGradSlot),
                             py::arg("dy") = int(kGradDy),
                             py::arg("expand_dy") = int(kGradExpandDy));
  py::class_<OpPlan, std::shared_ptr<OpPlan>>(m, "OpPlan")
      .def(py::init([](int inputs, std::vector<std::pair<std::vector<int64_t>, at::ScalarType>> allocs,
                       std::vector<Launch> forward, int result, bool differentiable,
                       std::vector<int> saved,
                       std::vector<std::pair<std::vector<int64_t>, at::ScalarType>> bwd_allocs,
                       std::vector<Launch> backward, std::vector<std::pair<int, int>> grads,
                       std::vector<std::vector<int64_t>> input_sizes,
                       std::vector<int> backward_for, int counters_alloc) {
             auto plan = std::make_shared<OpPlan>();
             plan->inputs = inputs, plan->allocs = allocs_of(allocs);
             plan->forward = std::move(forward), plan->result = result;
             plan->differentiable = differentiable, plan->saved = std::move(saved);
             plan->bwd_allocs = allocs_of(bwd_allocs), plan->backward = std::move(backward);
             plan->grads = std::move(grads), plan->input_sizes = std::move(input_sizes);
             plan->backward_for = std::move(backward_for);
             plan->counters_alloc = counters_alloc;
             if (counters_alloc < -1 || counters_alloc >= static_cast<int>(plan->allocs.size()) ||
                 (counters_alloc >= 0 &&
                  (plan->allocs[counters_alloc].dtype != at::kInt ||
                   plan->allocs[counters_alloc].sizes.size() != 1 ||
                   counters_alloc + inputs == result || plan->forward.empty())))
               throw std::invalid_argument("OpPlan: counters must be a 1-d int32 allocation, "
                                           "not the result, of a forward with launches");
             if (!plan->backward_for.empty() && plan->backward_for.size() != plan->backward.size())
               throw std::invalid_argument("OpPlan: backward_for names one input per backward launch");
             for (int i : plan->backward_for)
               if (i < -1 || i >= inputs) throw std::invalid_argument("OpPlan: backward_for out of range");
             int d = plan->dy(), total = plan->slots();
             if (inputs < 1 || inputs > static_cast<int>(kMaxInputs))
               throw std::invalid_argument("OpPlan: 1-4 inputs");
             if (result < inputs || result >= d)
               throw std::invalid_argument("OpPlan: the result must be an allocation");
             for (int s : plan->saved)
               if (s < 0 || s >= d) throw std::invalid_argument("OpPlan: saved slot out of range");
             if (differentiable) {
               if (static_cast<int>(plan->grads.size()) != inputs ||
                   static_cast<int>(plan->input_sizes.size()) != inputs)
                 throw std::invalid_argument("OpPlan: one gradient and one size per input");
               for (auto [kind, slot] : plan->grads)
                 if (kind < kGradNone || kind > kGradExpandDy ||
                     (kind == kGradSlot && (slot <= d || slot >= total)))
                   throw std::invalid_argument("OpPlan: a gradient slot must be a backward allocation");
             }
             auto in_range = [](const std::vector<Launch>& ls, int lo, int hi) {
               for (const Launch& l : ls)
                 for (size_t i = 0; i < l.kinds.size(); ++i)
                   if (l.kinds[i] == kSlot && (l.values[i] < lo || l.values[i] >= hi))
                     throw std::invalid_argument("OpPlan: launch " + l.kernel + " reads a slot out of range");
             };
             in_range(plan->forward, 0, d);
             in_range(plan->backward, 0, total);
             return plan;
           }),
           py::arg("inputs"), py::arg("allocs"), py::arg("forward"), py::arg("result"),
           py::arg("differentiable") = false, py::arg("saved") = std::vector<int>(),
           py::arg("bwd_allocs") = std::vector<std::pair<std::vector<int64_t>, at::ScalarType>>(),
           py::arg("backward") = std::vector<Launch>(),
           py::arg("grads") = std::vector<std::pair<int, int>>(),
           py::arg("input_sizes") = std::vector<std::vector<int64_t>>(),
           py::arg("backward_for") = std::vector<int>(), py::arg("counters_alloc") = -1);
  py::class_<OpTable, std::shared_ptr<OpTable>>(m, "OpTable")
      .def(py::init([](std::string op, py::object create_graph, py::object grad_ok,
                       py::object knobs, py::object miss) {
             auto t = std::make_shared<OpTable>();
             t->op = std::move(op);
             t->create_graph = new py::object(std::move(create_graph));  // kept forever
             t->grad_ok = new py::object(std::move(grad_ok));
             t->knobs = new py::object(std::move(knobs));
             t->miss = std::move(miss);
             return t;
           }),
           py::arg("op"), py::arg("create_graph"), py::arg("grad_ok"), py::arg("knobs"),
           py::arg("miss"))
      .def("add", [](OpTable& t, std::shared_ptr<OpPlan> plan, const py::args& args) {
             t.add(args, std::move(plan));
           }, py::arg("plan"))
      .def("__len__", [](const OpTable& t) { return t.plans.size(); })
      .def("clear", [](OpTable& t) { t.plans.clear(); });
  m.attr("call") = py::reinterpret_steal<py::object>(PyCFunction_New(&fast_call_def, nullptr));
  m.def("set_cuda", [](py::object device, py::object stream) {
    if (cuda_device == nullptr) cuda_device = new py::object(), cuda_stream = new py::object();
    *cuda_device = std::move(device), *cuda_stream = std::move(stream);
  }, py::arg("device"), py::arg("stream"),
     "torch's functions giving the current CUDA device and its current raw stream");
  m.attr("KINDS") = py::dict(py::arg("slot") = int(kSlot), py::arg("i32") = int(kI32),
                             py::arg("i64") = int(kI64), py::arg("f32") = int(kF32),
                             py::arg("scalar") = int(kScalar));
}
